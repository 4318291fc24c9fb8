// `servesim step --model M --hw H --batch B --context C [--phase decode|prefill] [--prompt S]
//  [--dtype bf16] [--quant Q] [--engine NAME] [--tp N] [--pp N] [--micro-batches M] [--json]`: one
//  iteration's ops and time on one replica of tp x pp GPUs (the simulator's own model,
//  sim/serve/parallel.hpp).
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/query_options.hpp"
#include "sim/core/error.hpp"

namespace servesim::cli {

int cmd_step(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim step", "Time one iteration (decode or prefill) with the cost model");
  add_query_options(opts);
  opts.add_options()("batch", "sequences in the batch", cxxopts::value<long long>()->default_value("1"))(
      "context", "tokens already in each sequence's KV cache", cxxopts::value<long long>()->default_value("0"))(
      "phase", "decode or prefill", cxxopts::value<std::string>()->default_value("decode"))(
      "prompt", "prefill: new prompt tokens per sequence", cxxopts::value<long long>())(
      "eager", "launch kernels one by one (no CUDA graph)")("json", "print JSON")("h,help", "show help");
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  const StepQuery q = load_query(p, "servesim step");
  const long long batch = p["batch"].as<long long>();
  const long long context = p["context"].as<long long>();
  if (batch <= 0) throw InputError("servesim step", "--batch", "must be > 0");
  if (context < 0) throw InputError("servesim step", "--context", "must be >= 0");
  const std::string phase = p["phase"].as<std::string>();

  long long per_seq_tokens = context;
  TimedStep t;
  if (phase == "decode") {
    per_seq_tokens += 1;
  } else if (phase == "prefill") {
    if (!p.count("prompt")) throw InputError("servesim step", "--prompt", "required for --phase prefill");
    const long long prompt = p["prompt"].as<long long>();
    if (prompt <= 0) throw InputError("servesim step", "--prompt", "must be > 0");
    per_seq_tokens += prompt;
  } else {
    throw InputError("servesim step", "--phase", "must be decode or prefill, got '" + phase + "'");
  }
  if (per_seq_tokens > q.model.max_context_tokens) {
    throw InputError("servesim step", "--context", "context + new tokens (" + std::to_string(per_seq_tokens) +
                                                       ") exceed the model's max context " + std::to_string(q.model.max_context_tokens));
  }
  t = phase == "decode" ? time_decode(q, batch, context, p.count("eager") > 0)
                        : time_prefill(q, batch, p["prompt"].as<long long>(), context);
  const StepTime& step = t.step;
  const long long sampled = batch;

  nlohmann::json out;
  out["model"] = q.model.name;
  out["hw"] = q.hw.name;
  out["phase"] = phase;
  out["batch"] = batch;
  out["context"] = context;
  out["dtype"] = dtype_name(q.precision.weights);
  out["tensor_parallel_size"] = q.parallel.tensor_parallel_size;
  out["pipeline_parallel_size"] = q.parallel.pipeline_parallel_size;
  out["comm_s"] = step.comm_s;
  out["pipeline_bubble_frac"] = step.bubble_frac;
  out["quantization"] = {{"method", quant_name(q.precision.quant)},
                         {"group_size", q.precision.group_size},
                         {"kv_cache_dtype", dtype_name(q.precision.kv_cache)},
                         {"emulated", q.emulated},
                         {"weight_bytes", q.model.weight_bytes(q.precision.weights, q.precision.quant, q.precision.group_size)}};
  out["engine"] = q.engine ? q.engine->name : "none";
  out["cuda_graphs"] = t.cuda_graphs;
  out["padded_batch"] = t.padded_batch;
  out["max_batch_at_context"] = max_batch(q, per_seq_tokens);
  out["time_s"] = step.time_s;
  out["gpu_s"] = step.gpu_s;
  out["launch_s"] = step.launch_s;
  out["launch_wait_s"] = step.launch_wait_s;
  out["host_s"] = step.host_s;
  out["roofline_s"] = step.roofline_s;
  out["kernels"] = step.kernels;
  out["kernels_per_token"] = static_cast<double>(step.kernels) / static_cast<double>(sampled);
  out["launch_bound"] = step.launch_bound;
  out["launch_time_frac"] = step.launch_wait_s / step.time_s;
  out["hbm_bw_util_frac"] = step.bytes / (step.time_s * q.hw.hbm_bandwidth_bytes_per_s);
  out["ops"] = nlohmann::json::array();
  for (const Op& op : t.ops) {
    const KernelTime k = estimate(op, q.hw, q.precision.weights);
    const double n = static_cast<double>(op.count);
    nlohmann::json j = {{"name", op.name},
                        {"kind", op_kind_name(op.kind)},
                        {"count", op.count},
                        {"flops", n * op.flops},
                        {"bytes", n * k.bytes},
                        {"time_s", n * k.time_s},
                        {"roofline_time_s", n * k.roofline_s},
                        {"bound", bound_name(k.bound)}};
    if (op.kind == OpKind::gemm || op.kind == OpKind::grouped_gemm) j["gemm_kernel"] = gemm_kernel_name(k.gemm);
    out["ops"].push_back(j);
  }
  if (p.count("json")) {
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%s on %s, %s, batch %lld, context %lld, %s%s, engine %s: %.4f ms (GPU %.4f ms, roofline %.4f ms, %lld kernels, "
              "%.1f per token%s, launch wait %.1f%%)\n",
              q.model.name.c_str(), q.hw.name.c_str(), phase.c_str(), batch, context, quant_name(q.precision.quant),
              q.emulated ? " (emulated)" : "", q.engine ? q.engine->name.c_str() : "none", step.time_s * 1e3,
              step.gpu_s * 1e3, step.roofline_s * 1e3, static_cast<long long>(step.kernels),
              out["kernels_per_token"].get<double>(), step.launch_bound ? ", launch-bound" : "",
              100.0 * out["launch_time_frac"].get<double>());
  const ParallelConfig& par = q.parallel;
  if (par.gpus_per_replica() > 1) {
    std::printf("  tp %lld x pp %lld: communication %.4f ms, pipeline bubbles %.1f%%; ops below are one GPU's%s\n",
                static_cast<long long>(par.tensor_parallel_size), static_cast<long long>(par.pipeline_parallel_size),
                step.comm_s * 1e3, 100.0 * step.bubble_frac, par.pipeline_parallel_size > 1 ? " (one stage, one micro-batch)" : "");
  }
  std::printf("  %-20s %6s %12s %12s %10s %10s  %s\n", "op", "count", "GFLOP", "MB", "time ms", "roofl. ms", "bound");
  for (const auto& op : out["ops"]) {
    std::printf("  %-20s %6lld %12.3f %12.3f %10.4f %10.4f  %s%s%s\n", op["name"].get<std::string>().c_str(),
                op["count"].get<long long>(), op["flops"].get<double>() / 1e9, op["bytes"].get<double>() / 1e6,
                op["time_s"].get<double>() * 1e3, op["roofline_time_s"].get<double>() * 1e3,
                op["bound"].get<std::string>().c_str(), op.contains("gemm_kernel") ? " " : "",
                op.contains("gemm_kernel") ? op["gemm_kernel"].get<std::string>().c_str() : "");
  }
  return kExitOk;
}

}  // namespace servesim::cli
