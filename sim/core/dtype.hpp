// Numeric formats of weights, activations and KV cache, with their storage size.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace servesim {

// fp4: the 4-bit floating point of Blackwell tensor cores (E2M1; NVFP4 and MXFP4 add block scales).
enum class Dtype { fp32, fp16, bf16, fp8, int8, fp4 };
inline constexpr std::size_t kNumDtypes = 6;

inline double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32: return 4.0;
    case Dtype::fp16:
    case Dtype::bf16: return 2.0;
    case Dtype::fp8:
    case Dtype::int8: return 1.0;
    case Dtype::fp4: return 0.5;
  }
  return 2.0;
}

inline const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    case Dtype::fp8: return "fp8";
    case Dtype::int8: return "int8";
    case Dtype::fp4: return "fp4";
  }
  return "?";
}

inline std::optional<Dtype> parse_dtype(std::string_view s) {
  if (s == "fp32") return Dtype::fp32;
  if (s == "fp16") return Dtype::fp16;
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp8") return Dtype::fp8;
  if (s == "int8") return Dtype::int8;
  if (s == "fp4") return Dtype::fp4;
  return std::nullopt;
}

}  // namespace servesim
