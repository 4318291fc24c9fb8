// `servesim op gemm --m M --n N --k K --dtype bf16|fp16|fp8|int8|w8a16|w4a16[-gptq|-awq]|w4a8|w4afp8 --hw H [--kernel K] [--json]`: one kernel
// timed by the cost model, for scripts that compare against their own measurements.
#include <cstdio>
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/query_options.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"

namespace servesim::cli {

namespace {
// GEMM sizes: M up to 2^24 tokens, N and K up to 2^20 (a model's widest layer), so 2MNK stays exact.
const IntegerFlag kM{"m", "rows of A (tokens)", {1, 16777216}, ""};
const IntegerFlag kN{"n", "columns of W", {1, 1048576}, ""};
const IntegerFlag kK{"k", "inner dimension", {1, 1048576}, ""};
const IntegerFlag& group_size_flag() {  // on first use: the key registry is not read during static initialisation
  static const IntegerFlag f{"group-size", "w4a16 group size", find_scenario_key("quantization.group_size")->range, "128"};
  return f;
}
}  // namespace

int cmd_op(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "gemm") throw InputError("servesim op", "", "expected: op gemm --m M --n N --k K --dtype D --hw H");
  cxxopts::Options opts("servesim op gemm", "Time one GEMM C[m,n] = A[m,k] W[k,n] with the cost model");
  for (const IntegerFlag* f : {&kM, &kN, &kK, &group_size_flag()}) f->add(opts);
  opts.add_options()("dtype", "bf16, fp16, fp8, int8 (w8a8), w8a16, w4a16 (= w4a16-gptq), w4a16-awq, w4a8, w4afp8",
                     cxxopts::value<std::string>()->default_value("bf16"))(
      "hw", "hardware profile name or path", cxxopts::value<std::string>())(
      "kernel", "the engine's kernel for a quantized dtype (engine profiles' quant_kernels names: cutlass_scaled_mm, marlin, tinygemm, ...)",
      cxxopts::value<std::string>()->default_value("auto"))("json", "print JSON")("h,help", "show help");
  // cxxopts treats one-letter names as short options (-m); the CLI contract spells them --m.
  std::vector<std::string> rest;
  for (auto it = args.begin() + 1; it != args.end(); ++it) {
    const bool one_letter = it->size() >= 3 && it->rfind("--", 0) == 0 && (it->size() == 3 || (*it)[3] == '=');
    if (!one_letter) {
      rest.push_back(*it);
      continue;
    }
    rest.push_back(it->substr(1, 2));
    if (it->size() > 3) rest.push_back(it->substr(4));
  }
  const auto p = parse_args(opts, rest);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  for (const char* key : {"m", "n", "k", "hw"}) {
    if (!p.count(key)) throw InputError("servesim op gemm", std::string("--") + key, "required");
  }
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), "servesim op gemm", "--hw"));
  const std::string dtype_text = p["dtype"].as<std::string>();
  const std::string cmd = "servesim op gemm";
  const long long m = kM.read(p, cmd), n = kN.read(p, cmd), k = kK.read(p, cmd);
  const std::string kernel_text = p["kernel"].as<std::string>();
  const auto kernel = parse_quant_kernel(kernel_text);
  if (!kernel) throw InputError(cmd, "--kernel", "unknown kernel '" + kernel_text + "'");
  const GemmQuery g = time_gemm(hw, dtype_text, m, n, k, group_size_flag().read(p, cmd), cmd, *kernel);
  const Op& op = g.op;
  const KernelTime& t = g.time;
  if (p.count("json")) {
    nlohmann::json out = {{"time_s", t.time_s}, {"flops", op.flops}, {"bytes", t.bytes}, {"bound", bound_name(t.bound)},
                          {"roofline_time_s", t.roofline_s}, {"hw", hw.name}, {"dtype", dtype_text},
                          {"kernel", gemm_kernel_name(t.gemm)}, {"launches", t.launches}, {"emulated", g.emulated},
                          {"m", m}, {"n", n}, {"k", k}};
    if (op.quant_kernel != QuantKernel::auto_) out["quant_kernel"] = quant_kernel_name(op.quant_kernel);
    std::cout << out.dump(2) << "\n";
  } else {
    const std::string kernel_note = op.quant_kernel == QuantKernel::auto_ ? "" : std::string(" (") + quant_kernel_name(op.quant_kernel) + ")";
    std::printf("gemm %lldx%lldx%lld %s%s on %s: %.3f us (%.1f TFLOP/s, %s-bound, roofline %.3f us)%s\n", m, n, k,
                dtype_text.c_str(), kernel_note.c_str(), hw.name.c_str(), t.time_s * 1e6, op.flops / t.time_s / 1e12, bound_name(t.bound),
                t.roofline_s * 1e6,
                g.emulated ? ("\n  emulated: " + hw.name + " has no " + dtype_text +
                              " units, so the weights are converted to bf16 and a bf16 GEMM runs (as run and plan do)").c_str()
                           : "");
  }
  return kExitOk;
}

}  // namespace servesim::cli
