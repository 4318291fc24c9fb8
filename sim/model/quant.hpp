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
enum class QuantScheme { none, fp8, int8, w8a16, w4a16_gptq, w4a16_awq };

inline const char* quant_name(QuantScheme q) {
  switch (q) {
    case QuantScheme::none: return "none";
    case QuantScheme::fp8: return "fp8";
    case QuantScheme::int8: return "int8";
    case QuantScheme::w8a16: return "w8a16";
    case QuantScheme::w4a16_gptq: return "w4a16-gptq";
    case QuantScheme::w4a16_awq: return "w4a16-awq";
  }
  return "?";
}

inline std::optional<QuantScheme> parse_quant(std::string_view s) {
  for (QuantScheme q : {QuantScheme::none, QuantScheme::fp8, QuantScheme::int8, QuantScheme::w8a16,
                        QuantScheme::w4a16_gptq, QuantScheme::w4a16_awq}) {
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
    case QuantScheme::w4a16_awq: return 4;
  }
  return 16;
}
// The format a w8a8 GEMM computes in (the GPU must have tensor cores for it, else emulated).
inline std::optional<Dtype> w8a8_dtype(QuantScheme q) {
  if (q == QuantScheme::fp8) return Dtype::fp8;
  if (q == QuantScheme::int8) return Dtype::int8;
  return std::nullopt;
}

// Bytes one quantized projection weight occupies, scales included: 8-bit schemes keep one 16-bit
// scale per output channel (negligible, counted per weight as 0); 4-bit GPTQ/AWQ keep a 16-bit
// scale and a 4-bit zero point per group of `group_size` input rows (AutoGPTQ/AutoAWQ layouts).
inline double quant_weight_bytes(QuantScheme q, Dtype base, std::int64_t group_size) {
  const int bits = weight_bits(q, base);
  double bytes = bits / 8.0;
  if (bits == 4) bytes += (2.0 + 0.5) / static_cast<double>(group_size);
  return bytes;
}

}  // namespace servesim
