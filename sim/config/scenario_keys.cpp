// The declarations of every scenario key: see scenario_keys.hpp.
#include "sim/config/scenario_keys.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

namespace servesim {

const char* key_type_name(KeyType t) {
  switch (t) {
    case KeyType::integer: return "integer";
    case KeyType::number: return "number";
    case KeyType::boolean: return "boolean";
    case KeyType::string: return "string";
    case KeyType::object: return "object";
    case KeyType::array: return "array";
  }
  return "?";
}

bool KeyRange::contains(double v) const {
  return std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
}

std::string key_number_text(double v) {
  char buf[40];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e10) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}

namespace {

std::string number_text(double v) { return key_number_text(v); }
std::string integer_text(std::int64_t v) { return std::to_string(v); }
std::string boolean_text(bool v) { return v ? "true" : "false"; }

}  // namespace

std::string KeyRange::text() const {
  std::ostringstream os;
  os << (lo_open ? '(' : '[') << number_text(lo) << ", " << number_text(hi) << (hi_open ? ')' : ']');
  return os.str();
}

namespace {

// Ranges, by what a key measures.
KeyRange closed(double lo, double hi) { return {lo, hi, false, false}; }
KeyRange above(double lo, double hi) { return {lo, hi, true, false}; }  // (lo, hi]
const KeyRange kTime = closed(0.0, kMaxSimulatedTimeS);         // seconds, 0 allowed (usually "none")
const KeyRange kPositiveTime = above(0.0, kMaxSimulatedTimeS);  // seconds, > 0
const KeyRange kFraction = closed(0.0, 1.0);
const KeyRange kPercentile = {0.0, 1.0, true, true};
const KeyRange kTokens = closed(1.0, kMaxTokens);
const KeyRange kGpus = closed(1.0, 4096.0);
// Replicas behind one router: a fleet of tens of thousands of GPUs (issue 39; bench/fleet.sh).
const KeyRange kReplicas = closed(1.0, 65536.0);
const KeyRange kRate = above(0.0, 1e9);                 // requests per second
const KeyRange kNone = {};

ScenarioKey key(std::string path, KeyType type, std::string def, KeyRange range, std::string help,
                std::string choices = "", std::string when = "") {
  return {std::move(path), type, std::move(def), range, std::move(choices), std::move(help), std::move(when), {}};
}
ScenarioKey object(std::string path, std::string def, std::string help) {
  return key(std::move(path), KeyType::object, std::move(def), kNone, std::move(help));
}
ScenarioKey text(std::string path, std::string def, std::string help, std::string choices = "", std::string when = "") {
  return key(std::move(path), KeyType::string, std::move(def), kNone, std::move(help), std::move(choices), std::move(when));
}
// A scheduler setting: the SchedulerConfig field it fills. Which policy reads it as its own is
// the policy's registry entry's business (sched/policies.cpp), not the declaration's.
template <class T>
ScenarioKey scheduler(std::string path, T SchedulerConfig::*field, KeyRange range, std::string help, std::string def = "") {
  const SchedulerConfig defaults;
  const bool integer = std::is_same_v<T, std::int64_t>;
  if (def.empty()) def = integer ? integer_text(static_cast<std::int64_t>(defaults.*field)) : number_text(static_cast<double>(defaults.*field));
  ScenarioKey k = key("engine.scheduler." + std::move(path), integer ? KeyType::integer : KeyType::number, std::move(def), range,
                      std::move(help));
  k.scheduler_field = field;
  return k;
}

// A declaration table, one entry per key: long because the scenario has that many keys, not
// because it does several things.
std::vector<ScenarioKey> build() {
  const EngineConfig engine;
  const ColdStartConfig cold;
  const SloConfig slo;
  const RouterConfig router;
  const ParallelConfig parallel;
  const TraceConfig trace;
  const ArrivalConfig arrival;
  const SchedulerConfig sched;
  using T = KeyType;
  return {
      // Top level.
      text("schema", "none", "format tag, e.g. servesim-scenario/1 (not checked)"),
      text("description", "none", "free text"),
      text("name", "scenario", "name printed in reports"),
      key("seed", T::integer, "0", closed(0.0, 9007199254740992.0), "seed of every random stream (2^53 at most: JSON numbers)"),
      text("model", "required", "bundled model name (servesim list models) or path to a model card / Hugging Face config.json"),
      text("hardware", "required", "bundled hardware profile name (servesim list hardware) or path"),
      text("dtype", "bf16", "16-bit base dtype of weights and activations", "bf16|fp16"),
      object("quantization", "none", "weight/activation quantization and KV cache dtype"),
      text("quantization.method", "none", std::string("quantization scheme: none, ") + kQuantNames),
      key("quantization.group_size", T::integer, "128", closed(1.0, 65536.0), "w4a16 group size"),
      text("quantization.activation_scales", "static",
           "w8a8 activation scales: static (one per tensor, calibrated; engines may fuse the quantize pass into its producer) or dynamic (one per token, computed at run time)",
           "static|dynamic"),
      text("quantization.scope", "all",
           "which weights the scheme quantizes: all (every layer projection) or experts (the routed experts' grouped GEMMs only; attention, router, shared experts, dense MLP layers, embedding and LM head stay in dtype, as GPT-OSS's MXFP4 checkpoints; MoE models only)",
           "all|experts"),
      text("quantization.kv_cache_dtype", "auto", "KV cache dtype (auto: the base dtype; int8/int4 with a 4-byte scale per token and KV head)", "auto|fp8|int8|int4"),

      // Engine.
      object("engine", "all defaults", "the serving engine (vLLM names)"),
      text("engine.profile", EngineConfig::kDefaultProfile, "engine profile: scenarios/engines/NAME.json or a path; supplies defaults the keys below override (generic: servesim's former defaults)"),
      key("engine.max_num_seqs", T::integer, integer_text(engine.max_num_seqs) + " (or the profile's, by GPU)", closed(1.0, 1 << 20), "most sequences in one iteration"),
      key("engine.num_scheduler_steps", T::integer, integer_text(engine.num_scheduler_steps), closed(1.0, 1024.0),
          "vLLM multi-step scheduling: decode steps per scheduler call, tokens delivered at the window's end (continuous only)"),
      key("engine.max_num_batched_tokens", T::integer, "max(max_model_len, 2048) (or the profile's, by GPU)", closed(1.0, 4294967296.0), "most tokens in one iteration"),
      key("engine.block_size", T::integer, integer_text(engine.block_size) + " (or the profile's)", closed(1.0, 65536.0), "tokens per KV block"),
      key("engine.gpu_memory_utilization", T::number, number_text(engine.gpu_memory_utilization), closed(0.01, 1.0),
          "fraction of GPU memory for weights, activations and KV"),
      key("engine.max_model_len", T::integer, "model maximum", kTokens, "longest request (prompt + output)"),
      key("engine.watermark_frac", T::number, number_text(engine.watermark_frac) + " (or the profile's)", closed(0.0, 0.5), "KV blocks kept free when admitting prompts"),
      key("engine.runtime_overhead_bytes", T::number, "1 GiB", closed(0.0, 1e13), "CUDA context, workspaces, graphs"),
      key("engine.cuda_graphs", T::boolean, "true (or the profile's)", kNone, "decode steps launched as one CUDA graph"),
      key("engine.cuda_graph_batch_sizes", T::array, "the profile's", closed(1.0, 1048576.0),
          "decode batch sizes captured as CUDA graphs, increasing (a batch runs padded to the next; larger ones eagerly): "
          "overrides the profile's cuda_graphs.batch_sizes"),
      key("engine.host_overhead_per_step_s", T::number, number_text(EngineConfig::kDefaultHostOverheadPerStepS) + " (or the profile's)", closed(0.0, 10.0), "host work per iteration, serial with the GPU"),
      key("engine.host_overhead_per_seq_s", T::number, number_text(EngineConfig::kDefaultHostOverheadPerSeqS) + " (or the profile's)", closed(0.0, 1.0), "host work per sequence per iteration"),
      key("engine.frontend_latency_s", T::number, "0 (or the profile's)", closed(0.0, 10.0),
          "the server's latency outside the steps (HTTP, tokenization, streaming): delays the request's arrival at the engine"),
      text("engine.kv_reservation", "paged", "paged: blocks on demand; contiguous: max_model_len per sequence at admission; token: 1-token units",
           "paged|contiguous|token"),
      key("engine.enable_prefix_caching", T::boolean, boolean_text(engine.enable_prefix_caching) + " (or the profile's)", kNone,
          "share full KV blocks by chained content hash, LRU eviction of free cached blocks (paged only)"),
      text("engine.kv_cache_windowed_layers", "the profile's (window)",
           "KV a sliding-window or chunked-attention layer keeps: window (at most the window per sequence) or full (the whole "
           "sequence, as TensorRT-LLM's PyTorch backend without per-layer max_attention_window); attention reads the window either way",
           "window|full"),
      text("engine.preemption_mode", "recompute", "what preemption does with a victim's KV (swap: copied over the host link)", "recompute|swap"),
      key("engine.swap_space_bytes", T::number, "4 GiB", closed(0.0, 1e15), "host memory for swapped KV (full: recompute instead)"),
      // KV offload tiers (KvOffloadConfig, sched/replica_state.cpp).
      object("engine.kv_offload", "none (off)",
             "KV offload tiers below the GPU prefix cache (vLLM --kv-offloading-size, LMCache CPU/disk): evicted cached blocks "
             "kept in host memory, then disk; prompt hits there are loaded instead of computed (needs enable_prefix_caching)"),
      key("engine.kv_offload.cpu_bytes", T::number, "required", closed(0.0, 1e15),
          "host memory for offloaded KV blocks, per GPU (as swap_space_bytes); 0: offload off (a sweep's baseline)"),
      key("engine.kv_offload.cpu_bandwidth_bytes_per_s", T::number, "the hardware's host link", above(0.0, 1e13),
          "GPU <-> host copy bandwidth, one direction (hardware host_link: PCIe, or NVLink-C2C on GH200/GB200)"),
      key("engine.kv_offload.disk_bytes", T::number, "0 (no disk tier)", closed(0.0, 1e16),
          "disk for blocks the CPU tier evicts, per GPU (LMCache local_disk)"),
      key("engine.kv_offload.disk_bandwidth_bytes_per_s", T::number, "required with disk_bytes", above(0.0, 1e13),
          "disk read bandwidth (a load from disk runs at the slower of it and the host link)"),
      text("engine.kv_offload.load", "async",
           "async: a request waits for its load while the batch runs on, saves off the step (vLLM OffloadingConnector); "
           "blocking: the step waits for its loads and for saving the KV it prefills (LMCache's connector)",
           "async|blocking"),
      object("engine.cold_start", "the profile's", "start-up cost model"),
      key("engine.cold_start.disk_bandwidth_bytes_per_s", T::number, number_text(cold.disk_bandwidth_bytes_per_s) + " (or the profile's)",
          above(0.0, 1e13), "weights read from local storage"),
      key("engine.cold_start.cuda_context_s", T::number, number_text(cold.cuda_context_s) + " (or the profile's)", closed(0.0, 600.0),
          "CUDA context and library handles"),
      key("engine.cold_start.framework_init_s", T::number, number_text(cold.framework_init_s) + " (or the profile's)", closed(0.0, 3600.0),
          "imports, model construction, profiling run, compile"),
      key("engine.cold_start.graph_capture_s_per_batch_size", T::number, number_text(cold.graph_capture_s_per_batch_size) + " (or the profile's)",
          closed(0.0, 60.0), "CUDA graph capture per captured batch size"),

      // Scheduler: the policy and its settings (servesim list policies).
      object("engine.scheduler", sched.impl, "batching policy and its settings"),
      text("engine.scheduler.impl", sched.impl + " (or the profile's)", "batching policy (servesim list policies)"),
      text("engine.scheduler.scheduling_policy", "fcfs", "queue order: arrival, or priority class then arrival", "fcfs|priority"),
      scheduler("max_queue_size", &SchedulerConfig::max_queue_size, closed(1.0, 1099511627776.0),
                "arrivals finding this many waiting are rejected", "none"),
      scheduler("max_waiting_time_s", &SchedulerConfig::max_waiting_time_s, kPositiveTime,
                "requests not started by then are dropped (rejected)", "none"),
      scheduler("batch_size", &SchedulerConfig::batch_size, closed(1.0, 1 << 20), "rows in every batch (<= max_num_seqs)"),
      scheduler("batch_timeout_s", &SchedulerConfig::batch_timeout_s, kTime, "longest wait for a full batch"),
      scheduler("max_batch_size", &SchedulerConfig::max_batch_size, closed(1.0, 1 << 20), "most requests in one batch (<= max_num_seqs)"),
      scheduler("max_queue_delay_s", &SchedulerConfig::max_queue_delay_s, kTime, "batching window after the oldest arrival"),
      scheduler("long_prefill_token_threshold", &SchedulerConfig::long_prefill_token_threshold, kTokens,
                "largest chunk one prompt takes per iteration (none: max_num_batched_tokens)", "none"),
      scheduler("expected_output_tokens", &SchedulerConfig::expected_output_tokens, kTokens,
                "output length assumed per request at admission (LightLLM: max_new_tokens)"),

      // Speculative decoding (speculative_methods(), model/speculative.hpp).
      object("engine.speculative", "none (off)",
             "speculative decoding (vLLM speculative_config): a drafter proposes k tokens per sequence, the target verifies them in one pass"),
      text("engine.speculative.method", "required",
           "the drafter (servesim list policies); none: speculation off, the other keys read and ignored (a sweep's baseline)"),
      key("engine.speculative.num_speculative_tokens", T::integer, "required", closed(1.0, 16.0),
          "draft tokens per sequence per step (k); the verify pass computes k + 1 tokens per sequence"),
      key("engine.speculative.acceptance_rate", T::number, "the method's (servesim list policies)", closed(0.0, 0.99),
          "probability a draft token is accepted when the ones before it were (alpha): (1 - alpha^(k+1)) / (1 - alpha) tokens per "
          "step on average, drawn per sequence and step from the scenario's seed"),
      text("engine.speculative.draft_model", "required", "the draft model: bundled model name or path (same vocabulary as the target)"),

      // SLO.
      object("slo", "p99, 99.9% success, no latency target", "targets every request class meets (a class's own slo overrides)"),
      key("<slo>.ttft_s", T::number, number_text(slo.ttft_s) + " (none)", kTime, "time to first token target"),
      key("<slo>.tpot_s", T::number, number_text(slo.tpot_s) + " (none)", kTime, "time per output token target"),
      key("<slo>.e2e_s", T::number, number_text(slo.e2e_s) + " (none)", kTime, "end-to-end latency target"),
      key("<slo>.percentile", T::number, number_text(slo.percentile), kPercentile, "latency targets hold at this percentile"),
      key("<slo>.min_success_frac", T::number, number_text(slo.min_success_frac), kFraction,
          "fraction of arrived requests that must complete within the targets"),

      // Workload.
      object("workload", "required", "the requests"),
      key("workload.num_requests", T::integer, "required unless duration_s or a trace ends the workload", closed(0.0, 1099511627776.0),
          "requests to simulate, later turns of sessions included"),
      key("workload.duration_s", T::number, "0 (none)", kTime, "no arrivals after this"),
      key("workload.request_timeout_s", T::number, "0 (never)", kTime, "a client gives up this long after sending (counted timed_out)"),
      object("workload.arrival", "required", "arrival process"),
      text("workload.arrival.impl", "required", "arrival process", "poisson|gamma|constant|on_off|ramp|trace|all_at_once|concurrency|stages"),
      key("workload.arrival.rate_per_s", T::number, "required", kRate, "arrival rate (on_off: while on)", "", "poisson|gamma|constant|on_off"),
      key("workload.arrival.cv", T::number, number_text(arrival.cv), closed(0.05, 20.0), "coefficient of variation of the gaps (1 = Poisson)",
          "", "gamma"),
      key("workload.arrival.on_s", T::number, "required", kPositiveTime, "burst length", "", "on_off"),
      key("workload.arrival.off_s", T::number, "required", kTime, "silence length", "", "on_off"),
      key("workload.arrival.start_rate_per_s", T::number, "required", closed(0.0, 1e9), "rate at t = 0", "", "ramp"),
      key("workload.arrival.end_rate_per_s", T::number, "required", kRate, "rate from ramp_s on", "", "ramp"),
      key("workload.arrival.ramp_s", T::number, "required", kPositiveTime, "length of the linear ramp", "", "ramp"),
      key("workload.arrival.clients", T::integer, "required", closed(1.0, 1 << 20),
          "closed loop: clients, each sending its next request when its previous one leaves (completed, rejected, timed out); "
          "all start at t = 0", "", "concurrency"),
      key("workload.arrival.think_time_s", T::number, number_text(arrival.think_time_s), kTime,
          "a client's pause between its previous request leaving and its next one", "", "concurrency"),
      key("workload.arrival.stages", T::array, "required", kNone,
          "stages run one after the other (inference-perf load.stages); report.json gives each stage's latencies", "", "stages"),
      text("workload.arrival.stages[].impl", "required", "arrivals within the stage: evenly spaced, or Poisson", "constant|poisson"),
      key("workload.arrival.stages[].rate_per_s", T::number, "required", kRate, "the stage's arrival rate"),
      key("workload.arrival.stages[].duration_s", T::number, "required", kPositiveTime, "the stage's length"),
      key("workload.arrival.stage_gap_s", T::number, number_text(arrival.stage_gap_s), kTime,
          "silence between one stage's end and the next one's start (inference-perf load.interval)", "", "stages"),
      object("workload.trace", "none", "requests replayed from a trace file (streamed)"),
      text("workload.trace.path", "required", "trace file, relative to the working directory or the scenario file"),
      text("workload.trace.format", "required", "trace format"),
      key("workload.trace.time_scale", T::number, number_text(trace.time_scale), above(0.0, 1e6), "multiplies trace time (0.5 replays twice as fast)"),
      key("workload.trace.loop", T::boolean, boolean_text(trace.loop), kNone, "restart at the end (times continue) until num_requests / duration_s"),
      key("workload.trace.sort_arrivals", T::boolean, boolean_text(trace.sort_arrivals), kNone,
          "read the whole trace and replay its rows by arrival time (default: out-of-order rows are an error)"),
      key("workload.trace.prefix_tokens", T::integer, "none", kTokens,
          "jsonl: the length of each row's prefix_id where the row has no prefix_tokens; rows with one prefix_id share "
          "that many leading tokens in the prefix cache"),
      object("workload.prompt_tokens", "required (or classes)", "prompt length distribution: <length>"),
      object("workload.output_tokens", "required (or classes)", "output length distribution: <length>"),
      key("workload.classes", T::array, "one class", kNone, "several request classes in one run"),
      text("workload.classes[].name", "required", "class name (unique)"),
      key("workload.classes[].weight", T::number, "1", closed(0.0, 1e9), "relative frequency"),
      object("workload.classes[].prompt_tokens", "required", "<length>"),
      object("workload.classes[].output_tokens", "required", "<length>"),
      object("workload.classes[].slo", "the top-level slo", "<slo> for this class"),
      object("workload.shared_prefix", "none", "each request starts with one of num_prefixes system prompts (uniform)"),
      key("workload.shared_prefix.num_prefixes", T::integer, "required", closed(1.0, 1 << 20), "distinct shared prefixes"),
      key("workload.shared_prefix.prefix_tokens", T::integer, "required", kTokens, "tokens of each prefix"),
      key("workload.shared_prefix.prompts_per_prefix", T::integer, "0", closed(0.0, 1 << 20),
          "0: each request its own question; M > 0: a fixed pool of num_prefixes x M whole prompts, shuffled once and sent in "
          "turn over and over (inference-perf shared_prefix): repeats are whole-prompt prefix-cache hits"),
      object("workload.sessions", "none", "multi-turn conversations: turn j+1 arrives think_time_s after turn j completes"),
      key("workload.sessions.turns", T::integer, "required", closed(1.0, 1e6), "turns per conversation"),
      key("workload.sessions.think_time_s", T::number, "0", kTime, "pause between a turn's completion and the next turn"),
      key("workload.priority_class_weights", T::array, "one class", above(0.0, 1e300),
          "relative frequency of priority classes 0 (most urgent), 1, ...: 1 to 16 numbers"),

      // Length distributions.
      text("<length>.impl", "required", "distribution", "fixed|uniform|normal|lognormal|zipf|empirical|trace"),
      key("<length>.value_tokens", T::integer, "required", kTokens, "the length", "", "fixed"),
      key("<length>.min_tokens", T::integer, "1 (uniform: required)", kTokens, "lower bound (clamp)", "", "uniform|normal|lognormal|zipf"),
      key("<length>.max_tokens", T::integer, "required", kTokens, "upper bound (clamp)", "", "uniform|normal|lognormal|zipf"),
      key("<length>.mean_tokens", T::number, "required", kTokens, "mean before clamping", "", "normal|lognormal"),
      key("<length>.stddev_tokens", T::number, "required", closed(0.0, kMaxTokens), "standard deviation", "", "normal"),
      key("<length>.sigma", T::number, "required", closed(0.0, 5.0), "standard deviation of log length", "", "lognormal"),
      key("<length>.s", T::number, "required", closed(0.0, 10.0), "exponent: P(k) ~ k^-s over [min_tokens, max_tokens]", "", "zipf"),
      key("<length>.tokens", T::array, "required", kTokens, "lengths of an empirical histogram", "", "empirical"),
      key("<length>.weights", T::array, "required", closed(0.0, 1e300), "their weights (as long as tokens)", "", "empirical"),

      // Parallelism and deployment.
      object("parallel", "one GPU", "how a replica spreads over GPUs, and how many replicas"),
      key("parallel.tensor_parallel_size", T::integer, integer_text(parallel.tensor_parallel_size), kGpus, "GPUs per replica sharing each layer"),
      key("parallel.pipeline_parallel_size", T::integer, integer_text(parallel.pipeline_parallel_size), kGpus, "pipeline stages per replica"),
      key("parallel.data_parallel_size", T::integer, integer_text(parallel.data_parallel_size), kReplicas, "replicas behind the router"),
      key("parallel.num_micro_batches", T::integer, "pipeline_parallel_size", kGpus, "pipeline micro-batches in flight"),
      key("parallel.instances_per_gpu", T::integer, integer_text(parallel.instances_per_gpu), closed(1.0, 64.0),
          "model instances sharing each GPU (tp = pp = 1): memory split, iterations slowed by contention"),
      key("parallel.expert_parallel_size", T::integer, integer_text(parallel.expert_parallel_size), kGpus,
          "mixture of experts: GPUs of the tensor-parallel group the routed experts split over"),
      key("parallel.expert_load_imbalance", T::number, number_text(parallel.expert_load_imbalance), closed(1.0, 4096.0),
          "busiest expert-parallel GPU's routed tokens over the mean (1 = even)"),
      key("parallel.enable_attention_dp", T::boolean, boolean_text(parallel.enable_attention_dp), kNone,
          "mixture of experts: attention and all but the routed experts data parallel over the tensor_parallel_size GPUs, each its own "
          "share of the batch and KV cache; experts over all of them (expert_parallel_size = tensor_parallel_size), all-to-all per MoE "
          "layer (TensorRT-LLM enable_attention_dp, SGLang --enable-dp-attention)"),
      key("parallel.attention_dp_load_imbalance", T::number, number_text(parallel.attention_dp_load_imbalance), closed(1.0, 4096.0),
          "attention DP: the busiest rank's share of the batch over the mean (1 = dealt evenly); every step waits for it"),
      object("router", router.impl, "which replica a request goes to"),
      text("router.impl", router.impl, "router (servesim list routers)"),
      key("router.balance_abs_threshold", T::number, number_text(router.balance_abs_threshold), closed(0.0, 1e9),
          "prefix_affinity: fall back when the prefix's replica has this many more outstanding requests than the least loaded..."),
      key("router.balance_rel_threshold", T::number, number_text(router.balance_rel_threshold), closed(1.0, 1e9),
          "...and more than this times its load"),
      object("disaggregation", "none", "separate prefill and decode pools; KV copied from prefill to decode replicas"),
      object("disaggregation.prefill", "required", "<pool> of prefill replicas"),
      object("disaggregation.decode", "required", "<pool> of decode replicas"),
      text("disaggregation.kv_transfer_link", "auto", "link the KV cache crosses", "auto|nvlink|pcie|inter_node"),
      key("<pool>.replicas", T::integer, "required", kReplicas, "replicas in the pool"),
      key("<pool>.tensor_parallel_size", T::integer, "parallel.tensor_parallel_size", kGpus, "GPUs per replica sharing each layer"),
      key("<pool>.pipeline_parallel_size", T::integer, "parallel.pipeline_parallel_size", kGpus, "pipeline stages per replica"),
      object("cost_model", "calibrated", "what prices one iteration"),
      text("cost_model.impl", CostModelConfig{}.impl, "step cost model (servesim list cost-models)"),
      key("cost_model.interpolate_decode", T::boolean, boolean_text(CostModelConfig{}.interpolate_decode), kNone,
          "decode-only steps priced by interpolation in KV tokens between exact prices 2^-8..2^-7 apart: each within 2e-4 of exact, faster, not bit-identical"),
  };
}

}  // namespace

const std::vector<ScenarioKey>& scenario_keys() {
  static const std::vector<ScenarioKey> keys = build();
  return keys;
}

const std::vector<KeySchema>& key_schemas() {
  static const std::vector<KeySchema> schemas = {
      {"<length>", "workload.prompt_tokens, workload.output_tokens, workload.classes[].prompt_tokens, workload.classes[].output_tokens",
       "a token-length distribution; every kind but fixed and empirical is clamped to [min_tokens, max_tokens]"},
      {"<slo>", "slo, workload.classes[].slo", "latency targets at a percentile (0 = no target) and the success fraction they come with"},
      {"<pool>", "disaggregation.prefill, disaggregation.decode", "a pool of replicas"},
  };
  return schemas;
}

const ScenarioKey* find_scenario_key(const std::string& path) {
  for (const auto& k : scenario_keys()) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

const ScenarioKey* find_set_key(const std::string& dotted_path) {
  if (const ScenarioKey* k = find_scenario_key(dotted_path)) return k;
  // A key inside a sub-object declared once under its schema name: "<length>.mean_tokens" for
  // "workload.prompt_tokens.mean_tokens". Mounts inside arrays ("[]") are not reachable by --set.
  for (const KeySchema& s : key_schemas()) {
    std::size_t start = 0;
    while (start < s.mounts.size()) {
      const std::size_t comma = s.mounts.find(", ", start);
      const std::string mount = s.mounts.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? s.mounts.size() : comma + 2;
      if (dotted_path.size() > mount.size() && dotted_path.compare(0, mount.size(), mount) == 0 && dotted_path[mount.size()] == '.') {
        if (const ScenarioKey* k = find_scenario_key(s.name + dotted_path.substr(mount.size()))) return k;
      }
    }
  }
  return nullptr;
}

RegistryParam key_param(const std::string& path) {
  const ScenarioKey* k = find_scenario_key(path);
  if (!k) throw std::logic_error("registry parameter " + path + " is not a declared scenario key");
  return {k->path, k->choices.empty() ? key_type_name(k->type) : k->choices, k->default_text, k->help};
}

std::vector<const ScenarioKey*> keys_in(const std::string& object_path) {
  std::vector<const ScenarioKey*> out;
  const std::string prefix = object_path.empty() ? "" : object_path + ".";
  for (const auto& k : scenario_keys()) {
    if (k.path.size() > prefix.size() && k.path.compare(0, prefix.size(), prefix) == 0 &&
        k.path.find('.', prefix.size()) == std::string::npos) {
      out.push_back(&k);
    }
  }
  return out;
}

std::string scenario_keys_markdown(const RegisteredKeys& registered) {
  std::ostringstream md;
  md << "# Scenario keys\n\n"
     << "Every key a scenario file may hold. Generated by `servesim list keys` from the declarations in\n"
     << "`sim/config/scenario_keys.cpp` (ctest `scenario_keys_doc` fails when this file is stale).\n"
     << "Unknown keys, wrong types and values outside the range are errors naming the file and the key\n"
     << "(exit 2). `--set key.path=value` overrides any key from the command line, the value read as the\n"
     << "key's type: a string key takes the text as written, every other key takes JSON.\n\n"
     << "| key | type | default | range / values | meaning |\n| --- | --- | --- | --- | --- |\n";
  const auto row = [&md, &registered](const ScenarioKey& k) {
    std::string values;  // the choices of a string key, or the range of a numeric one
    for (const char c : k.choices) values += c == '|' ? std::string(", ") : std::string(1, c);
    if (const auto it = registered.values.find(k.path); it != registered.values.end()) {
      for (const auto& name : it->second) values += (values.empty() ? "" : ", ") + name;
    }
    if (values.empty() && !std::isinf(k.range.hi)) values = k.range.text();
    std::string when;
    for (const char c : k.when) when += c == '|' ? '/' : c;
    if (const auto it = registered.readers.find(k.path); it != registered.readers.end()) {
      for (const auto& name : it->second) when += (when.empty() ? "" : "/") + name;
    }
    std::string help = k.help;
    if (!when.empty()) help += " (impl " + when + ")";
    md << "| `" << k.path << "` | " << key_type_name(k.type) << " | " << k.default_text << " | " << values << " | " << help << " |\n";
  };
  for (const auto& k : scenario_keys()) {
    if (k.path[0] != '<') row(k);
  }
  for (const auto& s : key_schemas()) {
    md << "\n## " << s.name << "\n\n" << s.help << ". Appears at " << s.mounts << ".\n\n"
       << "| key | type | default | range / values | meaning |\n| --- | --- | --- | --- | --- |\n";
    for (const auto& k : scenario_keys()) {
      if (k.path.rfind(s.name + ".", 0) == 0) row(k);
    }
  }
  return md.str();
}

}  // namespace servesim
