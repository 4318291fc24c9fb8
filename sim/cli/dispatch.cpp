// Subcommand dispatch and the mapping from errors to exit codes (cli/failure.hpp): bad input
// prints one line and exits 2; anything unexpected is reported as a bug and exits 70.
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/cli/failure.hpp"
#include "sim/core/error.hpp"
#include "sim/dist/job_split.hpp"
#include "sim/io/output_file.hpp"

namespace servesim::cli {

namespace {
void usage(std::ostream& os) {
  os << "usage: servesim <command> [options]\n"
        "  run SCENARIO.json [--out DIR] [--set key.path=value ...] [--seed N] [--quiet]\n"
        "      [--no-html] [--no-csv] [--no-trace] [--trace-requests N] [--trace-seconds S]\n"
        "      [--load-profile P] [--slo S] [--replications N]\n"
        "  sweep SCENARIO.json --grid key=v1,v2 [--grid ...] [--replications N] [--json] [--csv F] [--md F]\n"
        "  saturate SCENARIO.json --slo ttft=..,tpot=..,e2e=..,p=.. [--replications R] [--json]\n"
        "  plan --model M --rate R --slo ... [--hw all] [--quant bf16,fp16] [--tp 1] [--prices FILE] [--json]\n"
        "      sweep, plan and saturate: [--mpi] under mpirun; sweep and plan: [--shard K/N [--partial F]]\n"
        "  merge PARTIAL.json...   (joins the --shard files into the whole run's output)\n"
        "  roofline --model M --hw H --batch B --context C [--phase decode|prefill] [--json]\n"
        "  compare BASE.json NEW.json [--threshold X] [--threshold metric=X ...] [--json]   (exit 3 on drift)\n"
        "  gen-trace SCENARIO.json --format azure|burstgpt|splitwise|jsonl --out FILE\n"
        "  step --model M --hw H --batch B --context C [--phase decode|prefill] [--prompt S] [--json]\n"
        "  step ... [--quant bf16|fp16|fp8|int8|w8a16|w4a16-gptq|w4a16-awq|nvfp4|mxfp4] [--engine NAME] [--tp N] [--pp N]\n"
        "  op gemm --m M --n N --k K --dtype bf16|fp16|fp8|int8|w8a16|w4a16[-gptq|-awq] --hw H [--json]\n"
        "  calibrate fit RAW.json --name NAME -o hwprofiles/NAME.json [--base PROFILE]\n"
        "  calibrate vidur DIR --name NAME -o hwprofiles/NAME.json [--base PROFILE] [--holdout-model M] [--attention CSV]\n"
        "  calibrate rewrite PROFILE -o hwprofiles/NAME.json\n"
        "  calibrate engine RESULT.json... -o PROFILE.json [--base ENGINE] [--scenario S] [--set k=v]\n"
        "  validate [--suite kernels|steps|independent|public] [--data FILES] [--rows] [--json]   (exit 3 past a bound)\n"
        "  validate --against RESULT.json [--scenario S] [--set k=v] [--json]   (vllm bench serve, inference-perf, GenAI-Perf)\n"
        "  quant-table --model M --hw H [--context C] [--engine NAME] [--json]\n"
        "  contention --model M --hw H [--batch B] [--context C] [--max-instances N] [--engine NAME] [--json]\n"
        "  list models|hardware|policies|engines|routers|cost-models|metrics|keys\n"
        "  version\n";
}
// The command's exit code; throws what the command throws.
int run_command(const std::vector<std::string>& argv) {
  const std::string cmd = argv[0];
  const std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (cmd == "run") return cmd_run(rest);
  if (cmd == "step") return cmd_step(rest);
  if (cmd == "list") return cmd_list(rest);
  if (cmd == "op") return cmd_op(rest);
  if (cmd == "calibrate") return cmd_calibrate(rest);
  if (cmd == "validate") return cmd_validate(rest);
  if (cmd == "quant-table") return cmd_quant_table(rest);
  if (cmd == "contention") return cmd_contention(rest);
  if (cmd == "sweep") return cmd_sweep(rest);
  if (cmd == "saturate") return cmd_saturate(rest);
  if (cmd == "plan") return cmd_plan(rest);
  if (cmd == "roofline") return cmd_roofline(rest);
  if (cmd == "compare") return cmd_compare(rest);
  if (cmd == "gen-trace") return cmd_gen_trace(rest);
  if (cmd == "merge") return cmd_merge(rest);
  if (cmd == "version" || cmd == "--version") {
    std::cout << "servesim " << SERVESIM_VERSION << "\n";
    return kExitOk;
  }
  std::cerr << "servesim: unknown command '" << cmd << "'\n";
  usage(std::cerr);
  return kExitBadInput;
}

}  // namespace

int dispatch(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "-h" || argv[0] == "--help" || argv[0] == "help") {
    usage(argv.empty() ? std::cerr : std::cout);
    return argv.empty() ? kExitBadInput : kExitOk;
  }
  remember_command(argv);
  install_crash_handlers();
  try {
    const int code = run_command(argv);
    // A command whose output was lost (stdout to a full disk or a closed pipe) has failed.
    check_stdout();
    return code;
  } catch (const PartialWritten& w) {  // a shard of sweep or plan stops once its file is written
    std::cerr << "servesim: " << w.message << "\n";
    return kExitOk;
  } catch (...) {
    return report_failure(std::cerr);
  }
}

}  // namespace servesim::cli
