// HBM contention between model instances sharing one GPU, at kernel granularity. Each instance
// runs its steps' kernels in order; kernels of different instances overlap and share the GPU by
// processor sharing: a kernel running alone uses a fraction of the achievable bandwidth (bw) and
// of the tensor/CUDA-core throughput (sm); while several run, all progress at the common speed
// min(1, 1/sum(bw), 1/sum(sm)). Completions are rescheduled whenever the running set changes.
// Latency-bound kernels (small, low bandwidth fraction) therefore overlap almost for free, and
// bandwidth-bound GEMVs split the bandwidth.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/hw/cost_model.hpp"

namespace servesim {

struct KernelWork {
  double alone_s = 0.0;  // duration when the GPU runs nothing else
  double bw = 0.0;       // share of achievable HBM bandwidth used while running alone, in [0, 1]
  double sm = 0.0;       // share of achievable compute used while running alone, in [0, 1]
  double issue_s = 0.0;  // host issue time, from the start of the step's launches
};

// The step's kernels in execution order (layers unrolled), with their resource shares.
std::vector<KernelWork> kernel_stream(const std::vector<Op>& ops, const HwProfile& hw, Dtype base,
                                      const LaunchConfig& launch);

struct InstanceResult {
  double mean_step_s = 0.0;
  std::int64_t steps = 0;
};

// Runs `steps` identical steps on every instance (each instance: host_pre, its kernel stream,
// host_post, repeat), all instances starting together; returns each instance's mean step time.
// One instance reproduces estimate_step's time exactly.
std::vector<InstanceResult> simulate_shared_gpu(const std::vector<std::vector<KernelWork>>& streams,
                                                const std::vector<LaunchConfig>& launches, std::int64_t steps);

}  // namespace servesim
