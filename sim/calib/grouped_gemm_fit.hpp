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
#include "sim/model/quant.hpp"

namespace servesim {

struct GroupedGemmPoint {
  std::string model;  // whose expert shape (mixtral-8x7b, qwen3-30b-a3b, deepseek-v3)
  std::string proj;   // gate_up or down
  std::int64_t experts = 0, tokens_per_expert = 0, n = 0, k = 0;
  double measured_s = 0.0;
  // none: a bf16 row (grouped_s, torch._grouped_mm); fp8: an fp8 row (grouped_fp8_s,
  // torch._scaled_grouped_mm with row-wise scales), timed as the fp8 (w8a8) grouped GEMM.
  QuantScheme quant = QuantScheme::none;
};

// A measure.py run's MoE section: `moe`, else its one section named moe_* (run e's moe_tokens,
// run d's moe_ep_local); InputError naming `file` where there is none or more than one.
const nlohmann::json& moe_section(const nlohmann::json& run, const std::string& file);

// The balanced grouped rows of a measure.py `moe` section: bf16 (`grouped`, grouped_s) and, where
// the run timed them (MEASURE_MOE_FP8=1), fp8 (`grouped_fp8`, grouped_fp8_s); InputError naming
// `file` and the key on a malformed row.
std::vector<GroupedGemmPoint> grouped_gemm_points(const nlohmann::json& moe_section, const std::string& file);

// The cost model's time for one point on `hw` (bf16 or fp8, every expert active), through
// estimate_grouped_gemm (and so through `hw`'s grouped table, if it has one).
double grouped_gemm_model_s(const GroupedGemmPoint& p, const HwProfile& hw);

// The fraction table: for each tokens-per-expert value of the points whose model is in
// `fit_models` and whose format is `quant`, the median over them of modelled busy time / measured
// busy time (busy = minus the profile's per-kernel overhead and the kernel's fixed time
// `fixed_s`), with `hw`'s own grouped tables ignored. Rounded to 3 digits. quant none (bf16): the
// table that scales every format's dense-equivalent time
// (calibration.grouped_gemm.frac_by_tokens_per_expert); fp8: the fp8 kernel's own
// (fp8_frac_by_tokens_per_expert). Token counts in `skip_tokens` are left out (a kernel-selection
// step of the measured library that the interpolated neighbours should bridge).
std::vector<std::pair<double, double>> fit_grouped_gemm_frac(const std::vector<GroupedGemmPoint>& points,
                                                             const std::set<std::string>& fit_models, HwProfile hw,
                                                             QuantScheme quant = QuantScheme::none,
                                                             const std::set<std::int64_t>& skip_tokens = {}, double fixed_s = 0.0);

// The kernel's fixed time per launch (calibration.grouped_gemm.fixed_s / fp8_fixed_s): of 0 to
// 30 us in 0.1 us steps, the one whose table (fitted on the `fit_models` rows of `points` as
// above) gives the least median |error| over those rows and `fixed_points` in `quant` (the
// lowest where tied). `fixed_points`: shapes of the same expert widths at other expert counts,
// which separate the fixed time from the per-expert rate; they fit nothing else.
double fit_grouped_gemm_fixed_s(const std::vector<GroupedGemmPoint>& points, const std::set<std::string>& fit_models,
                                const std::vector<GroupedGemmPoint>& fixed_points, const HwProfile& hw,
                                QuantScheme quant = QuantScheme::none, const std::set<std::int64_t>& skip_tokens = {});

}  // namespace servesim
