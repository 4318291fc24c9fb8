// Subcommands of the servesim CLI. Each takes the arguments after its name and returns the exit
// code (0 ok, 2 bad input, 3 drift past a threshold). Errors are thrown; dispatch maps them to codes
// (cli/failure.hpp: 2 for bad input, 70 for a bug).
#pragma once
#include <string>
#include <vector>

namespace servesim::cli {

int cmd_run(const std::vector<std::string>& args);
int cmd_step(const std::vector<std::string>& args);
int cmd_list(const std::vector<std::string>& args);
int cmd_op(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_quant_table(const std::vector<std::string>& args);
int cmd_contention(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args);
int cmd_saturate(const std::vector<std::string>& args);
int cmd_plan(const std::vector<std::string>& args);
int cmd_roofline(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);  // exit 3 when drift crosses a threshold
int cmd_gen_trace(const std::vector<std::string>& args);
int cmd_merge(const std::vector<std::string>& args);  // joins the partial files of sweep/plan --shard

// Runs a subcommand by name with error handling (used by main and by tests).
int dispatch(const std::vector<std::string>& argv);

}  // namespace servesim::cli
