// See roofline.hpp.
#include "sim/analysis/roofline.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/io/describe.hpp"
#include "sim/model/quant.hpp"

namespace servesim {

namespace {
std::string percent(double frac) {
  char buf[32];
  std::snprintf(buf, sizeof buf, frac < 0.1 ? "%.1f%%" : "%.0f%%", 100.0 * frac);
  return buf;
}

bool is_gemm(const std::string& name) {
  return name.size() > 5 && (name.compare(name.size() - 5, 5, "_proj") == 0 || name == "lm_head");
}

// The "why" lines (RooflineResult::why).
void explain(RooflineResult& r, QuantScheme quant) {
  // Launches hidden: the host issues this step's kernels while the GPU runs earlier ones, and the
  // GPU waits on them for little of the step: removing launches (CUDA graphs) saves at most that.
  if (r.launch_s > 0.05 * r.step_time_s && r.launch_wait_s < 0.1 * r.launch_s) {
    r.why.push_back("launching this step's kernels takes the host " + format_duration(r.launch_s) + ", overlapped with " +
                    format_duration(r.gpu_s) + " of GPU work; the GPU waits on launches only " + format_duration(r.launch_wait_s) +
                    ", so CUDA graphs (which remove launches) could save at most that here: eager is not slower while the GPU is the "
                    "bottleneck");
  } else if (r.launch_wait_s > 0.1 * r.step_time_s) {
    r.why.push_back("the GPU waits " + format_duration(r.launch_wait_s) + " of the step on kernel launches (" + percent(r.launch_wait_s / r.step_time_s) +
                    "): CUDA graphs, which replay the step without launching each kernel, would remove most of it");
  }
  // Quantized GEMMs on memory-bound shapes that reach well below the datasheet bandwidth: their
  // time is the kernel's (dequantization, scale epilogue, tiles sized for larger batches), not
  // their bytes, so halving the bytes does not halve the time.
  if (quant == QuantScheme::none) return;
  double bytes = 0.0, time_s = 0.0;
  for (const RooflineOp& o : r.ops) {
    if (is_gemm(o.name) && o.bound == "memory") bytes += o.bytes, time_s += o.predicted_time_s;
  }
  const double frac = time_s > 0.0 ? bytes / time_s / r.hbm_bandwidth_bytes_per_s : 1.0;
  if (frac < 0.6) {
    r.why.push_back("the " + std::string(quant_name(quant)) + " GEMMs move fewer bytes but stream them at only " + percent(frac) +
                    " of the HBM bandwidth (the engine's quantized kernel as timed for this GPU): at this batch they are bound by the "
                    "kernel (dequantization, scale epilogue, tiles sized for larger batches), not by their bytes, so they gain less over "
                    "16-bit weights than the bytes they save");
  }
}
}  // namespace

RooflineResult roofline(const std::vector<Op>& ops, const StepTime& step, const HwProfile& hw, Dtype dtype, QuantScheme quant) {
  RooflineResult r;
  r.ridge_point_flops_per_byte = hw.ridge_point(dtype);
  r.peak_flops_per_s = hw.peak_flops(dtype);
  r.hbm_bandwidth_bytes_per_s = hw.hbm_bandwidth_bytes_per_s;
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
    if (o.predicted_time_s > 0.0) {
      o.achieved_flops_per_s = o.flops / o.predicted_time_s;
      o.achieved_bytes_per_s = o.bytes / o.predicted_time_s;
      o.mfu_frac = r.peak_flops_per_s > 0.0 ? o.achieved_flops_per_s / r.peak_flops_per_s : 0.0;
      o.hbm_bandwidth_frac = r.hbm_bandwidth_bytes_per_s > 0.0 ? o.achieved_bytes_per_s / r.hbm_bandwidth_bytes_per_s : 0.0;
    }
    r.flops += o.flops;
    r.bytes += o.bytes;
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
  if (r.step_time_s > 0.0) {
    r.achieved_flops_per_s = r.flops / r.step_time_s;
    r.achieved_bytes_per_s = r.bytes / r.step_time_s;
    r.mfu_frac = r.peak_flops_per_s > 0.0 ? r.achieved_flops_per_s / r.peak_flops_per_s : 0.0;
    r.hbm_bandwidth_frac = r.hbm_bandwidth_bytes_per_s > 0.0 ? r.achieved_bytes_per_s / r.hbm_bandwidth_bytes_per_s : 0.0;
  }
  explain(r, quant);
  return r;
}

}  // namespace servesim
