// Shared command-line model/GPU/precision/engine loading and decode-step timing.
#include "sim/cli/step_query.hpp"

#include <cmath>

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/parallel.hpp"

namespace servesim::cli {

void add_query_options(cxxopts::Options& opts) {
  opts.add_options()("model", "model name or path (model card or HF config.json)", cxxopts::value<std::string>())(
      "hw", "hardware profile name or path", cxxopts::value<std::string>())(
      "dtype", "16-bit base dtype: bf16 or fp16", cxxopts::value<std::string>()->default_value("bf16"))(
      "quant", "bf16|fp16|fp8|int8|w8a16|w4a16-gptq|w4a16-awq", cxxopts::value<std::string>())(
      "group-size", "w4a16 group size", cxxopts::value<long long>()->default_value("128"))(
      "kv-cache-dtype", "auto or fp8", cxxopts::value<std::string>()->default_value("auto"))(
      "engine", "engine profile (scenarios/engines/NAME.json) or path", cxxopts::value<std::string>())(
      "tp", "tensor-parallel GPUs", cxxopts::value<long long>()->default_value("1"))(
      "pp", "pipeline-parallel stages", cxxopts::value<long long>()->default_value("1"))(
      "micro-batches", "pipeline micro-batches (default: pp)", cxxopts::value<long long>()->default_value("0"));
}

void apply_quant_name(const std::string& name, Precision& precision, const std::string& cmd, const std::string& key) {
  if (name == "bf16" || name == "fp16") {
    const Dtype d = name == "bf16" ? Dtype::bf16 : Dtype::fp16;
    precision.weights = precision.activations = d;
    if (precision.kv_cache != Dtype::fp8) precision.kv_cache = d;
    precision.quant = QuantScheme::none;
    return;
  }
  const auto q = parse_quant(name);
  if (!q || *q == QuantScheme::none) {
    throw InputError(cmd, key, "unknown quantization '" + name + "' (bf16, fp16, fp8, int8, w8a16, w4a16-gptq, w4a16-awq)");
  }
  precision.quant = *q;
}

GemmQuery time_gemm(const HwProfile& hw, const std::string& dtype_text, std::int64_t m, std::int64_t n, std::int64_t k,
                    std::int64_t group_size, const std::string& cmd) {
  if (m <= 0 || n <= 0 || k <= 0) throw InputError(cmd, "--m/--n/--k", "must be > 0");
  // Weight-only schemes run on 16-bit activations; bf16/fp16/fp8/int8 are the GEMM's own dtype.
  const auto weight_only_scheme = parse_quant(dtype_text == "w4a16" ? "w4a16-gptq" : dtype_text);
  const bool wo = weight_only_scheme && weight_only(*weight_only_scheme);
  const auto dtype = wo ? std::optional<Dtype>(Dtype::bf16) : parse_dtype(dtype_text);
  if (!dtype || *dtype == Dtype::fp32) {
    throw InputError(cmd, "--dtype", "must be bf16, fp16, fp8, int8, w8a16, w4a16, w4a16-gptq or w4a16-awq, got '" + dtype_text + "'");
  }
  if (!hw.supports(*dtype)) throw InputError(cmd, "--dtype", dtype_text + " is not supported by " + hw.name);
  Precision precision{*dtype, *dtype, *dtype};
  if (wo) precision.quant = *weight_only_scheme;
  if (group_size <= 0) throw InputError(cmd, "--group-size", "must be > 0");
  precision.group_size = group_size;
  GemmQuery g;
  g.op = make_gemm_op("gemm", 1, m, n, k, precision);
  g.dtype = *dtype;
  g.time = estimate(g.op, hw, *dtype);
  return g;
}

StepQuery load_query(const cxxopts::ParseResult& p, const std::string& cmd) {
  if (!p.count("model")) throw InputError(cmd, "--model", "required");
  if (!p.count("hw")) throw InputError(cmd, "--hw", "required");
  StepQuery q;
  q.model = load_model(resolve_data_ref("models", p["model"].as<std::string>(), cmd, "--model"));
  q.hw = load_hw_profile(resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), cmd, "--hw"));
  const auto dtype = parse_dtype(p["dtype"].as<std::string>());
  if (!dtype || (*dtype != Dtype::bf16 && *dtype != Dtype::fp16)) throw InputError(cmd, "--dtype", "must be bf16 or fp16");
  q.precision = Precision{*dtype, *dtype, *dtype};
  const std::string kv = p["kv-cache-dtype"].as<std::string>();
  if (kv == "fp8") {
    q.precision.kv_cache = Dtype::fp8;
  } else if (kv != "auto") {
    throw InputError(cmd, "--kv-cache-dtype", "must be auto or fp8");
  }
  if (p.count("quant")) apply_quant_name(p["quant"].as<std::string>(), q.precision, cmd, "--quant");
  const long long group = p["group-size"].as<long long>();
  if (group <= 0) throw InputError(cmd, "--group-size", "must be > 0");
  q.precision.group_size = group;
  if (!q.hw.supports(q.precision.weights)) {
    throw InputError(cmd, "--dtype", std::string(dtype_name(q.precision.weights)) + " not supported by " + q.hw.name);
  }
  if (auto d8 = w8a8_dtype(q.precision.quant)) q.emulated = !q.hw.supports(*d8);
  if (p.count("engine")) q.engine = load_engine_profile(p["engine"].as<std::string>(), cmd, "--engine");
  ParallelConfig& par = q.parallel;
  par.tensor_parallel_size = p["tp"].as<long long>();
  par.pipeline_parallel_size = p["pp"].as<long long>();
  par.num_micro_batches = p["micro-batches"].as<long long>();
  if (par.tensor_parallel_size <= 0 || par.tensor_parallel_size > 4096) throw InputError(cmd, "--tp", "must be in [1, 4096]");
  if (par.pipeline_parallel_size <= 0 || par.pipeline_parallel_size > 4096) throw InputError(cmd, "--pp", "must be in [1, 4096]");
  if (par.num_micro_batches < 0 || par.num_micro_batches > 4096) throw InputError(cmd, "--micro-batches", "must be in [0, 4096]");
  if (const std::string why = parallel_config_error(q.model, par.tensor_parallel_size, par.pipeline_parallel_size); !why.empty()) {
    throw InputError(cmd, why.rfind("pipeline", 0) == 0 ? "--pp" : "--tp", why);
  }
  return q;
}

namespace {
TimedStep time_shape(const StepQuery& q, BatchShape shape, bool decode, bool force_eager, std::int64_t seqs) {
  TimedStep t;
  LaunchConfig launch;  // without an engine: no host overhead, CUDA graphs for decode
  KernelPlan plan;
  if (q.engine) {
    launch = q.engine->launch;
    plan = q.engine->kernels;
  }
  launch.cuda_graphs = decode && launch.cuda_graphs && !force_eager;
  t.padded_batch = shape.decode_seqs + shape.prefill_seqs;
  if (launch.cuda_graphs && q.engine) {
    const std::int64_t padded = graph_batch_size(q.engine->cuda_graph_batch_sizes, shape.decode_seqs);
    if (padded == 0) launch.cuda_graphs = false;
    for (std::int64_t i = shape.decode_seqs; i < padded; ++i) shape.add_decode(0);
    if (padded > 0) t.padded_batch = padded;
  }
  t.cuda_graphs = launch.cuda_graphs;
  t.step = estimate_iteration(q.model, q.hw, q.precision, plan, q.parallel, shape, launch, seqs, t.ops);
  return t;
}
}  // namespace

TimedStep time_decode(const StepQuery& q, std::int64_t batch, std::int64_t context, bool force_eager) {
  BatchShape shape;
  for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(context);
  return time_shape(q, shape, true, force_eager, batch);
}

TimedStep time_prefill(const StepQuery& q, std::int64_t batch, std::int64_t prompt, std::int64_t context) {
  BatchShape shape;
  for (std::int64_t i = 0; i < batch; ++i) shape.add_prefill(prompt, context, true);
  return time_shape(q, shape, false, true, batch);
}

std::int64_t max_batch(const StepQuery& q, std::int64_t context_tokens, std::int64_t instances) {
  EngineConfig e;
  e.max_num_batched_tokens = 2048;
  const MemoryPlan m = plan_memory(q.model, q.hw, q.precision, e, q.parallel.tensor_parallel_size,
                                     q.parallel.pipeline_parallel_size, instances);
  if (m.kv_bytes <= 0.0) return 0;
  return static_cast<std::int64_t>(std::floor(m.kv_bytes / (m.kv_bytes_per_token * static_cast<double>(context_tokens))));
}

}  // namespace servesim::cli
