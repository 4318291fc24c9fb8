// `servesim run SCENARIO.json [--out DIR] [--set key.path=value ...] [--seed N]`
#include <filesystem>
#include <fstream>
#include <iostream>

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
      "set", "override a scenario key: key.path=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "seed", "override the scenario seed", cxxopts::value<long long>())(
      "q,quiet", "print nothing on success")("h,help", "show help");
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
  const Scenario scenario = load_scenario(path, overrides);
  const SimResult result = simulate(scenario);
  const nlohmann::json report = make_report(scenario, result);

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
    std::cout << "  report     " << report_path.string() << "\n";
  }
  return kExitOk;
}

}  // namespace servesim::cli
