// See roofline.hpp.
#include "sim/analysis/roofline.hpp"

#include <algorithm>

namespace servesim {

RooflineResult roofline(const std::vector<Op>& ops, const StepTime& step, const HwProfile& hw, Dtype dtype) {
  RooflineResult r;
  r.ridge_point_flops_per_byte = hw.ridge_point(dtype);
  double attention_s = 0.0;
  for (const Op& op : ops) {
    const KernelTime k = estimate(op, hw, dtype);
    const double n = static_cast<double>(op.count);
    RooflineOp o;
    o.name = op.name;
    o.count = op.count;
    o.flops = n * op.flops;
    o.bytes = n * op.bytes;
    o.arithmetic_intensity = op.bytes > 0.0 ? op.flops / op.bytes : 0.0;
    o.bound = o.arithmetic_intensity > r.ridge_point_flops_per_byte ? "compute" : "memory";
    o.achieved_bound = bound_name(k.bound);
    o.roofline_time_s = n * k.roofline_s;
    o.predicted_time_s = n * k.time_s;
    o.peak_frac = o.predicted_time_s > 0.0 ? o.roofline_time_s / o.predicted_time_s : 0.0;
    o.gap_launch_s = n * k.overhead_s;
    const double efficiency_gap = n * std::max(0.0, std::max(k.compute_s, k.memory_s) - k.roofline_s);
    (k.compute_s >= k.memory_s ? o.gap_small_shape_s : o.gap_bandwidth_s) = efficiency_gap;
    if (op.kind == OpKind::attention_decode || op.kind == OpKind::attention_prefill) attention_s += o.predicted_time_s;
    r.gap_launch_s += o.gap_launch_s;
    r.gap_small_shape_s += o.gap_small_shape_s;
    r.gap_bandwidth_s += o.gap_bandwidth_s;
    r.ops.push_back(o);
  }
  r.step_time_s = step.time_s;
  r.gpu_s = step.gpu_s;
  r.roofline_s = step.roofline_s;
  r.host_s = step.host_s;
  r.launch_s = step.launch_s;
  r.launch_wait_s = step.launch_wait_s;
  r.attention_share_frac = step.gpu_s > 0.0 ? attention_s / step.gpu_s : 0.0;
  return r;
}

}  // namespace servesim
