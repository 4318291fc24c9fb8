// Grouped-GEMM cost; see moe_cost.hpp.
#include "sim/hw/moe_cost.hpp"

#include <algorithm>
#include <cmath>

namespace servesim {

KernelTime estimate_grouped_gemm(const Op& op, const HwProfile& hw, Dtype base) {
  Op dense = op;
  dense.kind = OpKind::gemm;
  dense.n = op.n * std::max<std::int64_t>(1, op.groups);
  dense.groups = 0;
  dense.tile_padding = 1.0;
  // The kernel computes its padded tiles (128 rows per expert), except a fused weight-only kernel
  // (Marlin, Machete, ...): its model already prices each tile of its own height (the weights
  // dequantized once per tile, the tensor-core work of a mostly empty tile small beside that), and
  // its MoE form pads an expert's rows to a block of 8-64 (vLLM's fused_marlin_moe), not 128, so
  // pricing 128-row tiles would count the empty rows' arithmetic, and their dequantization, again.
  const bool fused_weight_only = choose_gemm_kernel(dense, hw) == GemmKernel::weight_only_fused;
  const double tile_padding = fused_weight_only ? 1.0 : op.tile_padding;
  dense.flops = op.flops * tile_padding;
  KernelTime t = estimate(dense, hw, base);
  if (tile_padding > 1.0) {
    // The padded rows' arithmetic at the rate of a GEMM that many rows tall: the efficiency at
    // the unpadded rows per expert already counts their mostly empty tile, so pricing the padded
    // FLOPs at it would count the padding twice. Bytes stay the unpadded rows' (padding is not
    // loaded), so the memory side keeps the rate at m rows. Only where the taller GEMM runs the
    // same single kernel (a weight-only GEMM may switch kernels with m; a conversion pass has
    // its own time).
    Op tiles = dense;
    tiles.m = std::max<std::int64_t>(op.m, std::llround(static_cast<double>(op.m) * tile_padding));
    if (t.pass_s == 0.0 && choose_gemm_kernel(tiles, hw) == choose_gemm_kernel(dense, hw)) {
      const double busy_before = std::max(t.compute_s, t.memory_s);
      t.compute_s = estimate(tiles, hw, base).compute_s;
      const double busy = std::max(t.compute_s, t.memory_s);
      t.time_s += busy - busy_before;
      t.bound = t.overhead_s > busy ? Bound::launch : t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
    }
  }
  // The measured grouped kernel against that dense equivalent (the fp8 kernel's own table where the
  // profile measured it apart): its busy time (all but the fixed per-kernel cost) scales by 1 / frac,
  // and the kernel's own fixed time per launch, measured with the table, is added to the fixed cost.
  const bool fp8_kernel = op.quant == QuantScheme::fp8 && !hw.grouped_gemm_fp8_frac_by_tokens_per_expert.empty();
  const EfficiencyTable& table = fp8_kernel ? hw.grouped_gemm_fp8_frac_by_tokens_per_expert : hw.grouped_gemm_frac_by_tokens_per_expert;
  if (table.empty()) return t;
  const double frac = table.at(static_cast<double>(op.m));
  const double fixed_s = t.overhead_s;
  t.compute_s /= frac;
  t.memory_s /= frac;
  t.pass_s /= frac;
  const double kernel_fixed_s = fp8_kernel ? hw.grouped_gemm_fp8_fixed_s : hw.grouped_gemm_fixed_s;
  t.time_s = fixed_s + kernel_fixed_s + (t.time_s - fixed_s) / frac;
  if (kernel_fixed_s > 0.0) {
    t.overhead_s += kernel_fixed_s;
    const double busy = std::max(t.compute_s, t.memory_s);
    t.bound = t.overhead_s > busy ? Bound::launch : t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
  }
  return t;
}

}  // namespace servesim
