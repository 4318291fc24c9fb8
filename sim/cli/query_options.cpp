// See query_options.hpp.
#include "sim/cli/query_options.hpp"

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/serve/parallel.hpp"

namespace servesim::cli {

const KeyRange& batch_range() { return find_scenario_key("engine.max_num_seqs")->range; }
const KeyRange& context_range() {
  static const KeyRange r{0, 16777216};
  return r;
}

namespace {
// Built on first use, not at start-up: the ranges come from the scenario key registry, which must
// not be read during static initialisation (its constants may not be set yet).
struct QueryFlags {
  IntegerFlag group_size{"group-size", "w4a16 group size", find_scenario_key("quantization.group_size")->range, "128"};
  IntegerFlag tp{"tp", "tensor-parallel GPUs", {1, 4096}, "1"};
  IntegerFlag pp{"pp", "pipeline-parallel stages", {1, 4096}, "1"};
  IntegerFlag micro_batches{"micro-batches", "pipeline micro-batches (default: pp)", {0, 4096}, "0"};
  IntegerFlag ep{"ep", "expert-parallel GPUs (mixture-of-experts models; divides --tp)", {1, 4096}, "1"};
  NumberFlag expert_imbalance{"expert-imbalance", "busiest expert-parallel GPU's routed tokens over the mean (at most --ep)", {1, 4096}, "1"};
  IntegerFlag batch{"batch", "sequences in the batch", batch_range(), "1"};
  IntegerFlag context{"context", "tokens already in each sequence's KV cache (required for decode; prefill default 0)", context_range(), ""};
  IntegerFlag prompt{"prompt", "prefill: new prompt tokens per sequence", {1, 16777216}, ""};
};
const QueryFlags& flags() {
  static const QueryFlags f;
  return f;
}
}  // namespace

void add_query_options(cxxopts::Options& opts) {
  opts.add_options()("model", "model name or path (model card or HF config.json)", cxxopts::value<std::string>())(
      "hw", "hardware profile name or path", cxxopts::value<std::string>())(
      "dtype", "16-bit base dtype: bf16 or fp16", cxxopts::value<std::string>()->default_value("bf16"))(
      "quant", "bf16|fp16|fp8|int8|w8a16|w4a16-gptq|w4a16-awq|nvfp4 (fp4)|mxfp4", cxxopts::value<std::string>())(
      "quant-scope", "which weights --quant quantizes: all, or experts (the routed experts only; MoE models)",
      cxxopts::value<std::string>()->default_value("all"))(
      "kv-cache-dtype", "auto, fp8, int8 or int4", cxxopts::value<std::string>()->default_value("auto"))(
      "engine", "engine profile (scenarios/engines/NAME.json) or path; generic: servesim's own defaults",
      cxxopts::value<std::string>()->default_value(EngineConfig::kDefaultProfile))(
      "attention-dp", "attention data parallelism over the --tp GPUs, experts over all (--ep = --tp): --batch is one rank's");
  const QueryFlags& f = flags();
  for (const IntegerFlag* i : {&f.group_size, &f.tp, &f.pp, &f.micro_batches, &f.ep}) i->add(opts);
  f.expert_imbalance.add(opts);
}

void add_step_options(cxxopts::Options& opts) {
  for (const IntegerFlag* f : {&flags().batch, &flags().context, &flags().prompt}) f->add(opts);
  opts.add_options()("phase", "decode or prefill", cxxopts::value<std::string>()->default_value("decode"))(
      "eager", "launch kernels one by one (no CUDA graph)");
}

StepAsked read_step(const cxxopts::ParseResult& p, const StepQuery& q, const std::string& cmd) {
  StepAsked s;
  s.phase = p["phase"].as<std::string>();
  const QueryFlags& f = flags();
  s.batch = f.batch.read(p, cmd);
  if (s.phase != "decode" && s.phase != "prefill") throw InputError(cmd, "--phase", "must be decode or prefill, got '" + s.phase + "'");
  if (s.phase == "decode" && !p.count("context")) {
    throw InputError(cmd, "--context", "required for a decode step (tokens already in each sequence's KV cache, e.g. --context 2048)");
  }
  s.context = f.context.has(p) ? f.context.read(p, cmd) : 0;
  long long per_seq = s.context + 1;
  if (s.phase == "prefill") {
    if (!f.prompt.has(p)) throw InputError(cmd, "--prompt", "required for --phase prefill");
    s.prompt = f.prompt.read(p, cmd);
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
  const auto kv_dtype = parse_kv_cache_dtype(kv, *dtype);
  if (!kv_dtype) throw InputError(cmd, "--kv-cache-dtype", std::string("must be one of ") + kKvCacheDtypeNames);
  q.precision.kv_cache = *kv_dtype;
  if (p.count("quant")) apply_quant_name(p["quant"].as<std::string>(), q.precision, cmd, "--quant");
  const std::string scope = p["quant-scope"].as<std::string>();
  const auto quant_scope = parse_quant_scope(scope);
  if (!quant_scope) throw InputError(cmd, "--quant-scope", "must be all or experts, got '" + scope + "'");
  if (const std::string why = quant_scope_refusal(*quant_scope, q.model); !why.empty()) throw InputError(cmd, "--quant-scope", why);
  q.precision.quant_scope = *quant_scope;
  const QueryFlags& f = flags();
  q.precision.group_size = f.group_size.read(p, cmd);
  if (!q.hw.supports(q.precision.weights)) {
    throw InputError(cmd, "--dtype", std::string(dtype_name(q.precision.weights)) + " not supported by " + q.hw.name);
  }
  {
    // Always a profile, as `run` has: the flag's default is the default engine (cxxopts counts
    // only a flag given, so p.count("engine") would skip it and price steps without one).
    q.engine = load_engine_profile(p["engine"].as<std::string>(), cmd, "--engine");
    resolve_for_gpu(*q.engine, q.hw);
    if (const PrecisionSupport no = engine_supports(*q.engine, q.precision, q.hw); !no.key.empty()) {
      throw InputError(cmd, no.key == "quantization.kv_cache_dtype" ? "--kv-cache-dtype" : "--quant", no.why);
    }
    q.emulated = quant_emulated(q.precision, q.engine->kernels, q.hw);
  }
  q.launch_without_engine = default_launch();  // a step as `run` times it
  ParallelConfig& par = q.parallel;
  par.tensor_parallel_size = f.tp.read(p, cmd);
  par.pipeline_parallel_size = f.pp.read(p, cmd);
  par.num_micro_batches = f.micro_batches.read(p, cmd);
  if (const std::string why = parallel_config_error(q.model, par.tensor_parallel_size, par.pipeline_parallel_size); !why.empty()) {
    throw InputError(cmd, why.rfind("pipeline", 0) == 0 ? "--pp" : "--tp", why);
  }
  par.expert_parallel_size = f.ep.read(p, cmd);
  par.expert_load_imbalance = f.expert_imbalance.read(p, cmd);
  if (par.tensor_parallel_size % par.expert_parallel_size != 0) throw InputError(cmd, "--ep", "must divide --tp");
  if (const std::string why = expert_parallel_error(q.model, par.expert_parallel_size); !why.empty()) throw InputError(cmd, "--ep", why);
  if (par.expert_load_imbalance > static_cast<double>(par.expert_parallel_size)) {
    throw InputError(cmd, "--expert-imbalance", "must be at most --ep (" + std::to_string(par.expert_parallel_size) + ")");
  }
  if (p.count("attention-dp")) {
    if (!q.model.is_moe()) throw InputError(cmd, "--attention-dp", "pairs attention data parallelism with expert parallelism: " + q.model.name + " is dense");
    if (par.tensor_parallel_size < 2 || par.expert_parallel_size != par.tensor_parallel_size) {
      throw InputError(cmd, "--attention-dp", "needs --tp > 1 and --ep equal to --tp (its GPUs are the attention ranks)");
    }
    par.enable_attention_dp = true;
  }
  return q;
}

std::string step_split(double time_s, double host_s, double launch_wait_s, bool host_overlapped) {
  const std::string waiting = launch_wait_s > 0.0 ? " (of which waiting on launches " + format_duration(launch_wait_s) + ")" : "";
  if (host_overlapped) {
    // time_s = max(host, GPU path): the GPU path is the step unless the host is longer.
    const bool host_bound = host_s > time_s - 1e-15 && host_s > 0.0;
    if (host_bound) return "host " + format_duration(host_s) + ", the GPU's work overlapped with it and shorter";
    return "GPU " + format_duration(time_s) + waiting + ", host " + format_duration(host_s) + " overlapped with it";
  }
  return "host " + format_duration(host_s) + " + GPU " + format_duration(time_s - host_s) + waiting;
}

std::string engine_line(const StepQuery& q, const LaunchConfig& launch, bool cuda_graphs) {
  const std::string name = q.engine ? q.engine->name : std::string("none");
  return "engine " + name + ": " + (cuda_graphs ? "CUDA graph" : "eager launches") + ", host " +
         format_duration(launch.host_overhead_per_step_s) + " per step + " + format_duration(launch.host_overhead_per_seq_s) +
         " per sequence" + (launch.overlap_host ? ", overlapped with the GPU" : "") + " (--engine NAME for another)";
}

}  // namespace servesim::cli
