// Quantization schemes (vLLM's `quantization` vocabulary): what one weight costs in memory, which
// format the GEMM computes in, and which kernel family runs it. Pure data; the time is in the
// cost model (sim/hw/cost_model.cpp), the memory in ModelSpec::weight_bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/core/dtype.hpp"

namespace servesim {

// none: weights in the base 16-bit dtype. fp8/int8: w8a8 (weights and activations quantized,
// tensor-core GEMM in that format). w8a16/w4a16_*: weight-only, activations stay 16-bit.
// nvfp4/mxfp4: w4a4 on Blackwell's FP4 tensor cores (weights and activations in E2M1 with block
// scales: NVFP4 one FP8 E4M3 scale per 16 values plus a per-tensor FP32 scale; MXFP4, the OCP
// microscaling format, one E8M0 scale per 32). fp8_block: w8a8 fp8 with block-wise scales
// (DeepSeek-V3's recipe: one fp32 scale per 128x128 weight block and per 1x128 activation group,
// quantized per token at run time). w4a8/w4afp8: 4-bit integer weights with 8-bit activations
// (int8: QServe's W4A8, QQQ; fp8: vLLM's CUTLASS W4A8 and TensorRT-LLM's W4A8 AWQ on Hopper):
// the GEMM runs on 8-bit tensor cores, the weights are widened to 8 bits in registers.
enum class QuantScheme { none, fp8, int8, w8a16, w4a16_gptq, w4a16_awq, nvfp4, mxfp4, fp8_block, w4a8, w4afp8 };

inline constexpr std::size_t kNumQuantSchemes = 11;

inline const char* quant_name(QuantScheme q) {
  switch (q) {
    case QuantScheme::none: return "none";
    case QuantScheme::fp8: return "fp8";
    case QuantScheme::int8: return "int8";
    case QuantScheme::w8a16: return "w8a16";
    case QuantScheme::w4a16_gptq: return "w4a16-gptq";
    case QuantScheme::w4a16_awq: return "w4a16-awq";
    case QuantScheme::nvfp4: return "nvfp4";
    case QuantScheme::mxfp4: return "mxfp4";
    case QuantScheme::fp8_block: return "fp8-block";
    case QuantScheme::w4a8: return "w4a8";
    case QuantScheme::w4afp8: return "w4afp8";
  }
  return "?";
}

// Which weights a scheme quantizes (quantization.scope): all, the layers' projections (experts
// included); experts, the routed experts' grouped GEMMs only, attention, router, shared experts,
// the dense layers' MLPs, embedding and LM head staying in the base dtype (GPT-OSS's MXFP4
// checkpoints, ModelOpt's DeepSeek-R1 FP4 export).
enum class QuantScope { all, experts };
inline const char* quant_scope_name(QuantScope s) { return s == QuantScope::experts ? "experts" : "all"; }
inline std::optional<QuantScope> parse_quant_scope(std::string_view s) {
  if (s == "all") return QuantScope::all;
  if (s == "experts") return QuantScope::experts;
  return std::nullopt;
}

// The names `quantization.method`, --quant and plan take; "fp4" is NVFP4 (NVIDIA's format).
// ("none" also parses: no quantization.)
inline constexpr const char* kQuantNames = "fp8, fp8-block, int8, w8a16, w4a16-gptq, w4a16-awq, w4a8, w4afp8, nvfp4 (or fp4), mxfp4";
inline std::optional<QuantScheme> parse_quant(std::string_view s) {
  if (s == "fp4") return QuantScheme::nvfp4;
  for (QuantScheme q : {QuantScheme::none, QuantScheme::fp8, QuantScheme::int8, QuantScheme::w8a16,
                        QuantScheme::w4a16_gptq, QuantScheme::w4a16_awq, QuantScheme::nvfp4, QuantScheme::mxfp4,
                        QuantScheme::fp8_block, QuantScheme::w4a8, QuantScheme::w4afp8}) {
    if (s == quant_name(q)) return q;
  }
  return std::nullopt;
}

inline bool weight_only(QuantScheme q) {
  return q == QuantScheme::w8a16 || q == QuantScheme::w4a16_gptq || q == QuantScheme::w4a16_awq;
}
inline int weight_bits(QuantScheme q, Dtype base) {
  switch (q) {
    case QuantScheme::none: return static_cast<int>(8 * dtype_bytes(base));
    case QuantScheme::fp8:
    case QuantScheme::fp8_block:
    case QuantScheme::int8:
    case QuantScheme::w8a16: return 8;
    case QuantScheme::w4a16_gptq:
    case QuantScheme::w4a16_awq:
    case QuantScheme::w4a8:
    case QuantScheme::w4afp8:
    case QuantScheme::nvfp4:
    case QuantScheme::mxfp4: return 4;
  }
  return 16;
}
// The format a GEMM that quantizes weights and activations (w8a8, and FP4's w4a4) computes in
// (the GPU must have tensor cores for it, else emulated).
inline std::optional<Dtype> w8a8_dtype(QuantScheme q) {
  if (q == QuantScheme::fp8 || q == QuantScheme::fp8_block || q == QuantScheme::w4afp8) return Dtype::fp8;
  if (q == QuantScheme::int8 || q == QuantScheme::w4a8) return Dtype::int8;
  if (q == QuantScheme::nvfp4 || q == QuantScheme::mxfp4) return Dtype::fp4;
  return std::nullopt;
}
// Bytes per element of such a GEMM's quantized input activations, block scales included.
inline double quant_input_bytes(QuantScheme q) {
  if (q == QuantScheme::nvfp4) return 0.5 + 1.0 / 16.0;
  if (q == QuantScheme::mxfp4) return 0.5 + 1.0 / 32.0;
  if (q == QuantScheme::fp8_block) return 1.0 + 4.0 / 128.0;  // an fp32 scale per 1x128 group
  return 1.0;
}

// Bytes one quantized projection weight occupies, scales included: 8-bit schemes keep one 16-bit
// scale per output channel (negligible, counted per weight as 0); 4-bit GPTQ/AWQ keep a 16-bit
// scale and a 4-bit zero point per group of `group_size` input rows (AutoGPTQ/AutoAWQ layouts);
// W4A8 two bytes per group (QServe's progressive groups: an 8-bit scale and zero; TensorRT-LLM's
// W4A8 AWQ: a 16-bit scale; vLLM's CUTLASS W4A8 an fp8 scale, 1 byte) plus per-channel scales.
inline double quant_weight_bytes(QuantScheme q, Dtype base, std::int64_t group_size) {
  if (q == QuantScheme::nvfp4 || q == QuantScheme::mxfp4) return quant_input_bytes(q);  // same block format
  if (q == QuantScheme::fp8_block) return 1.0 + 4.0 / (128.0 * 128.0);  // an fp32 scale per 128x128 block
  if (q == QuantScheme::w4a8 || q == QuantScheme::w4afp8) return 0.5 + 2.0 / static_cast<double>(group_size);
  const int bits = weight_bits(q, base);
  double bytes = bits / 8.0;
  if (bits == 4) bytes += (2.0 + 0.5) / static_cast<double>(group_size);
  return bytes;
}

// The GEMM kernel an engine runs for a quantized layer (engine profile `quant_kernels`, per GPU
// architecture and scheme: the checkpoint says what the weights are, the engine which kernel
// multiplies them). A hardware profile may hold a measured table per kernel
// (calibration.quant_kernels); a kernel without one there is timed by the model named below.
//   auto_               no engine named one: servesim's generic choice (w8a8: the profile's 8-bit
//                       GEMM table; weight-only: a fused kernel up to the scheme's fixed M, then
//                       dequantize-then-GEMM, see weight_only_fused_max_m)
//   cublaslt            w8a8 through cuBLASLt (TensorRT-LLM's FP8 GEMM): the profile's 8-bit table
//   cutlass_scaled_mm   vLLM's CUTLASS w8a8 kernels (fp8 and int8): without a table of its own,
//                       the profile's 8-bit (cuBLASLt) table
//   torch_scaled_mm     torch._scaled_mm, fp8, one scale per tensor (cuBLASLt underneath)
//   torch_scaled_mm_rowwise  the same with per-token x per-channel scales
//   torch_scaled_mm_blockwise  the same with block-wise scales (fp8-block: 1x128 x 128x128)
//   torch_int_mm        torch._int_mm (int8 -> int32) and the scales applied by torch ops after it
//   marlin, machete     mixed-input tensor-core kernels that run every M (vLLM's gptq_marlin /
//                       awq_marlin; Machete on Hopper): without a table, the analytic fused model
//   tinygemm            torch._weight_int4pack_mm (plain PyTorch, gpt-fast), every M
//   exllama             GPTQ's exllama kernels: fused up to M = 50, then dequantize + GEMM
//   awq_gemm            AutoAWQ's GEMM: fused up to M = 255, then dequantize + GEMM
//   trtllm_weight_only  TensorRT-LLM's weight-only GEMM (batched GEMV at small M, CUTLASS mixed-input
//                       GEMM above), every M
//   cutlass_w4a8        vLLM's CUTLASS W4A8 GEMM on Hopper (int4 weights widened to fp8 through a
//                       lookup table in the main loop, fp8 activations: vLLM PR #23198)
//   trtllm_w4a8         TensorRT-LLM's W4A8 AWQ GEMM (int4 weights, fp8 activations; Ada and Hopper)
//   qserve_w4a8         QServe's W4A8 GEMM (int4 weights, int8 activations, int8 mma.sync: mit-han-lab/omniserve
//                       kernels/csrc/qgemm/w4a8_per_chn and w4a8_per_group), neither measured nor
//                       published per kernel where we could read it: the W4A8 model below
//   tuned_int8          an int8 x int8 -> int32 GEMM whose tile and split-K are chosen per M by a
//                       profiler, as TensorRT-LLM's SmoothQuant GEMM (its CUTLASS int8 template,
//                       the gemm plugin's tactic profiler) runs: timed on our Triton kernel of that
//                       kind (calibrate/quant measure_quant.py section gemm8), which matches
//                       cuBLAS at 16 bits and times int8 and fp8 alike at M <= 64; without a
//                       table, the profile's 8-bit (cuBLASLt) table
//   Without a table of their own, the W4A8 kernels take the profile's 8-bit table on their 4-bit
//   weight bytes plus the widening on CUDA cores (cost_model.cpp).
// Grouped (MoE) kernels, named only in an engine's `moe_quant_kernels` (moe_only_kernel): an
// engine's dense-GEMM kernel is not necessarily its MoE kernel. The checkpoint's MXFP4 experts
// (E2M1, one E8M0 scale per 32: 4.25 bits a weight) multiply activations whose format the kernel,
// not the checkpoint, decides (kernel_gemm_dtype, kernel_input_bytes):
//   triton_mxfp4        OpenAI's triton_kernels matmul_ogs with MXFP4 weights and bf16 activations
//                       (W4A16_MXFP4): on Hopper tl.dot_scaled upcasts the E2M1 weights to bf16 in
//                       registers and runs a bf16 wgmma (Triton's DecomposeScaledBlocked); a tile of
//                       up to 128 rows per expert (opt_flags make_default_opt_flags_nvidia). TensorRT-
//                       LLM's Triton MoE backend (TritonMXFP4FusedMoEMethod) and vLLM's TRITON backend.
//   trtllm_gen_mxfp4_bf16  FlashInfer's TRT-LLM-gen MoE with MXFP4 weights and bf16 activations on
//                       Blackwell (vLLM's SM100_FI_MXFP4_BF16): no bf16 x fp4 MMA exists, so the
//                       weights are converted to bf16 on chip before a bf16 MMA; tiles of up to 128
//                       tokens per expert (flashinfer calculate_tile_tokens_dim)
//   cutlass_mxfp4_mxfp8 TensorRT-LLM's CUTLASS MoE with MXFP4 weights and MXFP8 activations
//                       (W4A8_MXFP4_MXFP8, Blackwell): the block-scaled tcgen05 MMA of kind
//                       mxf8f6f4 takes E2M1 and E4M3 operands as they are, at the FP8 rate (FP4's
//                       doubled rate is kind mxf4, both operands E2M1): no dequantization; the input
//                       is quantized to MXFP8 (E4M3 plus an E8M0 scale per 32) first
enum class QuantKernel : std::uint8_t {
  auto_, cublaslt, cutlass_scaled_mm, torch_scaled_mm, torch_scaled_mm_rowwise, torch_int_mm,
  marlin, machete, tinygemm, exllama, awq_gemm, trtllm_weight_only, torch_scaled_mm_blockwise,
  cutlass_w4a8, trtllm_w4a8, qserve_w4a8, tuned_int8, triton_mxfp4, trtllm_gen_mxfp4_bf16, cutlass_mxfp4_mxfp8
};
inline constexpr std::size_t kNumQuantKernels = 20;

inline const char* quant_kernel_name(QuantKernel k) {
  switch (k) {
    case QuantKernel::auto_: return "auto";
    case QuantKernel::cublaslt: return "cublaslt";
    case QuantKernel::cutlass_scaled_mm: return "cutlass_scaled_mm";
    case QuantKernel::torch_scaled_mm: return "torch_scaled_mm";
    case QuantKernel::torch_scaled_mm_rowwise: return "torch_scaled_mm_rowwise";
    case QuantKernel::torch_int_mm: return "torch_int_mm";
    case QuantKernel::marlin: return "marlin";
    case QuantKernel::machete: return "machete";
    case QuantKernel::tinygemm: return "tinygemm";
    case QuantKernel::exllama: return "exllama";
    case QuantKernel::awq_gemm: return "awq_gemm";
    case QuantKernel::trtllm_weight_only: return "trtllm_weight_only";
    case QuantKernel::torch_scaled_mm_blockwise: return "torch_scaled_mm_blockwise";
    case QuantKernel::cutlass_w4a8: return "cutlass_w4a8";
    case QuantKernel::trtllm_w4a8: return "trtllm_w4a8";
    case QuantKernel::qserve_w4a8: return "qserve_w4a8";
    case QuantKernel::tuned_int8: return "tuned_int8";
    case QuantKernel::triton_mxfp4: return "triton_mxfp4";
    case QuantKernel::trtllm_gen_mxfp4_bf16: return "trtllm_gen_mxfp4_bf16";
    case QuantKernel::cutlass_mxfp4_mxfp8: return "cutlass_mxfp4_mxfp8";
  }
  return "?";
}

inline std::optional<QuantKernel> parse_quant_kernel(std::string_view s) {
  for (std::size_t i = 0; i < kNumQuantKernels; ++i) {
    if (s == quant_kernel_name(static_cast<QuantKernel>(i))) return static_cast<QuantKernel>(i);
  }
  return std::nullopt;
}

// Whether kernel `k` computes GEMMs of scheme `q` (what an engine profile may name for it).
inline bool kernel_runs_scheme(QuantKernel k, QuantScheme q) {
  switch (k) {
    case QuantKernel::auto_: return true;
    case QuantKernel::cublaslt: return q == QuantScheme::fp8 || q == QuantScheme::int8;
    case QuantKernel::cutlass_scaled_mm: return q == QuantScheme::fp8 || q == QuantScheme::int8 || q == QuantScheme::fp8_block;
    case QuantKernel::torch_scaled_mm_blockwise: return q == QuantScheme::fp8_block;
    case QuantKernel::cutlass_w4a8:
    case QuantKernel::trtllm_w4a8: return q == QuantScheme::w4afp8;
    case QuantKernel::qserve_w4a8: return q == QuantScheme::w4a8;
    case QuantKernel::torch_scaled_mm:
    case QuantKernel::torch_scaled_mm_rowwise: return q == QuantScheme::fp8;
    case QuantKernel::torch_int_mm:
    case QuantKernel::tuned_int8: return q == QuantScheme::int8;
    case QuantKernel::marlin:
    case QuantKernel::machete:
    case QuantKernel::trtllm_weight_only: return weight_only(q);
    case QuantKernel::tinygemm:
    case QuantKernel::exllama:
    case QuantKernel::awq_gemm: return q == QuantScheme::w4a16_gptq || q == QuantScheme::w4a16_awq;
    case QuantKernel::triton_mxfp4:
    case QuantKernel::trtllm_gen_mxfp4_bf16:
    case QuantKernel::cutlass_mxfp4_mxfp8: return q == QuantScheme::mxfp4;
  }
  return false;
}

// Kernels that run grouped (MoE) GEMMs only: an engine names them in `moe_quant_kernels`, and
// only them there.
inline bool moe_only_kernel(QuantKernel k) {
  return k == QuantKernel::triton_mxfp4 || k == QuantKernel::trtllm_gen_mxfp4_bf16 || k == QuantKernel::cutlass_mxfp4_mxfp8;
}

// The tensor-core format a GEMM of scheme `q` computes in when kernel `k` runs it: the scheme's
// (w8a8_dtype) unless the kernel decides the activations: nullopt, 16-bit activations with the
// weights converted in registers (a weight-only kernel); fp8 for MXFP4 weights x MXFP8 activations.
inline std::optional<Dtype> kernel_gemm_dtype(QuantScheme q, QuantKernel k) {
  if (k == QuantKernel::triton_mxfp4 || k == QuantKernel::trtllm_gen_mxfp4_bf16) return std::nullopt;
  if (k == QuantKernel::cutlass_mxfp4_mxfp8) return Dtype::fp8;
  return w8a8_dtype(q);
}
// Bytes per element of the quantized input activations such a kernel reads (kernel_gemm_dtype set).
inline double kernel_input_bytes(QuantScheme q, QuantKernel k) {
  if (k == QuantKernel::cutlass_mxfp4_mxfp8) return 1.0 + 1.0 / 32.0;  // MXFP8: E4M3 and an E8M0 scale per 32
  return quant_input_bytes(q);
}
// The activations' format, for the outputs: the base dtype under a kernel that keeps them 16-bit,
// else the quantized format (mxfp8, fp8, int8, nvfp4, mxfp4).
inline const char* kernel_activation_name(QuantScheme q, QuantKernel k, Dtype base) {
  const auto d = kernel_gemm_dtype(q, k);
  if (!d) return dtype_name(base);
  if (k == QuantKernel::cutlass_mxfp4_mxfp8) return "mxfp8";
  if (*d == Dtype::fp4) return quant_name(q);
  return dtype_name(*d);
}

// Schemes no engine runs through a generic kernel: an engine profile that names its kernels
// (quant_kernels) must name one for the GPU at hand, or the engine does not run the scheme.
inline bool needs_engine_kernel(QuantScheme q) { return q == QuantScheme::w4a8 || q == QuantScheme::w4afp8; }

// Rows of M a W4A8 kernel computes per pass over the weights (each pass widens the int4 weights
// again in registers): CUTLASS's 128-row tiles (vLLM PR #23198; QServe's GEMM likewise 128).
inline constexpr double kW4a8TileRows = 128.0;

// Weight-only kernels that stay fused at every M (no switch to dequantize-then-GEMM).
inline bool fused_at_every_m(QuantKernel k) {
  return k == QuantKernel::marlin || k == QuantKernel::machete || k == QuantKernel::tinygemm ||
         k == QuantKernel::trtllm_weight_only || k == QuantKernel::triton_mxfp4 || k == QuantKernel::trtllm_gen_mxfp4_bf16;
}

// Rows of M a fused weight-only kernel computes per pass over the weights (each pass dequantizes
// the whole weight again in registers): Marlin runs M in tiles of up to 64 rows ("for batchsizes >
// 64, it will just run the batch 64 kernel repeatedly", its author in IST-DASLab/marlin issue #2),
// Machete (CUTLASS, Hopper wgmma) in tiles of 128; the MXFP4 x bf16 MoE kernels in tiles of up to
// 128 rows of an expert's tokens (triton_kernels' block_m, TRT-LLM-gen's tile_tokens_dim); others
// (GEMV-style) 16.
inline double dequant_tile_rows(QuantKernel k) {
  if (k == QuantKernel::marlin) return 64.0;
  if (k == QuantKernel::machete || k == QuantKernel::triton_mxfp4 || k == QuantKernel::trtllm_gen_mxfp4_bf16) return 128.0;
  return 16.0;
}

// The weight/activation format a kernel table of the hardware profile is kept under
// (calibration.quant_kernels.KERNEL.FORMAT): fp8, int8, w4a16 (GPTQ and AWQ), w8a16, fp8-block,
// w4a8, w4afp8; none for FP4.
inline constexpr std::size_t kNumQuantFormats = 7;
inline constexpr const char* kQuantFormatNames[kNumQuantFormats] = {"fp8", "int8", "w4a16", "w8a16", "fp8-block", "w4a8", "w4afp8"};
inline std::optional<std::size_t> quant_format(QuantScheme q) {
  switch (q) {
    case QuantScheme::fp8: return 0;
    case QuantScheme::int8: return 1;
    case QuantScheme::w4a16_gptq:
    case QuantScheme::w4a16_awq: return 2;
    case QuantScheme::w8a16: return 3;
    case QuantScheme::fp8_block: return 4;
    case QuantScheme::w4a8: return 5;
    case QuantScheme::w4afp8: return 6;
    default: return std::nullopt;
  }
}

}  // namespace servesim
