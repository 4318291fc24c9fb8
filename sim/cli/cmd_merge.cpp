// `servesim merge PARTIAL.json...`: joins the partial files of `sweep`/`plan --shard K/N` into the
// output the command writes when it runs whole: it runs the command again with the arguments the
// shards recorded (it reads the same scenario files), taking every simulation's result from the
// files instead of simulating.
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/cli/distribute.hpp"
#include "sim/core/error.hpp"

namespace servesim::cli {

int cmd_merge(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim merge", "Join the partial files of `sweep` or `plan --shard K/N` into the whole run's output");
  opts.add_options()("files", "the partial files, one per shard", cxxopts::value<std::vector<std::string>>())("h,help", "show help");
  opts.parse_positional({"files"});
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n"
              << "Run it where the shards ran: the command runs again with the arguments they recorded (reading the same\n"
                 "scenario files) and takes each simulation's result from the files.\n";
    return kExitOk;
  }
  const MergedResults merged = read_partials(p.count("files") ? p["files"].as<std::vector<std::string>>() : std::vector<std::string>{});
  if (merged.command != "sweep" && merged.command != "plan") {
    throw InputError(merged.first_file, "command", "'" + merged.command + "' cannot be merged (sweep or plan)");
  }
  const MergeScope scope(merged);
  const RecordedArgsScope recorded(merged.first_file, merged.command, merged.args);  // flag errors name the partial file
  return merged.command == "sweep" ? cmd_sweep(merged.args) : cmd_plan(merged.args);
}

}  // namespace servesim::cli
