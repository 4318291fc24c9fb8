// `servesim sweep SCENARIO.json --grid key=v1,v2 [--grid ...] [--replications N] [--metrics a,b]
//  [--serial] [--json] [--csv FILE] [--md FILE] [--mpi | --shard K/N]`: every combination of the grid,
// one row each.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "sim/analysis/sweep.hpp"
#include "sim/analysis/work_estimate.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/distribute.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/progress.hpp"
#include "sim/core/error.hpp"

namespace servesim::cli {

namespace {
const IntegerFlag kReplications{"replications", "seeds per combination (adds mean and 95% CI of P95/P99)", {1, 1000}, "1"};
}  // namespace

namespace {
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
      "no-work-limit", kNoWorkLimitHelp)(
      "h,help", "show help");
  kReplications.add(opts);
  add_scenario_flags(opts);
  add_output_flags(opts);
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
  return kExitOk;
}

}  // namespace servesim::cli
