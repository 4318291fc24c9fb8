// Cost of a grouped (mixture-of-experts) GEMM: one launch that runs the GEMM of every active
// expert (Op::groups of them, Op::m token rows each, weights n x k each), as vLLM's fused_moe,
// SGLang's and TensorRT-LLM's grouped kernels do.
#pragma once
#include "sim/hw/cost_model.hpp"

namespace servesim {

// Timed as the dense GEMM of shape (m, groups x n, k) with the grouped op's FLOPs (times its
// tile padding) and bytes: the same output tiles, weight bytes and arithmetic, so the same
// kernel choice (w8a8, FP4, emulated, weight-only) and the profile's GEMM efficiency at m rows
// per expert on the memory side; the padded FLOPs run at the efficiency of a GEMM as tall as the
// padded rows (the rate at m rows already counts m's own mostly empty tile). Where the
// profile carries a measured grouped-GEMM table (calibration.grouped_gemm), the kernel's
// efficiency relative to that dense equivalent, fitted over tokens per expert, scales it (an fp8
// grouped GEMM takes the fp8 kernel's table where the profile has one).
KernelTime estimate_grouped_gemm(const Op& op, const HwProfile& hw, Dtype base);

}  // namespace servesim
