// CostModel: op -> seconds. Pure functions, checkable by hand:
//   t = max(flops / (peak[dtype] * eff_compute), bytes / (hbm_bw * eff_bw)) + kernel_overhead
// per launch, with efficiencies interpolated from the profile's tables. Communication ops
// (tensor-parallel all-reduce/all-gather) take the interconnect's time instead (interconnect.hpp).
#pragma once
#include <vector>

#include "sim/hw/hw_profile.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

enum class Bound { compute, memory, launch, interconnect };
const char* bound_name(Bound b);

struct KernelTime {
  double time_s = 0.0;     // one launch
  double compute_s = 0.0;  // FLOPs over achievable FLOP rate
  double memory_s = 0.0;   // bytes over achievable bandwidth
  double overhead_s = 0.0; // fixed per-kernel cost
  double roofline_s = 0.0; // max(FLOPs/peak, bytes/peak bandwidth): the datasheet floor
  Bound bound = Bound::memory;
};

// Time of one launch of `op` on `hw`, with GEMMs run in `compute_dtype`.
KernelTime estimate(const Op& op, const HwProfile& hw, Dtype compute_dtype);

// How a step's kernels reach the GPU. Engine profiles (issue 5) extend this.
struct LaunchConfig {
  bool cuda_graphs = true;             // one graph launch per step instead of one launch per kernel
  double host_overhead_per_step_s = 0; // scheduling, input preparation: serial with the GPU
  double host_overhead_per_seq_s = 0;  // sampling, detokenisation per sequence in the batch
};

struct StepTime {
  double time_s = 0.0;          // wall time of the iteration
  double gpu_s = 0.0;           // sum of kernel times
  double launch_s = 0.0;        // host time issuing kernels (overlaps the GPU)
  double host_s = 0.0;          // host work serial with the GPU
  double roofline_s = 0.0;      // sum of datasheet floors
  double bytes = 0.0;           // total bytes moved
  double flops = 0.0;
  double comm_s = 0.0;          // part of gpu_s spent in collectives (tensor/pipeline parallel)
  double bubble_frac = 0.0;     // pipeline parallel: fraction of stage-time slots left idle
  std::int64_t kernels = 0;
  bool launch_bound = false;
};

StepTime estimate_step(const std::vector<Op>& ops, const HwProfile& hw, Dtype compute_dtype,
                       const LaunchConfig& launch, std::int64_t batch_seqs);

}  // namespace servesim
