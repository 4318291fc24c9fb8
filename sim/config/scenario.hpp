// Scenario: everything one simulation run needs, as plain structs parsed strictly at the edge
// (sim/io/scenario_io.cpp). Defaults follow vLLM's where a vLLM name exists.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/engine_profile.hpp"
#include "sim/config/trace_rows.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/hw/hw_profile.hpp"
#include "sim/model/model_spec.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

// Token-length distribution of prompts or outputs. Every kind is clamped to [min_tokens, max_tokens].
struct LengthDist {
  enum class Kind { fixed, uniform, normal, lognormal, zipf, empirical, trace } kind = Kind::fixed;
  std::int64_t value_tokens = 0;   // fixed
  std::int64_t min_tokens = 1;     // uniform bounds; clamp of every other kind
  std::int64_t max_tokens = 0;
  double mean_tokens = 0.0;        // normal and lognormal mean (before clamping)
  double stddev_tokens = 0.0;      // normal
  double sigma = 0.0;              // lognormal shape (std of log length)
  double zipf_s = 0.0;             // zipf: P(k) ~ k^-s over k in [min_tokens, max_tokens]
  std::vector<std::int64_t> tokens;  // empirical histogram: values ...
  std::vector<double> weights;       // ... and their (unnormalised) weights
};

// One stage of a staged load (inference-perf's load.stages): arrivals at rate_per_s, evenly
// spaced (constant) or Poisson, for duration_s.
struct ArrivalStage {
  bool poisson = false;
  double rate_per_s = 0.0;
  double duration_s = 0.0;
};

struct ArrivalConfig {
  enum class Kind { poisson, gamma, constant, on_off, ramp, trace, all_at_once, concurrency, stages } kind = Kind::poisson;
  double rate_per_s = 0.0;        // poisson, gamma, constant; on_off: the rate while on
  double cv = 1.0;                // gamma: coefficient of variation of the gaps (1 = Poisson)
  double on_s = 0.0, off_s = 0.0; // on_off: burst and silence lengths
  double start_rate_per_s = 0.0, end_rate_per_s = 0.0, ramp_s = 0.0;  // ramp: linear, then flat
  // concurrency (closed loop): `clients` clients send their first request at t = 0 and each
  // sends its next one think_time_s after its previous one left (completed, rejected or timed
  // out), so at most `clients` requests are outstanding (vllm bench serve --max-concurrency N
  // with request rate inf, GenAI-Perf --concurrency N, inference-perf's concurrent load).
  std::int64_t clients = 0;
  double think_time_s = 0.0;
  // stages: one after the other, stage_gap_s of silence between two.
  std::vector<ArrivalStage> stages;
  double stage_gap_s = 0.0;
  bool closed_loop() const { return kind == Kind::concurrency; }
};

// A request trace read row by row (streaming). Formats: azure (TIMESTAMP, ContextTokens,
// GeneratedTokens), burstgpt, jsonl, splitwise (arrived_at, num_prefill_tokens, num_decode_tokens).
struct TraceConfig {
  std::string path;
  std::string format;
  double time_scale = 1.0;  // multiplies trace time (0.5 replays twice as fast)
  bool loop = false;        // restart at the end (times continue), until num_requests/duration
  bool sort_arrivals = false;  // read the whole trace and replay it by arrival time (default: strict order)
  // The length of every row's prefix_id (jsonl) where the row gives no prefix_tokens; 0: none,
  // and a row with a prefix id but no length shares nothing.
  std::int64_t prefix_tokens = 0;
  TraceOpener open;            // set by the parser (io/scenario_io): a reader of the file's rows
  // Replay the trace's requests resampled with replacement, drawn from the scenario's seed
  // (workload/trace_bootstrap.hpp): run --replications sets it on the replications after the
  // first. Not a scenario key.
  bool bootstrap = false;
};

// Latency targets at a percentile, plus the success rate they must come with. 0 = no target.
struct SloConfig {
  double ttft_s = 0.0, tpot_s = 0.0, e2e_s = 0.0;
  double percentile = 0.99;
  double min_success_frac = 0.999;
  bool has_latency_target() const { return ttft_s > 0.0 || tpot_s > 0.0 || e2e_s > 0.0; }
};

struct RequestClass {
  std::string name = "default";
  double weight = 1.0;
  LengthDist prompt_tokens;
  LengthDist output_tokens;
  SloConfig slo;
};

// System prompts shared by many requests: each request draws one of num_prefixes uniformly and
// its prompt is prefix_tokens of that prefix followed by its own prompt_tokens.
// With prompts_per_prefix M > 0 the workload is a fixed pool of num_prefixes x M whole prompts
// (each prefix followed by one of M questions whose lengths are drawn once), shuffled once and
// sent in that order over and over, as inference-perf's shared_prefix generator does
// (kubernetes-sigs/inference-perf v0.2.0, inference_perf/datagen/shared_prefix_datagen.py): a
// prompt sent again is a whole-prompt prefix-cache hit.
struct SharedPrefixConfig {
  std::int64_t num_prefixes = 0;  // 0: no shared prefix
  std::int64_t prefix_tokens = 0;
  std::int64_t prompts_per_prefix = 0;  // 0: every request has its own question
};

// Multi-turn chat (closed loop): the arrival process starts sessions; each later turn arrives
// think_time_s after the previous turn completes, and its prompt is the whole conversation so far
// (shared prefix, earlier prompts and answers) plus a new prompt_tokens draw.
struct SessionConfig {
  std::int64_t turns = 1;  // 1: every request is its own conversation
  double think_time_s = 0.0;
};

struct WorkloadConfig {
  // All requests, later turns of sessions included; -1 (key absent): until duration_s or the trace ends.
  std::int64_t num_requests = -1;
  double duration_s = 0.0;        // arrivals after this are not generated; 0 = no limit
  double request_timeout_s = 0.0; // a client gives up this long after sending; 0 = never
  ArrivalConfig arrival;
  std::optional<TraceConfig> trace;
  std::vector<RequestClass> classes;  // at least one; "default" when the file has no classes
  bool legacy_lengths = true;         // written back as top-level prompt/output_tokens
  SharedPrefixConfig shared_prefix;
  SessionConfig sessions;
  // Relative frequency of each priority class (class 0 is the most urgent); empty: one class.
  std::vector<double> priority_class_weights;
};

// How one replica spreads over GPUs and how many replicas serve (vLLM names). A replica uses
// tensor_parallel_size x pipeline_parallel_size GPUs; data parallelism is replicas behind a router.
struct ParallelConfig {
  std::int64_t tensor_parallel_size = 1;
  std::int64_t pipeline_parallel_size = 1;
  std::int64_t data_parallel_size = 1;
  std::int64_t num_micro_batches = 0;  // pipeline micro-batches in flight; 0 = pipeline_parallel_size
  std::int64_t instances_per_gpu = 1;  // model instances sharing each GPU (tp = pp = 1), memory split evenly
  // Mixture-of-experts models: routed experts split over this many GPUs of the tensor-parallel
  // group (must divide tensor_parallel_size and the expert count), with all-to-all dispatch and
  // combine; and the busiest expert-parallel GPU's routed tokens over the mean (1 = even).
  std::int64_t expert_parallel_size = 1;
  double expert_load_imbalance = 1.0;
  // Attention data parallelism (TensorRT-LLM enable_attention_dp, SGLang --enable-dp-attention):
  // each of the replica's tensor_parallel_size GPUs runs attention, and every other part outside
  // the routed experts (embedding, norms, dense MLPs, shared experts, LM head), for its own share
  // of the batch with whole weights and a KV cache of its own; the routed experts split over all
  // of them (expert_parallel_size = tensor_parallel_size) and every MoE layer dispatches tokens to
  // their experts' GPUs and combines them back by all-to-all. The step waits for the busiest
  // rank: attention_dp_load_imbalance is its share of the batch over the mean (1: the batch dealt
  // evenly, sequence counts rounded up).
  bool enable_attention_dp = false;
  double attention_dp_load_imbalance = 1.0;
  std::int64_t gpus_per_replica() const { return tensor_parallel_size * pipeline_parallel_size; }
  // Ranks with a batch of their own (1 without attention DP), and the tensor-parallel split of
  // the parts outside the routed experts.
  std::int64_t attention_dp_size() const { return enable_attention_dp ? tensor_parallel_size : 1; }
  std::int64_t attention_tp() const { return enable_attention_dp ? 1 : tensor_parallel_size; }
  MoeRouting moe_routing() const { return {expert_parallel_size, expert_load_imbalance, attention_dp_size()}; }
  std::int64_t micro_batches() const { return num_micro_batches > 0 ? num_micro_batches : pipeline_parallel_size; }
  bool operator==(const ParallelConfig&) const = default;
};

// Request routing across replicas; policies in sim/serve/router.hpp.
struct RouterConfig {
  std::string impl = "round_robin";
  // prefix_affinity falls back to least outstanding requests when the prefix's replica has more
  // than balance_abs_threshold outstanding requests above the least loaded one and more than
  // balance_rel_threshold times its load (SGLang router names).
  double balance_abs_threshold = 32;
  double balance_rel_threshold = 1.5;
};

// Disaggregated prefill and decode pools (Splitwise / DistServe): prompts run on prefill
// replicas, their KV cache is copied over the interconnect to a decode replica, which generates.
struct PoolConfig {
  std::int64_t replicas = 1;
  std::int64_t tensor_parallel_size = 1;
  std::int64_t pipeline_parallel_size = 1;
};
struct DisaggregationConfig {
  bool enabled = false;
  PoolConfig prefill, decode;
  std::string kv_transfer_link = "auto";  // auto, nvlink, pcie, inter_node
};

// Batching policy and its parameters (`servesim list policies`). Policy-specific keys are only
// accepted for the policy that reads them.
struct SchedulerConfig {
  std::string impl = "continuous";
  enum class Order { fcfs, priority } order = Order::fcfs;  // key scheduling_policy, as vLLM
  std::int64_t max_queue_size = 0;     // 0: unbounded; else arrivals beyond it are rejected
  double max_waiting_time_s = 0.0;     // 0: none; else requests not started by then are dropped
  // static
  std::int64_t batch_size = 8;
  double batch_timeout_s = 0.1;
  // dynamic (Triton dynamic batcher)
  std::int64_t max_batch_size = 8;
  double max_queue_delay_s = 0.01;
  // chunked-prefill: 0 means no cap beyond max_num_batched_tokens
  std::int64_t long_prefill_token_threshold = 0;
  // token-level: output tokens assumed for each request at admission (LightLLM's max_new_tokens)
  std::int64_t expected_output_tokens = 512;
};

enum class KvReservation { paged, contiguous, token };
enum class PreemptionMode { recompute, swap };
inline const char* kv_reservation_name(KvReservation r) {
  return r == KvReservation::paged ? "paged" : r == KvReservation::contiguous ? "contiguous" : "token";
}
inline const char* preemption_mode_name(PreemptionMode m) { return m == PreemptionMode::swap ? "swap" : "recompute"; }

// Speculative decoding (vLLM's speculative_config): each step a drafter proposes
// num_speculative_tokens (k) tokens per decoding sequence, the target verifies them in one pass
// over k + 1 query tokens per sequence, and each draft is accepted with probability
// acceptance_rate (alpha) when the ones before it were (model/speculative.hpp). The method names
// an entry of speculative_methods(); the parser resolves the drafter's architecture from it.
struct SpeculativeConfig {
  std::string method;  // "": off
  std::int64_t num_speculative_tokens = 0;
  double acceptance_rate = 0.0;
  std::string draft_model_ref;  // draft_model: the card named by engine.speculative.draft_model
  // Resolved from the method (parse_scenario): the drafter's architecture, whether it shares the
  // target's embedding and LM head (a head: its own weights are its layer and a 2H -> H fc), and
  // whether it is quantized as the target (else it runs in the 16-bit base dtype).
  ModelSpec drafter;
  bool shares_embeddings = false;
  bool target_precision = false;
  bool enabled() const { return !method.empty(); }
  Precision precision(const Precision& target) const {
    if (target_precision) return target;
    return Precision{target.weights, target.activations, target.kv_cache, QuantScheme::none, target.group_size};
  }
};

// KV offload tiers (vLLM's OffloadingConnector, --kv-offloading-size; LMCache's local CPU and disk
// backends): cached prefix blocks the GPU evicts are kept in host memory, then on disk, and a
// prompt whose next blocks are there loads them instead of computing them (kv/offload_tiers.hpp,
// sched/replica_state.cpp). Sizes are per GPU, as swap_space_bytes. Off while cpu_bytes is 0.
struct KvOffloadConfig {
  double cpu_bytes = 0.0;
  double cpu_bandwidth_bytes_per_s = 0.0;  // 0: the hardware's host link (PCIe, or NVLink-C2C)
  double disk_bytes = 0.0;
  double disk_bandwidth_bytes_per_s = 0.0;
  // async: a request waits out its load while the batch runs on (vLLM's OffloadingConnector);
  // blocking: the load is copied before the next forward pass, which waits for it (LMCache's
  // default retrieval).
  bool blocking_load = false;
  bool enabled() const { return cpu_bytes > 0.0; }
};

struct EngineConfig {
  // The engine a scenario (or `servesim step`) runs when it names none: vLLM V1, what people
  // serve with; `generic` is servesim's former unnamed default.
  static constexpr const char* kDefaultProfile = "vllm";
  // Host work serial with the GPU when the scenario names no engine profile (vLLM-like scheduling
  // and input preparation per step, sampling per sequence); `step` and `roofline` use them too.
  static constexpr double kDefaultHostOverheadPerStepS = 4e-4, kDefaultHostOverheadPerSeqS = 5e-6;
  std::int64_t max_num_seqs = 256;
  // vLLM V0 multi-step scheduling (--num-scheduler-steps, vLLM 0.5.5-0.6.x): the scheduler runs
  // once per window of this many decode steps (sched/continuous.cpp); 1 = every step.
  std::int64_t num_scheduler_steps = 1;
  std::int64_t max_num_batched_tokens = 0;  // 0 in the file means max(max_model_len, 2048), as vLLM
  std::int64_t block_size = 16;
  double gpu_memory_utilization = 0.9;
  std::int64_t max_model_len = 0;           // 0 in the file means the model's maximum context
  double watermark_frac = 0.01;             // KV blocks kept free when admitting prompts (vLLM)
  // paged: blocks on demand; contiguous: max_model_len per sequence at admission (static-cache
  // engines); token: one-token allocation units (LightLLM's token attention).
  KvReservation kv_reservation = KvReservation::paged;
  bool enable_prefix_caching = false;
  PreemptionMode preemption_mode = PreemptionMode::recompute;
  double swap_space_bytes = 4.0 * (1ull << 30);  // host memory for swapped-out KV (vLLM: 4 GiB)
  double runtime_overhead_bytes = 1.0 * (1ull << 30);  // CUDA context, cuBLAS workspace, graphs
  LaunchConfig launch;
  SchedulerConfig scheduler;
  SpeculativeConfig speculative;
  KvOffloadConfig kv_offload;
  EngineProfile profile;  // kernels per layer, captured batch sizes, cold start (engine.profile)
  double frontend_latency_s = 0.0;  // the server's latency outside the steps (EngineProfile's, or the key)
  // Whether the scenario file set the two limits itself (otherwise the engine's per-GPU defaults,
  // EngineProfile::gpu_sized, apply once the hardware is known).
  bool max_num_seqs_set = false, max_num_batched_tokens_set = false;
};

// The engine's per-GPU limits (EngineProfile::gpu_sized) where the scenario set none, on `hw`.
inline void apply_gpu_sized_defaults(EngineConfig& e, const HwProfile& hw) {
  const GpuSizedDefaults& g = e.profile.gpu_sized;
  if (g.min_memory_bytes <= 0.0 || static_cast<double>(hw.memory_bytes) < g.min_memory_bytes) return;
  for (const std::string& a : g.except_architectures) {
    if (a == hw.architecture) return;
  }
  if (!e.max_num_seqs_set) e.max_num_seqs = g.max_num_seqs;
  if (!e.max_num_batched_tokens_set) e.max_num_batched_tokens = g.max_num_batched_tokens;
}

// Which StepCostModel prices a replica's iterations (serve/step_cost.hpp).
struct CostModelConfig {
  std::string impl = "calibrated";
  // Decode-only steps priced by linear interpolation in KV tokens between exact prices at grid
  // points 2^-7 apart (relative), cached per batch size (InterpolatedDecodeCost, step_cost.cpp):
  // faster, and no longer bit-identical to the exact model. Off by default.
  bool interpolate_decode = false;
};

struct Scenario {
  std::string file;            // where it came from, for messages
  std::string name;
  std::uint64_t seed = 0;
  std::string model_ref;       // bundled name or path to a model card / HF config.json
  std::string hardware_ref;    // bundled name or path to a hardware profile
  Precision precision;
  bool quant_emulated = false;  // the GPU lacks the w8a8 format: weights converted at run time
  std::int64_t instances = 1;   // model instances sharing each GPU (= parallel.instances_per_gpu):
                                // memory split evenly, iterations slowed by contention (gpu_share.hpp)
  EngineConfig engine;
  WorkloadConfig workload;
  ParallelConfig parallel;
  RouterConfig router;
  DisaggregationConfig disaggregation;
  CostModelConfig cost_model;
  // Resolved from the references above.
  ModelSpec model;
  HwProfile hw;
};

}  // namespace servesim
