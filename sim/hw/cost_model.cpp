// Roofline cost per kernel plus a launch model per step; see cost_model.hpp for the formulas.
#include "sim/hw/cost_model.hpp"

#include <algorithm>

namespace servesim {

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::launch: return "launch";
    case Bound::interconnect: return "interconnect";
  }
  return "?";
}

namespace {

// The FLOP rate and its achievable fraction for an op. GEMMs and attention run on tensor cores
// in the compute dtype; norms and elementwise ops on CUDA cores.
struct ComputeRate {
  double peak;
  double frac;
};

ComputeRate compute_rate(const Op& op, const HwProfile& hw, Dtype compute_dtype) {
  switch (op.kind) {
    case OpKind::gemm:
      return {hw.peak_flops(compute_dtype), hw.gemm_compute_frac_by_m.at(static_cast<double>(op.m))};
    case OpKind::attention_prefill:
    case OpKind::attention_decode: {
      // Attention runs in 16-bit even when GEMM weights are quantized.
      const double peak = hw.peak_flops(Dtype::bf16) > 0 ? hw.peak_flops(Dtype::bf16) : hw.peak_flops(Dtype::fp16);
      const double tokens = op.attn_seqs > 0 ? op.attn_kv_tokens : 1.0;
      return {peak, hw.attention_prefill_compute_frac_by_tokens.at(tokens)};
    }
    default:
      return {hw.vector_fp32_flops_per_s, 1.0};
  }
}

double bandwidth_frac(const Op& op, const HwProfile& hw) {
  if (op.kind == OpKind::attention_decode) return hw.attention_decode_bw_frac_by_bytes.at(op.bytes);
  return hw.memory_bw_frac_by_bytes.at(op.bytes);
}

}  // namespace

namespace {

// The measured roofline fraction for this op, or 0 when the profile has no table for it.
double measured_frac(const Op& op, const HwProfile& hw, Dtype compute_dtype) {
  if (op.kind == OpKind::gemm) {
    const GemmTable& table = hw.gemm_tables[static_cast<std::size_t>(compute_dtype)];
    if (!table.empty()) return table.frac(static_cast<double>(op.m), static_cast<double>(op.n), static_cast<double>(op.k));
  } else if (op.kind == OpKind::attention_decode && !hw.attention_decode_frac.empty() && op.attn_seqs > 0) {
    // Parallel work units (sequence x KV head) and context per sequence: what decides how well
    // a decode kernel fills the GPU, whatever the model's head count.
    const double units = static_cast<double>(op.attn_seqs * std::max<std::int64_t>(1, op.attn_kv_heads));
    const double context = op.attn_kv_tokens / static_cast<double>(op.attn_seqs);
    return hw.attention_decode_frac.at(units * context, context);
  }
  return 0.0;
}

}  // namespace

KernelTime estimate(const Op& op, const HwProfile& hw, Dtype compute_dtype) {
  KernelTime t;
  if (is_communication(op.kind)) {
    // NCCL's own latency term already covers its launch-to-completion floor.
    const Collective c = op.kind == OpKind::all_reduce ? Collective::all_reduce : Collective::all_gather;
    t.time_s = hw.interconnect.time_s(c, op.bytes, op.comm_gpus);
    const LinkModel& link = hw.interconnect.link(hw.interconnect.scope_for(op.comm_gpus));
    t.roofline_s = Interconnect::model_s(LinkModel{"", link.bus_bandwidth_bytes_per_s, 0.0, link.p2p_bandwidth_bytes_per_s, 0.0},
                                         c, op.bytes, op.comm_gpus);
    t.bound = Bound::interconnect;
    return t;
  }
  const ComputeRate rate = compute_rate(op, hw, compute_dtype);
  const double bw = hw.hbm_bandwidth_bytes_per_s;
  const double compute_floor_s = rate.peak > 0.0 ? op.flops / rate.peak : 0.0;
  const double memory_floor_s = op.bytes / bw;
  t.roofline_s = std::max(compute_floor_s, memory_floor_s);
  t.overhead_s = hw.kernel_overhead_s;
  if (const double frac = measured_frac(op, hw, compute_dtype); frac > 0.0) {
    // Calibrated: one measured fraction of the roofline covers both regimes.
    t.compute_s = compute_floor_s / frac;
    t.memory_s = memory_floor_s / frac;
  } else {
    if (op.flops > 0.0 && rate.peak > 0.0) t.compute_s = op.flops / (rate.peak * rate.frac);
    if (op.bytes > 0.0) t.memory_s = op.bytes / (bw * bandwidth_frac(op, hw));
  }
  const double busy = std::max(t.compute_s, t.memory_s);
  t.time_s = busy + t.overhead_s;
  if (t.overhead_s > busy) {
    t.bound = Bound::launch;
  } else {
    t.bound = t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
  }
  return t;
}

StepTime estimate_step(const std::vector<Op>& ops, const HwProfile& hw, Dtype compute_dtype,
                       const LaunchConfig& launch, std::int64_t batch_seqs) {
  StepTime s;
  for (const Op& op : ops) {
    const KernelTime k = estimate(op, hw, compute_dtype);
    const double n = static_cast<double>(op.count);
    s.gpu_s += n * k.time_s;
    s.roofline_s += n * k.roofline_s;
    s.flops += n * op.flops;
    if (is_communication(op.kind)) {
      s.comm_s += n * k.time_s;
    } else {
      s.bytes += n * op.bytes;  // HBM traffic only
    }
    s.kernels += op.count;
  }
  // The host issues launches while the GPU runs earlier kernels, so the two overlap: the step
  // takes the longer of the two. Host scheduling and sampling do not overlap (vLLM v0 style).
  s.launch_s = launch.cuda_graphs ? hw.graph_launch_s : static_cast<double>(s.kernels) * hw.kernel_launch_s;
  s.host_s = launch.host_overhead_per_step_s + static_cast<double>(batch_seqs) * launch.host_overhead_per_seq_s;
  s.launch_bound = s.launch_s > s.gpu_s;
  s.time_s = s.host_s + std::max(s.gpu_s, s.launch_s);
  return s;
}

}  // namespace servesim
