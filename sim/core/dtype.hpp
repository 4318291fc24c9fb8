// Numeric formats of weights, activations and KV cache, with their storage size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace servesim {

// fp4: the 4-bit floating point of Blackwell tensor cores (E2M1; NVFP4 and MXFP4 add block scales).
// int4: a storage format only (the 4-bit KV cache); no GPU profile has int4 tensor-core rates.
enum class Dtype { fp32, fp16, bf16, fp8, int8, fp4, int4 };
inline constexpr std::size_t kNumDtypes = 7;

inline double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32: return 4.0;
    case Dtype::fp16:
    case Dtype::bf16: return 2.0;
    case Dtype::fp8:
    case Dtype::int8: return 1.0;
    case Dtype::fp4:
    case Dtype::int4: return 0.5;
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
    case Dtype::int4: return "int4";
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

// The KV cache formats `quantization.kv_cache_dtype` (and --kv-cache-dtype) take; auto is the
// base dtype. int8/int4 are integer caches quantized per token as they are written (LMDeploy's
// quant_policy 8/4, TensorRT-LLM's INT8 KV cache, QServe's KV4).
inline constexpr const char* kKvCacheDtypeNames = "auto, fp8, int8, int4";
inline std::optional<Dtype> parse_kv_cache_dtype(std::string_view s, Dtype base) {
  if (s == "auto") return base;
  if (s == "fp8") return Dtype::fp8;
  if (s == "int8") return Dtype::int8;
  if (s == "int4") return Dtype::int4;
  return std::nullopt;
}
inline bool integer_kv_cache(Dtype kv) { return kv == Dtype::int8 || kv == Dtype::int4; }

// Bytes one cached K or V element occupies, its scales included, where one scale covers
// `scale_group` elements (a token's slice of one KV head: head_dim; MLA's latent: its width).
// int8/int4 keep one 4-byte scale per token and KV head for K and for V (an fp32 scale, or an
// fp16 scale and zero point: LMDeploy's per-head per-token asymmetric KV quantization, QServe's
// per-head dynamic KV4); fp8 one scale per tensor (vLLM's k_scale / v_scale), 0 bytes per element.
inline double kv_cache_element_bytes(Dtype kv, std::int64_t scale_group) {
  if (!integer_kv_cache(kv) || scale_group <= 0) return dtype_bytes(kv);
  return dtype_bytes(kv) + 4.0 / static_cast<double>(scale_group);
}

}  // namespace servesim
