// `servesim step --model M --hw H --batch B --context C [--phase decode|prefill] [--prompt S]
//  [--dtype bf16] [--tp N] [--pp N] [--micro-batches M] [--json]`: one iteration's ops and time
//  from the cost model, on one replica of tp x pp GPUs (the simulator's own model, sim/serve/parallel.hpp).
#include <cstdio>
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/serve/parallel.hpp"

namespace servesim::cli {

int cmd_step(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim step", "Time one iteration (decode or prefill) with the cost model");
  opts.add_options()("model", "model name or path (model card or HF config.json)", cxxopts::value<std::string>())(
      "hw", "hardware profile name or path", cxxopts::value<std::string>())(
      "batch", "sequences in the batch", cxxopts::value<long long>()->default_value("1"))(
      "context", "tokens already in each sequence's KV cache", cxxopts::value<long long>()->default_value("0"))(
      "phase", "decode or prefill", cxxopts::value<std::string>()->default_value("decode"))(
      "prompt", "prefill: new prompt tokens per sequence", cxxopts::value<long long>())(
      "dtype", "bf16 or fp16", cxxopts::value<std::string>()->default_value("bf16"))(
      "tp", "tensor-parallel GPUs", cxxopts::value<long long>()->default_value("1"))(
      "pp", "pipeline-parallel stages", cxxopts::value<long long>()->default_value("1"))(
      "micro-batches", "pipeline micro-batches (default: pp)", cxxopts::value<long long>()->default_value("0"))(
      "eager", "launch kernels one by one (no CUDA graph)")("json", "print JSON")("h,help", "show help");
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("model")) throw InputError("servesim step", "--model", "required");
  if (!p.count("hw")) throw InputError("servesim step", "--hw", "required");
  const ModelSpec model = load_model(resolve_data_ref("models", p["model"].as<std::string>(), "servesim step", "--model"));
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), "servesim step", "--hw"));
  const auto dtype = parse_dtype(p["dtype"].as<std::string>());
  if (!dtype || (*dtype != Dtype::bf16 && *dtype != Dtype::fp16)) throw InputError("servesim step", "--dtype", "must be bf16 or fp16");
  if (!hw.supports(*dtype)) throw InputError("servesim step", "--dtype", std::string(dtype_name(*dtype)) + " not supported by " + hw.name);
  const long long batch = p["batch"].as<long long>();
  const long long context = p["context"].as<long long>();
  if (batch <= 0) throw InputError("servesim step", "--batch", "must be > 0");
  if (context < 0) throw InputError("servesim step", "--context", "must be >= 0");
  const std::string phase = p["phase"].as<std::string>();
  ParallelConfig par;
  par.tensor_parallel_size = p["tp"].as<long long>();
  par.pipeline_parallel_size = p["pp"].as<long long>();
  par.num_micro_batches = p["micro-batches"].as<long long>();
  if (par.tensor_parallel_size <= 0 || par.tensor_parallel_size > 4096) throw InputError("servesim step", "--tp", "must be in [1, 4096]");
  if (par.pipeline_parallel_size <= 0 || par.pipeline_parallel_size > 4096) throw InputError("servesim step", "--pp", "must be in [1, 4096]");
  if (par.num_micro_batches < 0 || par.num_micro_batches > 4096) throw InputError("servesim step", "--micro-batches", "must be in [0, 4096]");
  if (const std::string why = parallel_config_error(model, par.tensor_parallel_size, par.pipeline_parallel_size); !why.empty()) {
    throw InputError("servesim step", why.rfind("pipeline", 0) == 0 ? "--pp" : "--tp", why);
  }

  BatchShape shape;
  long long per_seq_tokens = context;
  if (phase == "decode") {
    for (long long i = 0; i < batch; ++i) shape.add_decode(context);
    per_seq_tokens += 1;
  } else if (phase == "prefill") {
    if (!p.count("prompt")) throw InputError("servesim step", "--prompt", "required for --phase prefill");
    const long long prompt = p["prompt"].as<long long>();
    if (prompt <= 0) throw InputError("servesim step", "--prompt", "must be > 0");
    for (long long i = 0; i < batch; ++i) shape.add_prefill(prompt, context, true);
    per_seq_tokens += prompt;
  } else {
    throw InputError("servesim step", "--phase", "must be decode or prefill, got '" + phase + "'");
  }
  if (per_seq_tokens > model.max_context_tokens) {
    throw InputError("servesim step", "--context", "context + new tokens (" + std::to_string(per_seq_tokens) +
                                                       ") exceed the model's max context " + std::to_string(model.max_context_tokens));
  }

  const Precision precision{*dtype, *dtype, *dtype};
  std::vector<Op> ops;
  LaunchConfig launch;
  launch.cuda_graphs = phase == "decode" && !p.count("eager");
  const StepTime step = estimate_iteration(model, hw, precision, par, shape, launch, 0, ops);

  nlohmann::json out;
  out["model"] = model.name;
  out["hw"] = hw.name;
  out["phase"] = phase;
  out["batch"] = batch;
  out["context"] = context;
  out["dtype"] = dtype_name(*dtype);
  out["tensor_parallel_size"] = par.tensor_parallel_size;
  out["pipeline_parallel_size"] = par.pipeline_parallel_size;
  out["comm_s"] = step.comm_s;
  out["pipeline_bubble_frac"] = step.bubble_frac;
  out["time_s"] = step.time_s;
  out["gpu_s"] = step.gpu_s;
  out["launch_s"] = step.launch_s;
  out["roofline_s"] = step.roofline_s;
  out["kernels"] = step.kernels;
  out["launch_bound"] = step.launch_bound;
  out["ops"] = nlohmann::json::array();
  for (const Op& op : ops) {
    const KernelTime k = estimate(op, hw, *dtype);
    const double n = static_cast<double>(op.count);
    out["ops"].push_back({{"name", op.name},
                          {"kind", op_kind_name(op.kind)},
                          {"count", op.count},
                          {"flops", n * op.flops},
                          {"bytes", n * op.bytes},
                          {"time_s", n * k.time_s},
                          {"roofline_time_s", n * k.roofline_s},
                          {"bound", bound_name(k.bound)}});
  }
  if (p.count("json")) {
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%s on %s, %s, batch %lld, context %lld: %.4f ms (GPU %.4f ms, roofline %.4f ms, %lld kernels%s)\n",
              model.name.c_str(), hw.name.c_str(), phase.c_str(), batch, context, step.time_s * 1e3, step.gpu_s * 1e3,
              step.roofline_s * 1e3, static_cast<long long>(step.kernels), step.launch_bound ? ", launch-bound" : "");
  if (par.gpus_per_replica() > 1) {
    std::printf("  tp %lld x pp %lld: communication %.4f ms, pipeline bubbles %.1f%%; ops below are one GPU's%s\n",
                static_cast<long long>(par.tensor_parallel_size), static_cast<long long>(par.pipeline_parallel_size),
                step.comm_s * 1e3, 100.0 * step.bubble_frac, par.pipeline_parallel_size > 1 ? " (one stage, one micro-batch)" : "");
  }
  std::printf("  %-20s %6s %12s %12s %10s %10s  %s\n", "op", "count", "GFLOP", "MB", "time ms", "roofl. ms", "bound");
  for (const auto& op : out["ops"]) {
    std::printf("  %-20s %6lld %12.3f %12.3f %10.4f %10.4f  %s\n", op["name"].get<std::string>().c_str(),
                op["count"].get<long long>(), op["flops"].get<double>() / 1e9, op["bytes"].get<double>() / 1e6,
                op["time_s"].get<double>() * 1e3, op["roofline_time_s"].get<double>() * 1e3,
                op["bound"].get<std::string>().c_str());
  }
  return kExitOk;
}

}  // namespace servesim::cli
