// Step and GEMM timing for what-if questions: see step_query.hpp.
#include "sim/analysis/step_query.hpp"

#include <cmath>

#include "sim/core/error.hpp"
#include "sim/io/describe.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/parallel.hpp"
#include "sim/serve/speculative_step.hpp"

namespace servesim {

void apply_quant_name(const std::string& name, Precision& precision, const std::string& cmd, const std::string& key) {
  if (name == "bf16" || name == "fp16") {
    const Dtype d = name == "bf16" ? Dtype::bf16 : Dtype::fp16;
    precision.weights = precision.activations = d;
    if (precision.kv_cache != Dtype::fp8 && !integer_kv_cache(precision.kv_cache)) precision.kv_cache = d;
    precision.quant = QuantScheme::none;
    return;
  }
  const auto q = parse_quant(name);
  if (!q || *q == QuantScheme::none) {
    throw InputError(cmd, key, "unknown quantization '" + name + "' (bf16, fp16, " + kQuantNames + ")");
  }
  precision.quant = *q;
}

GemmQuery time_gemm(const HwProfile& hw, const std::string& dtype_text, std::int64_t m, std::int64_t n, std::int64_t k,
                    std::int64_t group_size, const std::string& cmd, QuantKernel kernel) {
  if (m <= 0 || n <= 0 || k <= 0) throw InputError(cmd, "--m/--n/--k", "must be > 0");
  // Weight-only schemes run on 16-bit activations; bf16/fp16/fp8/int8 are the GEMM's own dtype.
  const auto weight_only_scheme = parse_quant(dtype_text == "w4a16" ? "w4a16-gptq" : dtype_text);
  // W4A8 likewise takes 16-bit activations in and quantizes them itself (no dtype of its own).
  const bool wo = weight_only_scheme && (weight_only(*weight_only_scheme) || needs_engine_kernel(*weight_only_scheme));
  const auto dtype = wo ? std::optional<Dtype>(Dtype::bf16) : parse_dtype(dtype_text);
  if (!dtype || *dtype == Dtype::fp32) {
    throw InputError(cmd, "--dtype", "must be bf16, fp16, fp8, int8, w8a16, w4a16, w4a16-gptq, w4a16-awq, w4a8 or w4afp8, got '" + dtype_text + "'");
  }
  if (group_size <= 0) throw InputError(cmd, "--group-size", "must be > 0");
  GemmQuery g;
  Precision precision{*dtype, *dtype, *dtype};
  if (wo) precision.quant = *weight_only_scheme;
  if (kernel != QuantKernel::auto_) {
    // An engine's kernel for an 8-bit format runs the w8a8 scheme (bf16 output), as a layer does.
    if (!weight_only_scheme || *weight_only_scheme == QuantScheme::none || !kernel_runs_scheme(kernel, *weight_only_scheme)) {
      throw InputError(cmd, "--kernel", std::string(quant_kernel_name(kernel)) + " does not run " + dtype_text + " GEMMs");
    }
    if (!wo && hw.supports(*dtype)) {
      precision = Precision{Dtype::bf16, Dtype::bf16, Dtype::bf16};
      precision.quant = *weight_only_scheme;
    }
  }
  if (!hw.supports(*dtype)) {
    // An 8- or 4-bit format the GPU lacks runs as its w8a8/w4a4 scheme on 16-bit units (emulated).
    const auto scheme = parse_quant(dtype_text);
    if (!scheme || !w8a8_dtype(*scheme) || !hw.supports(Dtype::bf16)) {
      throw InputError(cmd, "--dtype", dtype_text + " is not supported by " + hw.name);
    }
    precision = Precision{Dtype::bf16, Dtype::bf16, Dtype::bf16};
    precision.quant = *scheme;
    g.emulated = true;
  }
  if (wo && w8a8_dtype(precision.quant)) g.emulated = !hw.supports(*w8a8_dtype(precision.quant));
  precision.group_size = group_size;
  g.op = make_gemm_op("gemm", 1, m, n, k, precision);
  g.op.quant_kernel = kernel;
  g.dtype = precision.weights;
  g.time = estimate(g.op, hw, precision.weights);
  return g;
}

LaunchConfig default_launch() {
  LaunchConfig l;
  l.host_overhead_per_step_s = EngineConfig::kDefaultHostOverheadPerStepS;
  l.host_overhead_per_seq_s = EngineConfig::kDefaultHostOverheadPerSeqS;
  return l;
}

namespace {
TimedStep time_shape(const StepQuery& q, BatchShape shape, bool force_eager, std::int64_t seqs) {
  TimedStep t;
  LaunchConfig launch = q.launch_without_engine;
  KernelPlan plan;
  if (q.engine) {
    launch = q.engine->launch;
    plan = q.engine->kernels;
  }
  launch.cuda_graphs = launch.cuda_graphs && !force_eager;
  apply_tp_workers(launch, q.parallel.tensor_parallel_size);
  // Without an engine every decode batch size counts as captured (no padding).
  apply_cuda_graphs(launch, q.engine ? q.engine->cuda_graph_batch_sizes : std::vector<std::int64_t>{}, shape,
                    q.engine ? q.engine->cuda_graph_mode : CudaGraphMode::decode);
  t.padded_batch = shape.total_seqs();
  t.cuda_graphs = launch.cuda_graphs;
  t.step = estimate_iteration(q.model, q.hw, q.precision, plan, q.parallel, shape, launch, seqs, t.ops);
  return t;
}
}  // namespace

TimedStep time_decode(const StepQuery& q, std::int64_t batch, std::int64_t context, bool force_eager) {
  BatchShape shape;
  for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(context);
  return time_shape(q, shape, force_eager, batch);
}

TimedStep time_verify(const StepQuery& q, std::int64_t batch, std::int64_t context, std::int64_t k) {
  BatchShape shape;
  for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(context);
  return time_shape(q, speculative_verify_shape(shape, k), false, batch);
}

TimedStep time_prefill(const StepQuery& q, std::int64_t batch, std::int64_t prompt, std::int64_t context) {
  BatchShape shape;
  for (std::int64_t i = 0; i < batch; ++i) shape.add_prefill(prompt, context, true);
  return time_shape(q, shape, true, batch);
}

namespace {
MemoryPlan step_memory(const StepQuery& q, std::int64_t context_tokens, std::int64_t instances) {
  EngineConfig e;
  e.max_num_batched_tokens = 2048;
  e.max_model_len = context_tokens;  // sliding-window layers: the KV per token at this context
  return plan_memory(q.model, q.hw, q.precision, e, q.parallel.tensor_parallel_size, q.parallel.pipeline_parallel_size,
                     instances, q.parallel.expert_parallel_size, q.parallel.attention_dp_size());  // attention DP: one rank's GPU
}
}  // namespace

void check_step_fits(const StepQuery& q, std::int64_t batch, std::int64_t tokens_per_seq, const std::string& cmd) {
  const MemoryPlan m = step_memory(q, tokens_per_seq, 1);
  const std::string where = q.model.name + " on " + q.hw.name +
                            (q.parallel.gpus_per_replica() > 1 ? " (" + std::to_string(q.parallel.gpus_per_replica()) + " GPUs)" : "");
  if (m.kv_bytes <= 0.0) {
    throw InputError(cmd, "--hw", where + " does not fit: " + format_bytes(m.weight_bytes) + " of weights, " +
                                      format_bytes(m.activation_bytes + m.runtime_bytes) + " of activations and runtime per GPU, " +
                                      format_bytes(m.budget_bytes) + " usable (0.9 x " + format_bytes(q.hw.memory_bytes) +
                                      "); try --tp, --quant or a larger GPU");
  }
  const double need = static_cast<double>(batch) * static_cast<double>(tokens_per_seq) * m.kv_bytes_per_token;
  if (need > m.kv_bytes) {
    const auto most = static_cast<long long>(m.kv_bytes / (static_cast<double>(tokens_per_seq) * m.kv_bytes_per_token));
    throw InputError(cmd, "--batch", std::to_string(batch) + " sequences of " + std::to_string(tokens_per_seq) + " tokens need " +
                                         format_bytes(need) + " of KV cache per GPU; " + where + " leaves " + format_bytes(m.kv_bytes) +
                                         " after the weights (at most " + std::to_string(most) + " such sequences)");
  }
}

std::int64_t max_batch(const StepQuery& q, std::int64_t context_tokens, std::int64_t instances) {
  const MemoryPlan m = step_memory(q, context_tokens, instances);
  if (m.kv_bytes <= 0.0) return 0;
  return static_cast<std::int64_t>(std::floor(m.kv_bytes / (m.kv_bytes_per_token * static_cast<double>(context_tokens))));
}

}  // namespace servesim
