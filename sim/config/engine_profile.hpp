// EngineProfile: what a serving framework does to every step, independent of the model: how it
// cuts a layer into kernels, whether decode runs in CUDA graphs (and at which batch sizes), its
// host overhead, start-up costs and its default scheduler and KV strategy. Read from
// scenarios/engines/<name>.json (each number's source is in the file).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/hw/cost_model.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

struct ColdStartConfig {
  double disk_bandwidth_bytes_per_s = 2e9;   // weights read from local NVMe (safetensors, page cache cold)
  double cuda_context_s = 0.5;               // CUDA context + cuBLAS/NCCL handles
  double framework_init_s = 0.0;             // imports, model construction, profiling run, compile
  double graph_capture_s_per_batch_size = 0.0;
};

struct EngineProfile {
  std::string name;          // "" when the scenario names none
  std::string display_name;
  KernelPlan kernels;
  LaunchConfig launch;
  std::vector<std::int64_t> cuda_graph_batch_sizes;  // empty: every decode batch size is captured
  std::string scheduler = "continuous";              // the framework's own default policy
  std::string kv_cache = "paged";                    // paged, radix (prefix tree), token (block 1), contiguous
  std::int64_t block_size = 16;
  std::int64_t max_num_batched_tokens = 0;           // the engine's token budget per step (0: servesim's)
  ColdStartConfig cold_start;
};

// Padded decode batch under CUDA graphs: the next captured size >= seqs, or 0 when seqs exceeds
// every captured size (the step then runs eagerly, as vLLM does).
inline std::int64_t graph_batch_size(const std::vector<std::int64_t>& sizes, std::int64_t seqs) {
  if (sizes.empty()) return seqs;
  for (std::int64_t s : sizes) {
    if (s >= seqs) return s;
  }
  return 0;
}

// CUDA graphs for an iteration of `shape`, under an engine that captures them at
// `captured_sizes` (vLLM's rule): an iteration with a prefill launches its kernels eagerly
// (launch.cuda_graphs cleared); a decode batch runs in the graph of the next captured size,
// `shape` padded with empty decodes (context 0) up to it, or eagerly when it is larger than every
// captured size. The one place graph padding is written (the simulator and `servesim step`).
// A decode-only iteration also pays the engine's decode-step host work.
inline void apply_cuda_graphs(LaunchConfig& launch, const std::vector<std::int64_t>& captured_sizes, BatchShape& shape) {
  if (shape.prefill_seqs == 0) launch.host_overhead_per_step_s += launch.host_overhead_per_decode_step_s;
  if (shape.prefill_seqs > 0) {
    launch.cuda_graphs = false;
  } else if (launch.cuda_graphs) {
    const std::int64_t padded = graph_batch_size(captured_sizes, shape.decode_seqs);
    if (padded == 0) launch.cuda_graphs = false;
    for (std::int64_t i = shape.decode_seqs; i < padded; ++i) shape.add_decode(0);
  }
}

// The per-step host work of a replica of `tp` tensor-parallel GPUs: the engine's
// host_overhead_per_step_per_tp_worker_s for each worker beyond the first (vLLM 0.5.x's driver
// broadcasts every step's inputs to its workers before any of them can launch). The one place the
// term is applied (the simulator and `servesim step`).
inline void apply_tp_workers(LaunchConfig& launch, std::int64_t tp) {
  if (tp > 1) launch.host_overhead_per_step_s += static_cast<double>(tp - 1) * launch.host_overhead_per_step_per_tp_worker_s;
}

}  // namespace servesim
