// `servesim step --model M --hw H --batch B --context C [--phase decode|prefill] [--prompt S]
//  [--dtype bf16] [--quant Q] [--engine NAME] [--tp N] [--pp N] [--micro-batches M] [--json]`: one
//  iteration's ops and time on one replica of tp x pp GPUs (the simulator's own model,
//  sim/serve/parallel.hpp), timed as `run` times it: without --engine, CUDA graphs for decode and
//  the scenario's default host overheads. `roofline` times the same step.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/query_options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/hw_io.hpp"

namespace servesim::cli {

namespace {

// Each op of the step, as many times as it runs: FLOPs, bytes, time, roofline time, bound.
nlohmann::json ops_json(const StepQuery& q, const std::vector<Op>& ops) {
  nlohmann::json out = nlohmann::json::array();
  for (const Op& op : ops) {
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
    // The engine's own kernel for a quantized GEMM, where its profile names one (quant_kernels).
    if (op.quant_kernel != QuantKernel::auto_) j["gemm_kernel"] = j["gemm_kernel"].get<std::string>() + " (" + quant_kernel_name(op.quant_kernel) + ")";
    out.push_back(j);
  }
  return out;
}

// Decode attention whose chunked layers run one program per query head (the engine's
// kernels_per_layer.chunked_attention_decode_per_query_head on this GPU's architecture): the layers,
// and whether the profile measured that kernel (calibration.attention_decode_per_query_head) or
// they are priced as the grouped kernel. Null where no op has such layers.
nlohmann::json per_query_head_json(const StepQuery& q, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    if (op.kind != OpKind::attention_decode || op.attn_pqh_group <= 0 || op.attn_seqs <= 0) continue;
    const double units = static_cast<double>(op.attn_seqs * std::max<std::int64_t>(1, op.attn_kv_heads));
    const double r = q.hw.decode_per_query_head.ratio(op.attn_kv_dtype, op.attn_pqh_group, units, op.attn_pqh_context);
    return {{"layers", chunked_attention_layers(q.model)},
            {"of_layers", q.model.num_layers},
            {"group", op.attn_pqh_group},
            {"kv_cache_dtype", dtype_name(op.attn_kv_dtype)},
            {"kv_share", op.attn_pqh_share},
            {"measured", r > 0.0},
            {"time_over_grouped", r},
            {"op_time_over_grouped", r > 0.0 ? 1.0 + op.attn_pqh_share * (r - 1.0) : 1.0}};
  }
  return nullptr;
}

// The step as --json prints it; the text output reads its ops and kernels per token from it.
nlohmann::json step_json(const StepQuery& q, const StepAsked& s, const LaunchConfig& launch) {
  const TimedStep& t = s.timed;
  const StepTime& step = t.step;
  nlohmann::json out;
  out["model"] = q.model.name;
  out["hw"] = q.hw.name;
  out["phase"] = s.phase;
  out["batch"] = s.batch;
  out["context"] = s.context;
  out["dtype"] = dtype_name(q.precision.weights);
  out["tensor_parallel_size"] = q.parallel.tensor_parallel_size;
  out["pipeline_parallel_size"] = q.parallel.pipeline_parallel_size;
  out["comm_s"] = step.comm_s;
  out["pipeline_bubble_frac"] = step.bubble_frac;
  out["quantization"] = {{"method", quant_name(q.precision.quant)},
                         {"group_size", q.precision.group_size},
                         {"kv_cache_dtype", dtype_name(q.precision.kv_cache)},
                         {"emulated", q.emulated},
                         {"weight_bytes", q.model.weight_bytes(q.precision.weights, q.precision.quant, q.precision.group_size,
                                                               q.precision.quant_scope)}};
  if (q.precision.quant_scope != QuantScope::all) {  // other steps keep their bytes
    out["quantization"]["scope"] = quant_scope_name(q.precision.quant_scope);
    nlohmann::json quantized = nlohmann::json::array();
    for (const Op& op : t.ops) {
      if ((op.kind == OpKind::gemm || op.kind == OpKind::grouped_gemm) && op.quant != QuantScheme::none) quantized.push_back(op.name);
    }
    out["quantization"]["quantized_ops"] = quantized;
  }
  // The engine's kernel for the routed experts (moe_quant_kernels), where it names one, and the
  // activations it multiplies: the checkpoint says only what the weights are.
  if (const QuantKernel k = q.engine ? q.engine->kernels.moe_quant_kernels[static_cast<std::size_t>(q.precision.quant)] : QuantKernel::auto_;
      q.model.is_moe() && k != QuantKernel::auto_) {
    out["quantization"]["experts_kernel"] = quant_kernel_name(k);
    out["quantization"]["experts_activations"] = kernel_activation_name(q.precision.quant, k, q.precision.activations);
  }
  out["engine"] = q.engine ? q.engine->name : "default";
  out["hardware_field_origins"] = field_origins_json(q.hw);
  out["host_overhead_per_step_s"] = launch.host_overhead_per_step_s;
  out["host_overhead_per_seq_s"] = launch.host_overhead_per_seq_s;
  out["cuda_graphs"] = t.cuda_graphs;
  out["padded_batch"] = t.padded_batch;
  out["max_batch_at_context"] = max_batch(q, s.context + (s.phase == "decode" ? 1 : s.prompt));
  out["time_s"] = step.time_s;
  out["gpu_s"] = step.gpu_s;
  out["launch_s"] = step.launch_s;
  out["launch_wait_s"] = step.launch_wait_s;
  out["host_s"] = step.host_s;
  out["roofline_s"] = step.roofline_s;
  out["kernels"] = step.kernels;
  out["kernels_per_token"] = static_cast<double>(step.kernels) / static_cast<double>(s.batch);
  out["launch_bound"] = step.launch_bound;
  out["launch_time_frac"] = step.launch_wait_s / step.time_s;
  out["hbm_bw_util_frac"] = step.bytes / (step.time_s * q.hw.hbm_bandwidth_bytes_per_s);
  out["ops"] = ops_json(q, t.ops);
  if (nlohmann::json pqh = per_query_head_json(q, t.ops); !pqh.is_null()) out["decode_attention_per_query_head"] = std::move(pqh);
  return out;
}

// The step in words: the total and where it goes, the engine and profile, then one line per op.
void print_step(const StepQuery& q, const StepAsked& s, const LaunchConfig& launch, const nlohmann::json& out) {
  const TimedStep& t = s.timed;
  const StepTime& step = t.step;
  const bool experts_only = q.precision.quant_scope == QuantScope::experts && q.precision.quant != QuantScheme::none;
  const std::string precision = std::string(quant_name(q.precision.quant)) == "none"
                                    ? std::string(dtype_name(q.precision.weights))
                                    : std::string(quant_name(q.precision.quant)) +
                                          (experts_only ? std::string(" experts, ") + dtype_name(q.precision.weights) + " elsewhere" : "") +
                                          (q.emulated ? " (emulated: no such units on this GPU)" : "");
  std::printf("%s on %s, %s, batch %lld, context %lld, %s: step %s\n", q.model.name.c_str(), q.hw.name.c_str(), s.phase.c_str(),
              s.batch, s.context, precision.c_str(), format_duration(step.time_s).c_str());
  std::printf("  = %s; roofline %s; %lld kernels (%.1f per token)%s\n",
              step_split(step.time_s, step.host_s, step.launch_wait_s, launch.overlap_host).c_str(),
              format_duration(step.roofline_s).c_str(), static_cast<long long>(step.kernels), out["kernels_per_token"].get<double>(),
              step.launch_bound ? ", launch-bound" : "");
  std::printf("  %s\n", engine_line(q, launch, t.cuda_graphs).c_str());
  if (experts_only) {
    std::string names;
    for (const auto& name : out["quantization"]["quantized_ops"]) names += (names.empty() ? "" : ", ") + name.get<std::string>();
    const std::string kernel = out["quantization"].contains("experts_kernel")
                                   ? " x " + out["quantization"]["experts_activations"].get<std::string>() + " activations (the engine's " +
                                         out["quantization"]["experts_kernel"].get<std::string>() + ")"
                                   : std::string();
    std::printf("  quantization scope experts: %s in %s%s (weights %s); every other GEMM (attention, router, shared experts, LM head) in %s\n",
                names.empty() ? "no op" : names.c_str(), quant_name(q.precision.quant), kernel.c_str(),
                format_bytes(out["quantization"]["weight_bytes"].get<double>()).c_str(), dtype_name(q.precision.weights));
  } else if (out["quantization"].contains("experts_kernel")) {
    std::printf("  routed experts: %s weights x %s activations (the engine's %s)\n", quant_name(q.precision.quant),
                out["quantization"]["experts_activations"].get<std::string>().c_str(), out["quantization"]["experts_kernel"].get<std::string>().c_str());
  }
  std::printf("  profile %s: %s\n", q.hw.name.c_str(), field_origins_line(q.hw).c_str());
  if (const auto pqh = out.find("decode_attention_per_query_head"); pqh != out.end()) {
    const nlohmann::json& j = *pqh;
    std::printf("  attention_decode: %lld of %lld layers (chunked attention) run one program per query head (%lld query heads per KV head, "
                "%s cache; the engine's kernel on %s GPUs): ",
                j["layers"].get<long long>(), j["of_layers"].get<long long>(), j["group"].get<long long>(),
                j["kv_cache_dtype"].get<std::string>().c_str(), q.hw.architecture.c_str());
    if (j["measured"].get<bool>()) {
      std::printf("measured %.2fx the grouped kernel's time here (calibration.attention_decode_per_query_head), the op %.2fx\n",
                  j["time_over_grouped"].get<double>(), j["op_time_over_grouped"].get<double>());
    } else {
      std::printf("%s has no calibration.attention_decode_per_query_head for them, so they are priced as the grouped kernel "
                  "(docs/gpu-physics.md)\n", q.hw.name.c_str());
    }
  }
  const ParallelConfig& par = q.parallel;
  if (par.gpus_per_replica() > 1) {
    std::printf("  tp %lld x pp %lld: communication %s, pipeline bubbles %.1f%%; ops below are one GPU's%s\n",
                static_cast<long long>(par.tensor_parallel_size), static_cast<long long>(par.pipeline_parallel_size),
                format_duration(step.comm_s).c_str(), 100.0 * step.bubble_frac, par.pipeline_parallel_size > 1 ? " (one stage, one micro-batch)" : "");
  }
  std::printf("  %-20s %6s %10s %10s %10s %10s  %s\n", "op", "count", "GFLOP", "MB", "time", "roofline", "bound");
  for (const auto& op : out["ops"]) {
    std::printf("  %-20s %6lld %10.3f %10.3f %10s %10s  %s%s%s\n", op["name"].get<std::string>().c_str(), op["count"].get<long long>(),
                op["flops"].get<double>() / 1e9, op["bytes"].get<double>() / 1e6, format_duration(op["time_s"].get<double>()).c_str(),
                format_duration(op["roofline_time_s"].get<double>()).c_str(), op["bound"].get<std::string>().c_str(),
                op.contains("gemm_kernel") ? " " : "", op.contains("gemm_kernel") ? op["gemm_kernel"].get<std::string>().c_str() : "");
  }
}

}  // namespace

int cmd_step(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim step", "Time one iteration (decode or prefill) with the cost model");
  add_query_options(opts);
  add_step_options(opts);
  opts.add_options()("json", "print JSON")("h,help", "show help");
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  const StepQuery q = load_query(p, "servesim step");
  const StepAsked s = read_step(p, q, "servesim step");
  const LaunchConfig& launch = q.engine ? q.engine->launch : q.launch_without_engine;
  const nlohmann::json out = step_json(q, s, launch);
  if (p.count("json")) {
    std::cout << out.dump(2) << "\n";
  } else {
    print_step(q, s, launch, out);
  }
  return kExitOk;
}

}  // namespace servesim::cli
