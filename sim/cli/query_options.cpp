// See query_options.hpp.
#include "sim/cli/query_options.hpp"

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/serve/parallel.hpp"

namespace servesim::cli {

void add_query_options(cxxopts::Options& opts) {
  opts.add_options()("model", "model name or path (model card or HF config.json)", cxxopts::value<std::string>())(
      "hw", "hardware profile name or path", cxxopts::value<std::string>())(
      "dtype", "16-bit base dtype: bf16 or fp16", cxxopts::value<std::string>()->default_value("bf16"))(
      "quant", "bf16|fp16|fp8|int8|w8a16|w4a16-gptq|w4a16-awq|nvfp4 (fp4)|mxfp4", cxxopts::value<std::string>())(
      "group-size", "w4a16 group size", cxxopts::value<long long>()->default_value("128"))(
      "kv-cache-dtype", "auto or fp8", cxxopts::value<std::string>()->default_value("auto"))(
      "engine", "engine profile (scenarios/engines/NAME.json) or path", cxxopts::value<std::string>())(
      "tp", "tensor-parallel GPUs", cxxopts::value<long long>()->default_value("1"))(
      "pp", "pipeline-parallel stages", cxxopts::value<long long>()->default_value("1"))(
      "micro-batches", "pipeline micro-batches (default: pp)", cxxopts::value<long long>()->default_value("0"))(
      "ep", "expert-parallel GPUs (mixture-of-experts models; divides --tp)", cxxopts::value<long long>()->default_value("1"))(
      "expert-imbalance", "busiest expert-parallel GPU's routed tokens over the mean", cxxopts::value<double>()->default_value("1"));
}

void add_step_options(cxxopts::Options& opts) {
  opts.add_options()("batch", "sequences in the batch", cxxopts::value<long long>()->default_value("1"))(
      "context", "tokens already in each sequence's KV cache (required for decode; prefill default 0)", cxxopts::value<long long>())(
      "phase", "decode or prefill", cxxopts::value<std::string>()->default_value("decode"))(
      "prompt", "prefill: new prompt tokens per sequence", cxxopts::value<long long>())(
      "eager", "launch kernels one by one (no CUDA graph)");
}

StepAsked read_step(const cxxopts::ParseResult& p, const StepQuery& q, const std::string& cmd) {
  StepAsked s;
  s.phase = p["phase"].as<std::string>();
  s.batch = p["batch"].as<long long>();
  // The scenario's engine.max_num_seqs range: a batch past it is no GPU's, and would be timed op by op.
  if (s.batch <= 0 || s.batch > (1 << 20)) throw InputError(cmd, "--batch", "must be in [1, 1048576], got " + std::to_string(s.batch));
  if (s.phase != "decode" && s.phase != "prefill") throw InputError(cmd, "--phase", "must be decode or prefill, got '" + s.phase + "'");
  if (s.phase == "decode" && !p.count("context")) {
    throw InputError(cmd, "--context", "required for a decode step (tokens already in each sequence's KV cache, e.g. --context 2048)");
  }
  s.context = p.count("context") ? p["context"].as<long long>() : 0;
  if (s.context < 0 || s.context > (1 << 24)) throw InputError(cmd, "--context", "must be in [0, 16777216], got " + std::to_string(s.context));
  long long per_seq = s.context + 1;
  if (s.phase == "prefill") {
    if (!p.count("prompt")) throw InputError(cmd, "--prompt", "required for --phase prefill");
    s.prompt = p["prompt"].as<long long>();
    if (s.prompt <= 0 || s.prompt > (1 << 24)) throw InputError(cmd, "--prompt", "must be in [1, 16777216], got " + std::to_string(s.prompt));
    per_seq = s.context + s.prompt;
  }
  if (per_seq > q.model.max_context_tokens) {
    throw InputError(cmd, "--context", "context + new tokens (" + std::to_string(per_seq) + ") exceed " + q.model.name +
                                           "'s max context " + std::to_string(q.model.max_context_tokens));
  }
  check_step_fits(q, s.batch, per_seq, cmd);
  s.timed = s.phase == "decode" ? time_decode(q, s.batch, s.context, p.count("eager") > 0) : time_prefill(q, s.batch, s.prompt, s.context);
  return s;
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
  q.launch_without_engine = default_launch();  // a step as `run` times it
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
  par.expert_parallel_size = p["ep"].as<long long>();
  par.expert_load_imbalance = p["expert-imbalance"].as<double>();
  if (par.expert_parallel_size < 1 || par.tensor_parallel_size % par.expert_parallel_size != 0) {
    throw InputError(cmd, "--ep", "must be >= 1 and divide --tp");
  }
  if (const std::string why = expert_parallel_error(q.model, par.expert_parallel_size); !why.empty()) throw InputError(cmd, "--ep", why);
  if (!(par.expert_load_imbalance >= 1.0) || par.expert_load_imbalance > static_cast<double>(par.expert_parallel_size)) {
    throw InputError(cmd, "--expert-imbalance", "must be in [1, --ep]");
  }
  return q;
}

}  // namespace servesim::cli
