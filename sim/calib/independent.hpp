// Fits from the independent H200 set (calibrate/independent/measure.py; results under
// calibrate/results/h200/independent/): what users run rather than our own calibrator kernels.
// Each fit takes an exclusion set, so `servesim validate` can fit without the rows it predicts
// (leave one head layout or one model out) and the shipped profiles use every row.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sim/hw/hw_profile.hpp"

namespace servesim {

// Attention head layout of a measurement row: query heads, KV heads, head dimension.
struct HeadLayout {
  std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
  bool operator<(const HeadLayout& o) const {
    return std::tie(q_heads, kv_heads, head_dim) < std::tie(o.q_heads, o.kv_heads, o.head_dim);
  }
  bool operator==(const HeadLayout& o) const { return !(*this < o) && !(o < *this); }
};

// The `attention` section of an independent run (schema servesim-independent/1): SDPA decode and
// causal prefill kernel times -> the profile's calibration.attention_kernels.sdpa object (decode
// grid over (KV head-tokens, context) and prefill compute fraction over KV tokens, both as
// fractions of `hw`'s roofline, the same form as the standard tables). Rows of `exclude` layouts
// are left out. InputError naming file and key on malformed rows or when no row is left.
nlohmann::json fit_sdpa_attention(const nlohmann::json& attention_section, const std::string& file, const HwProfile& hw,
                                  const std::set<HeadLayout>& exclude = {});

// The section `name` of an independent run file (`{"schema", "sections": {...}}`).
const nlohmann::json& independent_section(const nlohmann::json& run, const std::string& name, const std::string& file);

}  // namespace servesim
