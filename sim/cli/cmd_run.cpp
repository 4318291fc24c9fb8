// `servesim run SCENARIO.json [--out DIR] [--set key.path=value ...] [--seed N] [--no-html]
//  [--no-csv] [--no-trace] [--trace-requests N] [--trace-seconds S] [--quiet]`
// Writes DIR/report.json, report.html, requests.csv and trace.json (see README "Outputs").
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/progress.hpp"
#include "sim/core/error.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/requests_csv.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/io/trace_writer.hpp"
#include "sim/metrics/run_recorder.hpp"

namespace servesim::cli {

namespace {

// Writes `path` through a temporary and a rename, so an interrupted run never leaves half a file.
template <typename Fn>
void write_atomically(const std::filesystem::path& path, Fn&& fill) {
  const auto tmp_path = std::filesystem::path(path.string() + ".tmp");
  {
    std::ofstream out(tmp_path);
    if (!out) throw InputError(tmp_path.string(), "", "cannot write");
    fill(out);
    if (!out) throw InputError(tmp_path.string(), "", "write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp_path, path, ec);
  if (ec) throw InputError(path.string(), "", "cannot write: " + ec.message());
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim run", "Simulate a serving scenario and write DIR/report.json, report.html, requests.csv, trace.json");
  opts.add_options()("scenario", "scenario JSON file", cxxopts::value<std::string>())(
      "o,out", "output directory", cxxopts::value<std::string>()->default_value("out"))(
      "set", "override a scenario key: key.path=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "seed", "override the scenario seed", cxxopts::value<long long>())(
      "no-html", "do not write report.html")("no-csv", "do not write requests.csv")(
      "no-trace", "do not write trace.json")(
      "trace-requests", "trace.json: follow at most N requests (the first to arrive)",
      cxxopts::value<long long>()->default_value("1000"))(
      "trace-seconds", "trace.json: iterations, counters and requests of the first S simulated seconds",
      cxxopts::value<double>()->default_value("60"))(
      "q,quiet", "print nothing on success, no progress bar")("h,help", "show help");
  opts.parse_positional({"scenario"});
  opts.positional_help("SCENARIO.json");
  const auto parsed = parse_args(opts, args);
  if (parsed.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!parsed.count("scenario")) throw InputError("servesim run", "", "missing SCENARIO.json (see --help)");
  const std::string path = parsed["scenario"].as<std::string>();
  std::vector<std::string> overrides;
  if (parsed.count("set")) overrides = parsed["set"].as<std::vector<std::string>>();
  if (parsed.count("seed")) {
    const long long seed = parsed["seed"].as<long long>();
    if (seed < 0) throw InputError("--seed", "", "must be >= 0");
    overrides.push_back("seed=" + std::to_string(seed));
  }
  TraceOptions trace_options;
  const long long trace_requests = parsed["trace-requests"].as<long long>();
  if (trace_requests < 0 || trace_requests > 100'000'000) throw InputError("--trace-requests", "", "must be in [0, 1e8]");
  trace_options.max_requests = static_cast<std::uint32_t>(trace_requests);
  trace_options.window_s = parsed["trace-seconds"].as<double>();
  if (!(trace_options.window_s >= 0.0) || trace_options.window_s > 1e9) throw InputError("--trace-seconds", "", "must be in [0, 1e9]");
  const bool quiet = parsed.count("quiet") > 0;

  const Scenario scenario = load_scenario(path, overrides);

  const std::filesystem::path out_dir = parsed["out"].as<std::string>();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw InputError(out_dir.string(), "", "cannot create output directory: " + ec.message());

  // Observers: each output that streams (CSV, trace) or samples (HTML charts) while the run goes.
  ObserverList observers;
  std::unique_ptr<RequestsCsvWriter> csv;
  std::unique_ptr<TraceWriter> trace;
  std::unique_ptr<RunRecorder> recorder;
  if (!parsed.count("no-csv")) csv = std::make_unique<RequestsCsvWriter>((out_dir / "requests.csv").string());
  if (!parsed.count("no-trace")) trace = std::make_unique<TraceWriter>((out_dir / "trace.json").string(), trace_options, scenario.name);
  if (!parsed.count("no-html")) recorder = std::make_unique<RunRecorder>(scenario.workload.num_requests);
  observers.add(csv.get());
  observers.add(trace.get());
  observers.add(recorder.get());

  ProgressBar bar(!quiet);
  SimHooks hooks;
  if (!observers.empty()) hooks.observer = &observers;
  if (bar.enabled()) {
    hooks.progress = [&bar](const Progress& p) {
      const double frac = p.expected > 0 ? static_cast<double>(p.finished) / static_cast<double>(p.expected) : 0.0;
      bar.update(frac, std::to_string(p.finished) + "/" + std::to_string(p.expected) + " requests, " +
                           std::to_string(static_cast<long long>(p.simulated_s)) + " s simulated");
    };
  }
  const SimResult result = simulate(scenario, hooks);
  bar.finish();
  const nlohmann::json report = make_report(scenario, result);

  const auto report_path = out_dir / "report.json";
  write_atomically(report_path, [&](std::ostream& out) { out << report.dump(2) << "\n"; });
  if (csv) csv->commit();
  if (trace) trace->commit();
  if (recorder) {
    write_atomically(out_dir / "report.html", [&](std::ostream& out) { write_run_html(out, scenario, result, report, *recorder); });
  }
  if (!quiet) {
    print_summary(std::cout, report);
    std::cout << "  report     " << report_path.string() << "\n";
    if (recorder) std::cout << "  html       " << (out_dir / "report.html").string() << "\n";
    if (csv) std::cout << "  requests   " << (out_dir / "requests.csv").string() << " (" << csv->rows() << " rows)\n";
    if (trace) std::cout << "  trace      " << (out_dir / "trace.json").string() << " (" << trace->events() << " events)\n";
  }
  return kExitOk;
}

}  // namespace servesim::cli
