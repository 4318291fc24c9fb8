// Quantization schemes (vLLM's `quantization` vocabulary): what one weight costs in memory, which
// format the GEMM computes in, and which kernel family runs it. Pure data; the time is in the
// cost model (sim/hw/cost_model.cpp), the memory in ModelSpec::weight_bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/core/dtype.hpp"

namespace servesim {

// none: weights in the base 16-bit dtype. fp8/int8: w8a8 (weights and activations quantized,
// tensor-core GEMM in that format). w8a16/w4a16_*: weight-only, activations stay 16-bit.
// nvfp4/mxfp4: w4a4 on Blackwell's FP4 tensor cores (weights and activations in E2M1 with block
// scales: NVFP4 one FP8 E4M3 scale per 16 values plus a per-tensor FP32 scale; MXFP4, the OCP
// microscaling format, one E8M0 scale per 32).
enum class QuantScheme { none, fp8, int8, w8a16, w4a16_gptq, w4a16_awq, nvfp4, mxfp4 };

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
  }
  return "?";
}

// The names `quantization.method`, --quant and plan take; "fp4" is NVFP4 (NVIDIA's format).
// ("none" also parses: no quantization.)
inline constexpr const char* kQuantNames = "fp8, int8, w8a16, w4a16-gptq, w4a16-awq, nvfp4 (or fp4), mxfp4";
inline std::optional<QuantScheme> parse_quant(std::string_view s) {
  if (s == "fp4") return QuantScheme::nvfp4;
  for (QuantScheme q : {QuantScheme::none, QuantScheme::fp8, QuantScheme::int8, QuantScheme::w8a16,
                        QuantScheme::w4a16_gptq, QuantScheme::w4a16_awq, QuantScheme::nvfp4, QuantScheme::mxfp4}) {
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
    case QuantScheme::int8:
    case QuantScheme::w8a16: return 8;
    case QuantScheme::w4a16_gptq:
    case QuantScheme::w4a16_awq:
    case QuantScheme::nvfp4:
    case QuantScheme::mxfp4: return 4;
  }
  return 16;
}
// The format a GEMM that quantizes weights and activations (w8a8, and FP4's w4a4) computes in
// (the GPU must have tensor cores for it, else emulated).
inline std::optional<Dtype> w8a8_dtype(QuantScheme q) {
  if (q == QuantScheme::fp8) return Dtype::fp8;
  if (q == QuantScheme::int8) return Dtype::int8;
  if (q == QuantScheme::nvfp4 || q == QuantScheme::mxfp4) return Dtype::fp4;
  return std::nullopt;
}
// Bytes per element of such a GEMM's quantized input activations, block scales included.
inline double quant_input_bytes(QuantScheme q) {
  if (q == QuantScheme::nvfp4) return 0.5 + 1.0 / 16.0;
  if (q == QuantScheme::mxfp4) return 0.5 + 1.0 / 32.0;
  return 1.0;
}

// Bytes one quantized projection weight occupies, scales included: 8-bit schemes keep one 16-bit
// scale per output channel (negligible, counted per weight as 0); 4-bit GPTQ/AWQ keep a 16-bit
// scale and a 4-bit zero point per group of `group_size` input rows (AutoGPTQ/AutoAWQ layouts).
inline double quant_weight_bytes(QuantScheme q, Dtype base, std::int64_t group_size) {
  if (q == QuantScheme::nvfp4 || q == QuantScheme::mxfp4) return quant_input_bytes(q);  // same block format
  const int bits = weight_bits(q, base);
  double bytes = bits / 8.0;
  if (bits == 4) bytes += (2.0 + 0.5) / static_cast<double>(group_size);
  return bytes;
}

}  // namespace servesim
