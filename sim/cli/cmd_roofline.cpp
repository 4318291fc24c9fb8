// `servesim roofline --model M --hw H --batch B --context C [--phase decode|prefill] [--prompt S]
//  [--dtype bf16] [--json] [--csv FILE] [--md FILE]`: per op roofline against the cost model.
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/analysis/roofline.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/table_io.hpp"

namespace servesim::cli {

int cmd_roofline(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim roofline", "Per-op roofline of one iteration and the gap to the predicted time");
  opts.add_options()("model", "model name or path", cxxopts::value<std::string>())("hw", "hardware profile name or path",
                                                                                   cxxopts::value<std::string>())(
      "batch", "sequences in the batch", cxxopts::value<long long>()->default_value("1"))(
      "context", "tokens in each sequence's KV cache", cxxopts::value<long long>()->default_value("0"))(
      "phase", "decode or prefill", cxxopts::value<std::string>()->default_value("decode"))(
      "prompt", "prefill: new tokens per sequence", cxxopts::value<long long>())(
      "dtype", "bf16 or fp16", cxxopts::value<std::string>()->default_value("bf16"))(
      "eager", "launch kernels one by one (no CUDA graph)")("h,help", "show help");
  add_output_flags(opts);
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("model")) throw InputError("servesim roofline", "--model", "required");
  if (!p.count("hw")) throw InputError("servesim roofline", "--hw", "required");
  const ModelSpec model = load_model(resolve_data_ref("models", p["model"].as<std::string>(), "servesim roofline", "--model"));
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), "servesim roofline", "--hw"));
  const auto dtype = parse_dtype(p["dtype"].as<std::string>());
  if (!dtype || (*dtype != Dtype::bf16 && *dtype != Dtype::fp16)) throw InputError("servesim roofline", "--dtype", "must be bf16 or fp16");
  if (!hw.supports(*dtype)) throw InputError("servesim roofline", "--dtype", std::string(dtype_name(*dtype)) + " not supported by " + hw.name);
  const long long batch = p["batch"].as<long long>();
  const long long context = p["context"].as<long long>();
  if (batch <= 0) throw InputError("servesim roofline", "--batch", "must be > 0");
  if (context < 0) throw InputError("servesim roofline", "--context", "must be >= 0");
  const std::string phase = p["phase"].as<std::string>();
  BatchShape shape;
  long long per_seq = context;
  if (phase == "decode") {
    for (long long i = 0; i < batch; ++i) shape.add_decode(context);
    per_seq += 1;
  } else if (phase == "prefill") {
    if (!p.count("prompt")) throw InputError("servesim roofline", "--prompt", "required for --phase prefill");
    const long long prompt = p["prompt"].as<long long>();
    if (prompt <= 0) throw InputError("servesim roofline", "--prompt", "must be > 0");
    for (long long i = 0; i < batch; ++i) shape.add_prefill(prompt, context, true);
    per_seq += prompt;
  } else {
    throw InputError("servesim roofline", "--phase", "must be decode or prefill, got '" + phase + "'");
  }
  if (per_seq > model.max_context_tokens) {
    throw InputError("servesim roofline", "--context", "context + new tokens (" + std::to_string(per_seq) + ") exceed " + model.name +
                                                           "'s max context " + std::to_string(model.max_context_tokens));
  }
  const Precision precision{*dtype, *dtype, *dtype};
  std::vector<Op> ops;
  build_iteration_ops(model, shape, precision, ops);
  LaunchConfig launch;  // the scenario defaults: CUDA graphs for decode, host overheads
  launch.cuda_graphs = phase == "decode" && !p.count("eager");
  launch.host_overhead_per_step_s = 4e-4;
  launch.host_overhead_per_seq_s = 5e-6;
  const RooflineResult r = roofline(ops, hw, *dtype, launch, batch);

  Table t;
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    const RooflineOp& o = r.ops[i];
    t.set(i, "name", o.name);
    t.set(i, "count", o.count);
    t.set(i, "flops", o.flops);
    t.set(i, "bytes", o.bytes);
    t.set(i, "arithmetic_intensity", o.arithmetic_intensity);
    t.set(i, "bound", o.bound);
    t.set(i, "achieved_bound", o.achieved_bound);
    t.set(i, "roofline_time_s", o.roofline_time_s);
    t.set(i, "predicted_time_s", o.predicted_time_s);
    t.set(i, "peak_frac", o.peak_frac);
    t.set(i, "gap_launch_s", o.gap_launch_s);
    t.set(i, "gap_small_shape_s", o.gap_small_shape_s);
    t.set(i, "gap_bandwidth_s", o.gap_bandwidth_s);
  }
  const std::string head = model.name + " on " + hw.name + ", " + phase + ", batch " + std::to_string(batch) + ", context " + std::to_string(context);
  if (p.count("json")) {
    nlohmann::json j = {{"model", model.name}, {"hw", hw.name}, {"phase", phase}, {"batch", batch}, {"context", context},
                        {"dtype", dtype_name(*dtype)}, {"ridge_point_flops_per_byte", r.ridge_point_flops_per_byte},
                        {"step_time_s", r.step_time_s}, {"gpu_s", r.gpu_s}, {"roofline_s", r.roofline_s}, {"host_s", r.host_s},
                        {"launch_s", r.launch_s}, {"launch_wait_s", r.launch_wait_s}, {"attention_share_frac", r.attention_share_frac},
                        {"ops", table_to_json(t)}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("%s: ridge point %.1f FLOP/byte; step %.4f ms = host %.4f + max(GPU %.4f, launch %.4f); roofline %.4f ms (%.0f%% of GPU time)\n",
                head.c_str(), r.ridge_point_flops_per_byte, r.step_time_s * 1e3, r.host_s * 1e3, r.gpu_s * 1e3, r.launch_s * 1e3,
                r.roofline_s * 1e3, r.gpu_s > 0 ? 100.0 * r.roofline_s / r.gpu_s : 0.0);
    write_text(std::cout, t);
  }
  write_csv_if_asked(p, t);
  if (p.count("md")) {
    std::ostringstream os;
    char line[512];
    std::snprintf(line, sizeof line,
                  "# roofline: %s\n\n`servesim roofline %s`\n\nRidge point %.1f FLOP/byte. Step %.4f ms = host %.4f ms + max(GPU %.4f ms, "
                  "launch %.4f ms); sum of per-op roofline floors %.4f ms; attention %.1f%% of GPU time.\n\n",
                  head.c_str(), join_args(args).c_str(), r.ridge_point_flops_per_byte, r.step_time_s * 1e3, r.host_s * 1e3,
                  r.gpu_s * 1e3, r.launch_s * 1e3, r.roofline_s * 1e3, 100.0 * r.attention_share_frac);
    os << line;
    write_markdown(os, t);
    write_file(p["md"].as<std::string>(), os.str());
  }
  return kExitOk;
}

}  // namespace servesim::cli
