// Grouped-GEMM cost; see moe_cost.hpp.
#include "sim/hw/moe_cost.hpp"

#include <algorithm>

namespace servesim {

KernelTime estimate_grouped_gemm(const Op& op, const HwProfile& hw, Dtype base) {
  Op dense = op;
  dense.kind = OpKind::gemm;
  dense.n = op.n * std::max<std::int64_t>(1, op.groups);
  dense.groups = 0;
  return estimate(dense, hw, base);
}

}  // namespace servesim
