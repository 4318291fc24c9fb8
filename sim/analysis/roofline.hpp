// roofline: one iteration's ops against the hardware's roofline. Per op: FLOPs, bytes, arithmetic
// intensity, the bound the roofline predicts (against the ridge point), the datasheet-floor time,
// the cost model's predicted time, the fraction of peak achieved, and the gap split into
//   launch       fixed per-kernel cost (ramp-up, tail, inter-kernel gap)
//   small_shape  compute efficiency below 1 (tiles, waves, occupancy) when compute limits
//   bandwidth    achieved HBM bandwidth below the datasheet when memory limits.
// Step-level gaps (host overhead, launches the GPU waits on) are reported separately. And the
// figures a lecture uses: FLOP utilisation (achieved FLOP/s over the dense datasheet peak of the
// compute dtype, MFU) and achieved bandwidth (bytes over time, and its share of the datasheet HBM
// bandwidth), per op over its predicted time and per step over the step's time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/hw/cost_model.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

struct RooflineOp {
  std::string name;
  std::int64_t count = 0;
  double flops = 0.0, bytes = 0.0, arithmetic_intensity = 0.0;
  std::string bound;           // roofline bound: compute or memory (intensity vs ridge point)
  std::string achieved_bound;  // cost model: compute, memory or launch
  double roofline_time_s = 0.0, predicted_time_s = 0.0, peak_frac = 0.0;
  double gap_launch_s = 0.0, gap_small_shape_s = 0.0, gap_bandwidth_s = 0.0;
  double achieved_flops_per_s = 0.0, mfu_frac = 0.0;                    // flops / predicted time, over peak
  double achieved_bytes_per_s = 0.0, hbm_bandwidth_frac = 0.0;          // bytes / predicted time, over HBM
};

struct RooflineResult {
  double ridge_point_flops_per_byte = 0.0;
  std::vector<RooflineOp> ops;
  double step_time_s = 0.0, gpu_s = 0.0, roofline_s = 0.0, host_s = 0.0, launch_s = 0.0;
  double launch_wait_s = 0.0;  // time the GPU waits on launches (the step's launch queue)
  double attention_share_frac = 0.0;  // attention ops' share of GPU time
  // The three parts of the gap between the ops' roofline and their predicted time, summed over ops.
  double gap_launch_s = 0.0, gap_small_shape_s = 0.0, gap_bandwidth_s = 0.0;
  // The datasheet's peaks and the step's achieved rates (its FLOPs and bytes over its time).
  double peak_flops_per_s = 0.0, hbm_bandwidth_bytes_per_s = 0.0;
  double flops = 0.0, bytes = 0.0;
  double achieved_flops_per_s = 0.0, mfu_frac = 0.0, achieved_bytes_per_s = 0.0, hbm_bandwidth_frac = 0.0;
  // Short explanations where the result defies the intuition: launches hidden behind the GPU (so
  // CUDA graphs cannot help), quantized GEMMs bound by their kernel rather than their bytes.
  std::vector<std::string> why;
};

// The ops of one step and the step's time as `step` computes them (sim/analysis/step_query), so
// both commands give the same step time.
RooflineResult roofline(const std::vector<Op>& ops, const StepTime& step, const HwProfile& hw, Dtype compute_dtype,
                        QuantScheme quant = QuantScheme::none);

}  // namespace servesim
