// Memoised contention slowdown for instances sharing a GPU; see gpu_share.hpp.
#include "sim/serve/gpu_share.hpp"

#include <algorithm>
#include <cmath>

#include "sim/hw/contention.hpp"
#include "sim/hw/cost_model.hpp"

namespace servesim {

GpuShare::GpuShare(const Scenario& scenario, double mean_context_tokens)
    : scenario_(scenario), context_tokens_(std::max<std::int64_t>(1, std::llround(mean_context_tokens))) {}

double GpuShare::slowdown(std::int64_t running, const BatchShape& shape) {
  if (running <= 1) return 1.0;
  // Bucket: the next power of two of the decode batch (positive) or of the prefill tokens (negative).
  const bool prefill = shape.prefill_tokens > 0;
  std::int64_t size = 1;
  while (size < (prefill ? shape.prefill_tokens + shape.decode_seqs : shape.decode_seqs)) size *= 2;
  const auto key = std::make_pair(running, prefill ? -size : size);
  if (const auto it = factors_.find(key); it != factors_.end()) return it->second;

  BatchShape probe;
  if (prefill) {
    probe.add_prefill(size, 0, true);
  } else {
    for (std::int64_t i = 0; i < size; ++i) probe.add_decode(context_tokens_);
  }
  std::vector<Op> ops;
  build_iteration_ops(scenario_.model, probe, scenario_.precision, ops, scenario_.engine.profile.kernels);
  LaunchConfig launch = scenario_.engine.launch;
  launch.cuda_graphs = launch.cuda_graphs && !prefill;
  const std::vector<KernelWork> stream = kernel_stream(ops, scenario_.hw, scenario_.precision.weights, launch);
  constexpr std::int64_t kSteps = 4;
  const double alone = simulate_shared_gpu({stream}, {launch}, kSteps).front().mean_step_s;
  const auto n = static_cast<std::size_t>(running);
  const auto shared = simulate_shared_gpu(std::vector<std::vector<KernelWork>>(n, stream), std::vector<LaunchConfig>(n, launch), kSteps);
  const double factor = alone > 0.0 ? std::max(1.0, shared.front().mean_step_s / alone) : 1.0;
  factors_.emplace(key, factor);
  return factor;
}

}  // namespace servesim
