// Scenario: everything one simulation run needs, as plain structs parsed strictly at the edge
// (sim/io/scenario_io.cpp). Defaults follow vLLM's where a vLLM name exists.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

struct ArrivalConfig {
  enum class Kind { poisson, gamma, constant, on_off, ramp, trace, all_at_once } kind = Kind::poisson;
  double rate_per_s = 0.0;        // poisson, gamma, constant; on_off: the rate while on
  double cv = 1.0;                // gamma: coefficient of variation of the gaps (1 = Poisson)
  double on_s = 0.0, off_s = 0.0; // on_off: burst and silence lengths
  double start_rate_per_s = 0.0, end_rate_per_s = 0.0, ramp_s = 0.0;  // ramp: linear, then flat
};

// A request trace read row by row (streaming). Formats: azure (TIMESTAMP, ContextTokens,
// GeneratedTokens), burstgpt, jsonl, splitwise (arrived_at, num_prefill_tokens, num_decode_tokens).
struct TraceConfig {
  std::string path;
  std::string format;
  double time_scale = 1.0;  // multiplies trace time (0.5 replays twice as fast)
  bool loop = false;        // restart at the end (times continue), until num_requests/duration
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

struct WorkloadConfig {
  std::int64_t num_requests = -1; // -1 (key absent): until duration_s or the trace ends
  double duration_s = 0.0;        // arrivals after this are not generated; 0 = no limit
  double request_timeout_s = 0.0; // a client gives up this long after sending; 0 = never
  ArrivalConfig arrival;
  std::optional<TraceConfig> trace;
  std::vector<RequestClass> classes;  // at least one; "default" when the file has no classes
  bool legacy_lengths = true;         // written back as top-level prompt/output_tokens
};

struct SchedulerConfig {
  std::string impl = "continuous";
};

struct EngineConfig {
  std::int64_t max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 0;  // 0 in the file means max(max_model_len, 2048), as vLLM
  std::int64_t block_size = 16;
  double gpu_memory_utilization = 0.9;
  std::int64_t max_model_len = 0;           // 0 in the file means the model's maximum context
  double watermark_frac = 0.01;
  std::int64_t max_queued_requests = 0;     // waiting requests beyond this are rejected; 0 = no limit (SGLang)             // KV blocks kept free when admitting prompts (vLLM)
  double runtime_overhead_bytes = 1.0 * (1ull << 30);  // CUDA context, cuBLAS workspace, graphs
  LaunchConfig launch;
  SchedulerConfig scheduler;
};

struct Scenario {
  std::string file;            // where it came from, for messages
  std::string name;
  std::uint64_t seed = 0;
  std::string model_ref;       // bundled name or path to a model card / HF config.json
  std::string hardware_ref;    // bundled name or path to a hardware profile
  Precision precision;
  EngineConfig engine;
  WorkloadConfig workload;
  // Resolved from the references above.
  ModelSpec model;
  HwProfile hw;
};

}  // namespace servesim
