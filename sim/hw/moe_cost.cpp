// Grouped-GEMM cost; see moe_cost.hpp.
#include "sim/hw/moe_cost.hpp"

#include <algorithm>

namespace servesim {

KernelTime estimate_grouped_gemm(const Op& op, const HwProfile& hw, Dtype base) {
  Op dense = op;
  dense.kind = OpKind::gemm;
  dense.n = op.n * std::max<std::int64_t>(1, op.groups);
  dense.groups = 0;
  dense.flops = op.flops * op.tile_padding;  // the kernel computes its padded tiles
  dense.tile_padding = 1.0;
  KernelTime t = estimate(dense, hw, base);
  if (hw.grouped_gemm_frac_by_tokens_per_expert.empty()) return t;
  // The measured grouped kernel against that dense equivalent: its busy time (all but the fixed
  // per-kernel cost) scales by 1 / frac.
  const double frac = hw.grouped_gemm_frac_by_tokens_per_expert.at(static_cast<double>(op.m));
  const double fixed_s = t.overhead_s;
  t.compute_s /= frac;
  t.memory_s /= frac;
  t.pass_s /= frac;
  t.time_s = fixed_s + (t.time_s - fixed_s) / frac;
  return t;
}

}  // namespace servesim
