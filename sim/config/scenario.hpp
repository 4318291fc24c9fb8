// Scenario: everything one simulation run needs, as plain structs parsed strictly at the edge
// (sim/io/scenario_io.cpp). Defaults follow vLLM's where a vLLM name exists.
#pragma once
#include <cstdint>
#include <string>

#include "sim/config/engine_profile.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/hw/hw_profile.hpp"
#include "sim/model/model_spec.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

struct LengthDist {
  enum class Kind { fixed, uniform, lognormal } kind = Kind::fixed;
  std::int64_t value_tokens = 0;   // fixed
  std::int64_t min_tokens = 1;     // uniform bounds; lognormal clamp
  std::int64_t max_tokens = 0;
  double mean_tokens = 0.0;        // lognormal mean before clamping
  double sigma = 0.0;              // lognormal shape (std of log length)
};

struct ArrivalConfig {
  enum class Kind { poisson, all_at_once } kind = Kind::poisson;
  double rate_per_s = 0.0;
};

struct WorkloadConfig {
  std::int64_t num_requests = 0;
  ArrivalConfig arrival;
  LengthDist prompt_tokens;
  LengthDist output_tokens;
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
  double watermark_frac = 0.01;             // KV blocks kept free when admitting prompts (vLLM)
  double runtime_overhead_bytes = 1.0 * (1ull << 30);  // CUDA context, cuBLAS workspace, graphs
  LaunchConfig launch;
  SchedulerConfig scheduler;
  EngineProfile profile;  // kernels per layer, captured batch sizes, cold start (engine.profile)
};

struct Scenario {
  std::string file;            // where it came from, for messages
  std::string name;
  std::uint64_t seed = 0;
  std::string model_ref;       // bundled name or path to a model card / HF config.json
  std::string hardware_ref;    // bundled name or path to a hardware profile
  Precision precision;
  bool quant_emulated = false;  // the GPU lacks the w8a8 format: weights converted at run time
  std::int64_t instances = 1;   // model instances sharing the GPU (memory split evenly); `run` simulates
                                // one (contention between instances: `servesim contention`)
  EngineConfig engine;
  WorkloadConfig workload;
  // Resolved from the references above.
  ModelSpec model;
  HwProfile hw;
};

}  // namespace servesim
