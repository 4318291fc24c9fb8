// `servesim validate [CASES.json] [--json]`: predicted vs published for every public case.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "sim/analysis/public_cases.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim::cli {

int cmd_validate(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim validate", "Predict published measurements and print the error of each");
  opts.add_options()("cases", "cases file (default: the bundled data/validation/public_cases.json)",
                     cxxopts::value<std::string>())("json", "print JSON")("h,help", "show help");
  opts.parse_positional({"cases"});
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  std::string file = data_dir() + "/data/validation/public_cases.json";
  if (p.count("cases")) file = p["cases"].as<std::string>();
  const auto results = run_public_cases(load_json_file(file), file);
  if (p.count("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json row = {{"id", r.id}, {"model", r.model}, {"hw", r.hw}, {"metric", r.metric}, {"note", r.note}, {"skipped", r.skipped}};
      if (!r.skipped) {
        row["published"] = r.published;
        row["predicted"] = r.predicted;
        row["error_frac"] = r.error();
      }
      out.push_back(row);
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%-6s %-12s %-15s %-22s %10s %10s %8s  %s\n", "case", "model", "hw", "metric", "published", "predicted", "error", "note");
  for (const auto& r : results) {
    if (r.skipped) {
      std::printf("%-6s %-12s %-15s %-22s %10s %10s %8s  skipped: %s\n", r.id.c_str(), r.model.c_str(), r.hw.c_str(),
                  r.metric.c_str(), "", "", "", r.note.c_str());
    } else {
      std::printf("%-6s %-12s %-15s %-22s %10.4g %10.4g %+7.1f%%  %s\n", r.id.c_str(), r.model.c_str(), r.hw.c_str(),
                  r.metric.c_str(), r.published, r.predicted, 100 * r.error(), r.note.c_str());
    }
  }
  return kExitOk;
}

}  // namespace servesim::cli
