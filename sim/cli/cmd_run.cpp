// `servesim run SCENARIO.json [--out DIR] [--set key.path=value ...] [--seed N] [--load-profile P]
//  [--slo S] [--replications N] [--no-html] [--no-csv] [--no-trace] [--no-fast-forward] [--no-windows] [--sim-threads N] [--trace-requests N]
//  [--trace-seconds S] [--quiet]`
// Writes DIR/report.json, report.html, requests.csv and trace.json (see README "Outputs").
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "sim/analysis/summary.hpp"
#include "sim/analysis/work_estimate.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/progress.hpp"
#include "sim/core/error.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/requests_csv.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/io/trace_writer.hpp"
#include "sim/metrics/run_recorder.hpp"

namespace servesim::cli {

namespace {

// The outputs that observe the run as it goes: requests.csv and trace.json stream, the HTML
// charts sample. Each is null when its --no-* flag is given. The folder is locked for the run.
struct RunOutputs {
  std::unique_ptr<OutputDirLock> lock;
  std::unique_ptr<RequestsCsvWriter> csv;
  std::unique_ptr<TraceWriter> trace;
  std::unique_ptr<RunRecorder> recorder;
  ObserverList observers;
};

const IntegerFlag kTraceRequests{"trace-requests", "trace.json: follow at most N requests (the first to arrive)", {0, 1e8}, "1000"};
const NumberFlag kTraceSeconds{"trace-seconds", "trace.json: iterations, counters and requests of the first S simulated seconds",
                               {0, 1e9}, "60"};
const IntegerFlag kReplications{"replications",
                                "also run N-1 more seeds (on a trace: resamples of its requests) and report the spread of P95/P99 "
                                "(report.replications)",
                                {1, 1000}, "1"};
const IntegerFlag kSimThreads{"sim-threads", "threads that advance a fleet's replicas between router decisions (the same report at any count)",
                              {1, 256}, "1"};

TraceOptions trace_options_of(const cxxopts::ParseResult& parsed) {
  TraceOptions trace_options;
  trace_options.max_requests = static_cast<std::uint32_t>(kTraceRequests.read(parsed, "servesim run"));
  trace_options.window_s = kTraceSeconds.read(parsed, "servesim run");
  return trace_options;
}

// Creates and locks the output directory, and opens the outputs in it.
RunOutputs open_outputs(const cxxopts::ParseResult& parsed, const std::filesystem::path& out_dir, const Scenario& scenario,
                        const TraceOptions& trace_options) {
  RunOutputs o;
  o.lock = std::make_unique<OutputDirLock>(out_dir.string());
  if (!parsed.count("no-csv")) {
    o.csv = std::make_unique<RequestsCsvWriter>((out_dir / "requests.csv").string(),
                                                scenario.workload.arrival.kind == ArrivalConfig::Kind::stages);
  }
  if (!parsed.count("no-trace")) o.trace = std::make_unique<TraceWriter>((out_dir / "trace.json").string(), trace_options, scenario.name);
  if (!parsed.count("no-html")) o.recorder = std::make_unique<RunRecorder>(scenario.workload.num_requests);
  o.observers.add(o.csv.get());
  o.observers.add(o.trace.get());
  o.observers.add(o.recorder.get());
  return o;
}

// Writes report.json and report.html (with `html`) beside the streamed outputs, and renames the
// set into place only once every file is written, so a failure (a full disk) leaves the folder's
// previous set whole. An output this run does not write (--no-trace) is removed: the folder never
// holds one run's report beside another's trace.
void commit_outputs(const std::filesystem::path& out_dir, const nlohmann::json& report, RunOutputs& o,
                    const std::function<void(std::ostream&)>& html) {
  OutputFile report_file((out_dir / "report.json").string());
  report_file.write_json(report, 2);
  report_file.write("\n");
  std::optional<OutputFile> html_file;
  if (o.recorder) {
    std::ostringstream page;
    html(page);
    html_file.emplace((out_dir / "report.html").string());
    html_file->write(page.str());
  }
  report_file.close();
  if (o.csv) o.csv->close();
  if (o.trace) o.trace->close();
  if (html_file) html_file->close();
  report_file.commit();
  if (o.csv) o.csv->commit();
  if (o.trace) o.trace->commit();
  if (html_file) html_file->commit();
  const std::pair<const char*, bool> unwritten[] = {{"report.html", !html_file}, {"requests.csv", !o.csv}, {"trace.json", !o.trace}};
  for (const auto& [name, stale] : unwritten) {
    std::error_code ec;
    if (stale && std::filesystem::is_regular_file(out_dir / name, ec)) std::filesystem::remove(out_dir / name, ec);
  }
}

// A trace that gives the requests' lengths fixes everything a run draws from the seed: its
// replications after the first replay the trace's requests resampled (trace_bootstrap.hpp).
bool bootstraps_trace(const Scenario& s) {
  if (!s.workload.trace) return false;
  for (const RequestClass& c : s.workload.classes) {
    if (c.prompt_tokens.kind == LengthDist::Kind::trace || c.output_tokens.kind == LengthDist::Kind::trace) return true;
  }
  return false;
}

// One figure over the runs. Seeds: mean and the Student t interval of that mean. Bootstrap (runs
// 1..N-1 resample the trace): the trace's own run's figure with its bootstrap standard error, the
// resamples' standard deviation, as a normal 95% interval; it does not shrink with more
// replications (they estimate the error, not average it away).
nlohmann::json replicated_figure(const std::vector<double>& xs, bool bootstrap) {
  const Interval iv = bootstrap ? interval(std::vector<double>(xs.begin() + 1, xs.end())) : interval(xs);
  const double centre = bootstrap ? xs.front() : iv.mean, half = bootstrap ? 1.96 * iv.stddev : iv.ci95_half;
  nlohmann::json f = {{"mean", iv.mean}, {"stddev", iv.stddev}, {"ci95_half_width", half}, {"ci95_low", centre - half},
                      {"ci95_high", centre + half}, {"min", iv.min}, {"max", iv.max}};
  if (bootstrap) f["run"] = xs.front();
  return f;
}

// report.replications: the seeds and, per replicated metric, mean, spread and 95% interval.
nlohmann::json replications_json(const Scenario& scenario, const SimResult& result, const std::vector<Scenario>& more,
                                 const std::vector<Metrics>& more_metrics) {
  std::vector<Metrics> metrics{summarize_run(scenario, result)};
  metrics.insert(metrics.end(), more_metrics.begin(), more_metrics.end());
  const bool bootstrap = bootstraps_trace(scenario);
  nlohmann::json rep = {{"count", metrics.size()}, {"seeds", nlohmann::json::array({scenario.seed})}, {"metrics", nlohmann::json::object()},
                        {"method", bootstrap ? "bootstrap over the trace's requests" : "seeds"}};
  for (const auto& s : more) rep["seeds"].push_back(s.seed);
  // Every figure of every seed equal: nothing the run simulates drew from the seed (a trace's or
  // constant arrivals and fixed lengths), so each interval is 0 by construction, not because the estimate
  // is exact.
  bool identical = true;
  for (const auto& m : metrics) identical = identical && m == metrics.front();
  rep["identical_runs"] = identical;
  for (const auto& name : replicated_metrics()) {
    std::vector<double> xs;
    for (const auto& m : metrics) xs.push_back(metric(m, name));
    rep["metrics"][name] = replicated_figure(xs, bootstrap);
  }
  return rep;
}

// The lines under the summary for --replications.
void print_replications(const nlohmann::json& rep, int reps) {
  const bool bootstrap = rep["method"] != "seeds";
  for (const char* name : {"latency.ttft_s.p99", "latency.tpot_s.p99", "latency.e2e_s.p99"}) {
    const auto& m = rep["metrics"][name];
    if (bootstrap) {
      std::printf("  %-19s %.4f s, bootstrap 95%% CI +/- %.4f s (%d resamples of the trace's requests)\n", name, m["run"].get<double>(),
                  m["ci95_half_width"].get<double>(), reps - 1);
    } else {
      std::printf("  %-19s %d seeds: mean %.4f s, 95%% CI +/- %.4f s\n", name, reps, m["mean"].get<double>(), m["ci95_half_width"].get<double>());
    }
  }
  if (bootstrap) {
    std::printf("  bootstrap  runs 2..%d replay the trace's requests drawn with replacement at the trace's own arrival times; the "
                "interval is the figure's spread over such request mixes, not over arrival patterns\n", reps);
  } else if (rep["identical_runs"].get<bool>()) {
    std::printf("  seeds      the %d seeds gave identical runs: nothing this scenario simulates is drawn from the seed (constant "
                "arrivals and fixed lengths), so each interval is 0; it is the spread across seeds, not a measured precision\n", reps);
  }
}

void print_run(const nlohmann::json& report, double wall_s, int reps, const std::filesystem::path& out_dir, const RunOutputs& o) {
  print_summary(std::cout, report, wall_s);
  if (reps > 1) print_replications(report["replications"], reps);
  std::cout << "  report     " << (out_dir / "report.json").string() << "\n";
  if (o.recorder) std::cout << "  html       " << (out_dir / "report.html").string() << "\n";
  if (o.csv) std::cout << "  requests   " << (out_dir / "requests.csv").string() << " (" << o.csv->rows() << " rows)\n";
  if (o.trace) std::cout << "  trace      " << (out_dir / "trace.json").string() << " (" << o.trace->events() << " events)\n";
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim run", "Simulate a serving scenario and write DIR/report.json, report.html, requests.csv, trace.json");
  opts.add_options()("scenario", "scenario JSON file", cxxopts::value<std::string>())(
      "o,out", "output directory", cxxopts::value<std::string>()->default_value("out"))(
      "no-html", "do not write report.html")("no-csv", "do not write requests.csv")(
      "no-trace", "do not write trace.json")(
      "no-fast-forward", "one event-queue round trip per iteration (slower; the same report: the reference the fast-forward is tested against)")(
      "no-windows", "one event queue for every replica of a fleet (no time windows: the loop the windows are compared with)")(
      "no-work-limit", kNoWorkLimitHelp)(
      "q,quiet", "print nothing on success, no progress bar")("h,help", "show help");
  for (const auto* f : {&kTraceRequests, &kReplications, &kSimThreads}) f->add(opts);
  kTraceSeconds.add(opts);
  add_scenario_flags(opts);
  opts.parse_positional({"scenario"});
  opts.positional_help("SCENARIO.json");
  const auto parsed = parse_args(opts, args);
  if (parsed.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!parsed.count("scenario")) throw InputError("servesim run", "", "missing SCENARIO.json (see --help)");
  const std::string path = parsed["scenario"].as<std::string>();
  const ScenarioSource src = scenario_source(parsed, path);
  const int reps = static_cast<int>(kReplications.read(parsed, "servesim run"));
  const TraceOptions trace_options = trace_options_of(parsed);
  const bool quiet = parsed.count("quiet") > 0;

  const Scenario scenario = src.load();
  // Before the other replications are built: each costs time and memory of its own.
  if (!parsed.count("no-work-limit")) {
    check_work(scenario, static_cast<std::size_t>(reps), WorkBudget{}, path, "workload.num_requests (or duration_s) or --replications",
               "--no-work-limit");
  }
  // Replications 1..N-1: independent seeds spread over cores (TBB) without outputs; the report,
  // CSV, trace and HTML are seed 0's, run below with the observers.
  std::vector<Scenario> more;
  if (reps == 2 && bootstraps_trace(scenario)) {
    throw InputError("servesim run", "--replications",
                     "2 on a trace: the runs after the first resample the trace's requests, and one resample gives no spread; give 3 or more");
  }
  for (int i = 1; i < reps; ++i) {
    more.push_back(src.load({}, static_cast<long long>(replication_seed(scenario.seed, i))));
    if (more.back().workload.trace) more.back().workload.trace->bootstrap = bootstraps_trace(scenario);
  }
  const std::vector<Metrics> more_metrics = run_all(more, true);

  const std::filesystem::path out_dir = parsed["out"].as<std::string>();
  RunOutputs outputs = open_outputs(parsed, out_dir, scenario, trace_options);

  ProgressBar bar(!quiet);
  SimHooks hooks;
  hooks.fast_forward = parsed.count("no-fast-forward") == 0;
  hooks.windows = parsed.count("no-windows") == 0;
  hooks.sim_threads = static_cast<int>(kSimThreads.read(parsed, "servesim run"));
  if (!outputs.observers.empty()) hooks.observer = &outputs.observers;
  if (bar.enabled()) {
    hooks.progress = [&bar](const Progress& p) {
      const double frac = p.expected > 0 ? static_cast<double>(p.finished) / static_cast<double>(p.expected) : 0.0;
      bar.update(frac, std::to_string(p.finished) + "/" + std::to_string(p.expected) + " requests, " +
                           std::to_string(static_cast<long long>(p.simulated_s)) + " s simulated");
    };
  }
  const SimResult result = simulate(scenario, hooks);
  bar.finish();
  if (const std::string why = empty_run_reason(scenario, result); !why.empty()) throw InputError(path, "workload", why);
  nlohmann::json report = make_report(scenario, result);
  if (reps > 1) report["replications"] = replications_json(scenario, result, more, more_metrics);

  commit_outputs(out_dir, report, outputs, [&](std::ostream& out) {
    write_run_html(out, scenario, result, report, *outputs.recorder, slo_lines(scenario));
  });
  if (!quiet) print_run(report, result.wall_s, reps, out_dir, outputs);
  return kExitOk;
}

}  // namespace servesim::cli
