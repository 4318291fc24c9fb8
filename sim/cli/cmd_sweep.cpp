// `servesim sweep SCENARIO.json --grid key=v1,v2 [--grid ...] [--replications N] [--metrics a,b]
//  [--serial] [--json] [--csv FILE] [--md FILE] [--html FILE] [--load-csv FILE] [--mpi | --shard K/N]`:
// every combination of the grid, one row each.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <variant>
#include <sstream>

#include "sim/analysis/sweep.hpp"
#include "sim/analysis/work_estimate.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/distribute.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/plan_prices.hpp"
#include "sim/cli/progress.hpp"
#include "sim/core/error.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/output_file.hpp"

namespace servesim::cli {

namespace {
const IntegerFlag kReplications{"replications", "seeds per combination (adds mean and 95% CI of P95/P99)", {1, 1000}, "1"};
}  // namespace

namespace {
// --html: latency against the arrival rate, so the grid must be the rate alone.
constexpr const char* kRateKey = "workload.arrival.rate_per_s";
const std::vector<std::string> kLoadPaths = {"latency.ttft_s.p50", "latency.ttft_s.p99", "latency.tpot_s.p50", "latency.tpot_s.p99",
                                             "latency.e2e_s.p50",  "latency.e2e_s.p99",  "throughput.requests_per_s",
                                             "throughput.output_tokens_per_s", "slo.met"};

void check_load_grid(const std::vector<GridAxis>& grid, const std::string& flag) {
  if (grid.size() != 1 || grid.front().key != kRateKey) {
    throw InputError("servesim sweep", flag, std::string(flag == "--html" ? "draws" : "writes") +
                                                 " latency against the arrival rate: give one --grid " + kRateKey + "=r1,r2,...");
  }
}

// The metrics a sweep with --html shows: the ones asked (or the defaults) and those the page draws.
void add_load_metrics(std::vector<std::string>& metrics) {
  if (metrics.empty()) metrics = sweep_default_metrics();
  for (const std::string& m : kLoadPaths) {
    if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  }
}

double number_cell(const Table& t, const std::vector<Cell>& row, const std::string& column) {
  const auto at = static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), column) - t.columns.begin());
  if (at >= row.size()) return 0.0;
  if (const double* d = std::get_if<double>(&row[at])) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&row[at])) return static_cast<double>(*i);
  if (const std::string* s = std::get_if<std::string>(&row[at])) return std::stod(*s);
  return 0.0;
}

// One load level per row (the base seed's run): the rate, the percentiles, the throughput and
// whether the run met the SLO: the page's points and --load-csv's rows.
LoadCurve rate_curve(const Table& t, const Scenario& base) {
  LoadCurve curve;
  curve.config = load_config(base);
  const auto met_at = static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), "slo.met") - t.columns.begin());
  for (const auto& row : t.rows) {
    LoadPoint p;
    p.load = number_cell(t, row, kRateKey);
    p.ttft_p50_s = number_cell(t, row, "latency.ttft_s.p50"), p.ttft_p99_s = number_cell(t, row, "latency.ttft_s.p99");
    p.tpot_p50_s = number_cell(t, row, "latency.tpot_s.p50"), p.tpot_p99_s = number_cell(t, row, "latency.tpot_s.p99");
    p.e2e_p50_s = number_cell(t, row, "latency.e2e_s.p50"), p.e2e_p99_s = number_cell(t, row, "latency.e2e_s.p99");
    p.requests_per_s = number_cell(t, row, "throughput.requests_per_s");
    p.output_tokens_per_s = number_cell(t, row, "throughput.output_tokens_per_s");
    if (met_at < row.size() && std::holds_alternative<bool>(row[met_at])) p.meets_slo = std::get<bool>(row[met_at]);
    curve.points.push_back(p);
  }
  curve.usd_per_hour = listed_usd_per_hour(base);
  return curve;
}

// --html: the curve's levels, the scenario's SLO targets as lines.
void write_load_page(const std::string& path, const LoadCurve& curve, const Scenario& base, const std::string& args) {
  LoadPage page;
  page.title = "sweep: " + base.model.name + " on " + base.hw.name;
  page.facts = {{"command", "servesim sweep " + args}, {"scenario", base.file}};
  page.points = curve.points;
  page.slos = slo_lines(base);
  std::ostringstream os;
  write_load_html(os, page);
  write_file(path, os.str());
}

// Under the table: rows whose replications gave identical figures, whose interval of 0 says the
// scenario draws nothing from the seed (a trace fixes arrivals and lengths), not that the
// estimate is exact (the same word as run --replications' summary line).
void note_identical_replications(const Table& t, int replications) {
  const auto col = std::find(t.columns.begin(), t.columns.end(), "identical_replications");
  if (col == t.columns.end()) return;
  const auto at = static_cast<std::size_t>(col - t.columns.begin());
  std::size_t identical = 0;
  for (const auto& row : t.rows) {
    if (at < row.size() && std::holds_alternative<bool>(row[at]) && std::get<bool>(row[at])) ++identical;
  }
  if (identical == 0) return;
  std::printf("identical_replications: in %zu of %zu rows the %d seeds gave identical runs: nothing in the scenario is drawn "
              "from the seed (a trace fixes arrivals and lengths), so their ci95 of 0 is not a measured precision\n",
              identical, t.rows.size(), replications);
}
}  // namespace

int cmd_sweep(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim sweep", "Run every combination of --grid values; one row each");
  opts.add_options()("scenario", "scenario JSON file", cxxopts::value<std::string>())(
      "grid", "key.path=v1,v2,... (repeatable; every combination runs)", cxxopts::value<std::vector<std::string>>())(
      "metrics", "comma-separated report metrics for the columns (default: a summary)", cxxopts::value<std::string>())(
      "serial", "run on one thread (same output)")(
      "html", "also write a page of TTFT, TPOT and E2E p50/p99 and throughput against the rate (the grid must be "
              "workload.arrival.rate_per_s alone; adds the columns it draws) to this file", cxxopts::value<std::string>())(
      "no-work-limit", kNoWorkLimitHelp)(
      "h,help", "show help");
  kReplications.add(opts);
  add_scenario_flags(opts);
  add_output_flags(opts);
  add_load_csv_flag(opts);
  add_distribution_flags(opts, true);
  opts.parse_positional({"scenario"});
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("scenario")) throw InputError("servesim sweep", "", "missing SCENARIO.json (see --help)");
  const ScenarioSource src = scenario_source(p, p["scenario"].as<std::string>());
  const Distribution dist = distribution(p, "sweep", args);
  std::vector<GridAxis> grid;
  if (p.count("grid")) {
    for (const auto& g : p["grid"].as<std::vector<std::string>>()) grid.push_back(parse_grid(g));
  }
  SweepOptions o;
  o.replications = static_cast<int>(kReplications.read(p, "servesim sweep"));
  o.parallel = !p.count("serial");
  o.split = dist.split.get();
  for (const char* flag : {"html", "load-csv"}) {
    if (p.count(flag)) check_load_grid(grid, std::string("--") + flag);
  }
  if (p.count("metrics")) {
    std::string m = p["metrics"].as<std::string>();
    std::size_t start = 0;
    while (start <= m.size()) {
      const auto c = m.find(',', start);
      o.metrics.push_back(m.substr(start, c == std::string::npos ? std::string::npos : c - start));
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  if (p.count("html") || p.count("load-csv")) add_load_metrics(o.metrics);
  // The limits guard what one process runs: with --mpi or --shard, the busiest process's share
  // (the same decision on every MPI rank), then each process's own scenarios (a refusal reaches
  // every rank through the exchange); a merge runs nothing.
  if (!p.count("no-work-limit")) {
    // Estimated from the scenario as written before the combinations are built (50,000 of them
    // take minutes to build), then again from each combination's own scenario.
    std::size_t simulations = static_cast<std::size_t>(o.replications);
    for (const auto& a : grid) simulations *= a.values.size();
    if (dist.split) simulations = dist.split->busiest_share(simulations);
    const std::string levers = "workload.num_requests (or duration_s), the --grid values or --replications";
    check_work(src.load(), simulations, WorkBudget{}, src.path, levers, "--no-work-limit");
    o.before_runs = [&src, levers](const std::vector<Scenario>& runs) { check_work(runs, 1, WorkBudget{}, src.path, levers, "--no-work-limit"); };
  }
  ProgressBar bar(true);
  o.progress = [&bar](std::size_t done, std::size_t total) {
    bar.update(static_cast<double>(done) / static_cast<double>(total), std::to_string(done) + "/" + std::to_string(total) + " runs");
  };
  const Table t = run_sweep([&](const std::vector<std::string>& ov, long long seed) { return src.load(ov, seed); }, grid, o);
  bar.finish();
  if (!dist.writes_output()) return kExitOk;
  emit_table(p, t, "# sweep\n\n`servesim sweep " + join_args(dist.args) + "`");
  if (!p.count("json")) note_identical_replications(t, o.replications);
  if (!p.count("html") && !p.count("load-csv")) return kExitOk;
  const Scenario base = src.load();
  const LoadCurve curve = rate_curve(t, base);
  write_load_csv_if_asked(p, {curve});
  if (p.count("html")) write_load_page(p["html"].as<std::string>(), curve, base, join_args(dist.args));
  return kExitOk;
}

}  // namespace servesim::cli
