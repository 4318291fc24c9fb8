// Grouped (mixture-of-experts) GEMM calibration: measured grouped GEMMs (the `moe` section of
// calibrate/independent/measure.py: torch._grouped_mm with every expert given t tokens) against
// the cost model's dense-equivalent time (sim/hw/moe_cost.hpp), fitted as the profile's
// calibration.grouped_gemm.frac_by_tokens_per_expert.
#pragma once
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/hw/hw_profile.hpp"

namespace servesim {

struct GroupedGemmPoint {
  std::string model;  // whose expert shape (mixtral-8x7b, qwen3-30b-a3b, deepseek-v3)
  std::string proj;   // gate_up or down
  std::int64_t experts = 0, tokens_per_expert = 0, n = 0, k = 0;
  double measured_s = 0.0;
};

// The balanced grouped rows (grouped_s) of a measure.py `moe` section; InputError naming `file`
// and the key on a malformed row.
std::vector<GroupedGemmPoint> grouped_gemm_points(const nlohmann::json& moe_section, const std::string& file);

// The cost model's time for one point on `hw` (bf16, every expert active), through
// estimate_grouped_gemm (and so through `hw`'s grouped table, if it has one).
double grouped_gemm_model_s(const GroupedGemmPoint& p, const HwProfile& hw);

// The fraction table: for each tokens-per-expert value of the points whose model is in
// `fit_models`, the median over them of modelled busy time / measured busy time (busy = minus
// the profile's per-kernel overhead), with `hw`'s own grouped table ignored. Rounded to 3 digits.
std::vector<std::pair<double, double>> fit_grouped_gemm_frac(const std::vector<GroupedGemmPoint>& points,
                                                             const std::set<std::string>& fit_models, HwProfile hw);

}  // namespace servesim
