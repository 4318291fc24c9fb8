// `servesim calibrate fit RAW.json --name NAME -o hwprofiles/NAME.json [--base PROFILE]`:
// turns calibrate/run_all.sh results into a measured hardware profile.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/calib/fit.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim::cli {

int cmd_calibrate(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "fit") throw InputError("servesim calibrate", "", "expected: calibrate fit RAW.json --name NAME -o OUT.json");
  cxxopts::Options opts("servesim calibrate fit", "Fit a measured hardware profile from calibrator results");
  opts.add_options()("raw", "raw.json from calibrate/run_all.sh", cxxopts::value<std::string>())(
      "name", "profile name", cxxopts::value<std::string>())("o,out", "output profile path", cxxopts::value<std::string>())(
      "base", "profile with datasheet peaks and interconnect (default: the bundled profile NAME)", cxxopts::value<std::string>())(
      "holdout-every", "hold out every Nth GEMM point per shape to report the fit error (0 = none)",
      cxxopts::value<int>()->default_value("3"))("h,help", "show help");
  opts.parse_positional({"raw"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  for (const char* key : {"raw", "name", "out"}) {
    if (!p.count(key)) throw InputError("servesim calibrate fit", std::string("--") + key, "required");
  }
  FitOptions fit;
  fit.name = p["name"].as<std::string>();
  fit.holdout_every = p["holdout-every"].as<int>();
  if (fit.holdout_every < 0) throw InputError("servesim calibrate fit", "--holdout-every", "must be >= 0");
  fit.command = "servesim calibrate fit";
  for (std::size_t i = 1; i < args.size(); ++i) fit.command += " " + args[i];

  const std::string raw_path = p["raw"].as<std::string>();
  const std::string base_path = resolve_data_ref("hwprofiles", p.count("base") ? p["base"].as<std::string>() : fit.name,
                                                 "servesim calibrate fit", "--base");
  const FitSummary s = fit_profile(load_json_file(raw_path), raw_path, load_json_file(base_path), base_path, fit);
  const std::string out = p["out"].as<std::string>();
  std::ofstream f(out);
  if (!f) throw InputError(out, "", "cannot write");
  f << s.profile.dump(2) << "\n";
  std::printf("wrote %s: GEMM held-out points %d, median |error| %.1f%%, worst %.1f%%\n", out.c_str(),
              s.gemm_holdout_points, 100 * s.gemm_holdout_median_abs_err, 100 * s.gemm_holdout_worst_abs_err);
  return kExitOk;
}

}  // namespace servesim::cli
