// `servesim run SCENARIO.json [--out DIR] [--set key.path=value ...] [--seed N] [--load-profile P]
//  [--slo S] [--replications N]`
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/analysis/summary.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/scenario_io.hpp"

namespace servesim::cli {

int cmd_run(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim run", "Simulate a serving scenario and write DIR/report.json");
  opts.add_options()("scenario", "scenario JSON file", cxxopts::value<std::string>())(
      "o,out", "output directory", cxxopts::value<std::string>()->default_value("out"))(
      "replications", "also run N-1 more seeds and report the spread of P95/P99 (report.replications)",
      cxxopts::value<int>()->default_value("1"))(
      "q,quiet", "print nothing on success")("h,help", "show help");
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
  const int reps = parsed["replications"].as<int>();
  if (reps < 1 || reps > 1000) throw InputError("--replications", "", "must be in [1, 1000]");
  std::vector<Scenario> scenarios{src.load()};
  for (int i = 1; i < reps; ++i) scenarios.push_back(src.load({}, static_cast<long long>(replication_seed(scenarios[0].seed, i))));
  // Seeds are independent simulations: spread over cores; the report is the first seed's.
  std::vector<SimResult> results;
  const std::vector<Metrics> metrics = run_all(scenarios, true, &results);
  nlohmann::json report = make_report(scenarios[0], results[0]);
  if (reps > 1) {
    nlohmann::json rep = {{"count", reps}, {"seeds", nlohmann::json::array()}, {"metrics", nlohmann::json::object()}};
    for (const auto& s : scenarios) rep["seeds"].push_back(s.seed);
    for (const auto& name : replicated_metrics()) {
      std::vector<double> xs;
      for (const auto& m : metrics) xs.push_back(metric(m, name));
      const Interval iv = interval(xs);
      rep["metrics"][name] = {{"mean", iv.mean}, {"stddev", iv.stddev}, {"ci95_half_width", iv.ci95_half},
                              {"ci95_low", iv.mean - iv.ci95_half}, {"ci95_high", iv.mean + iv.ci95_half},
                              {"min", iv.min}, {"max", iv.max}};
    }
    report["replications"] = rep;
  }

  const std::filesystem::path out_dir = parsed["out"].as<std::string>();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw InputError(out_dir.string(), "", "cannot create output directory: " + ec.message());
  const auto report_path = out_dir / "report.json";
  // Write to a temporary then rename, so an interrupted run never leaves a half report.
  const auto tmp_path = out_dir / "report.json.tmp";
  {
    std::ofstream out(tmp_path);
    if (!out) throw InputError(tmp_path.string(), "", "cannot write");
    out << report.dump(2) << "\n";
    if (!out) throw InputError(tmp_path.string(), "", "write failed");
  }
  std::filesystem::rename(tmp_path, report_path, ec);
  if (ec) throw InputError(report_path.string(), "", "cannot write: " + ec.message());
  if (!parsed.count("quiet")) {
    print_summary(std::cout, report);
    if (reps > 1) {
      for (const char* name : {"latency.ttft_s.p99", "latency.tpot_s.p99", "latency.e2e_s.p99"}) {
        const auto& m = report["replications"]["metrics"][name];
        std::printf("  %-19s %d seeds: mean %.4f s, 95%% CI +/- %.4f s\n", name, reps, m["mean"].get<double>(),
                    m["ci95_half_width"].get<double>());
      }
    }
    std::cout << "  report     " << report_path.string() << "\n";
  }
  return kExitOk;
}

}  // namespace servesim::cli
