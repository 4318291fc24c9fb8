// Grouped-GEMM calibration; see grouped_gemm_fit.hpp.
#include "sim/calib/grouped_gemm_fit.hpp"

#include <cmath>
#include <limits>
#include <map>

#include "sim/calib/fit.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/hw/moe_cost.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

// The balanced rows of one array of a moe section (`key`), their time read from `time_key`.
void read_grouped_rows(const nlohmann::json& section, const std::string& file, const char* key, const char* time_key,
                       QuantScheme quant, std::vector<GroupedGemmPoint>& out) {
  const auto& rows = section[key];
  if (!rows.is_array()) throw InputError(file, key, "must be an array of grouped GEMM rows (a measure.py moe section)");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    JsonReader r(rows[i], file, std::string(key) + "[" + std::to_string(i) + "]");
    if (r.string_or("split", "balanced") != "balanced" || !r.has(time_key)) continue;  // skewed splits: not fitted
    GroupedGemmPoint p;
    p.model = r.string("model");
    p.proj = r.string("proj");
    p.experts = r.positive_integer("experts");
    p.tokens_per_expert = r.positive_integer("tokens_per_expert");
    p.n = r.positive_integer("n");
    p.k = r.positive_integer("k");
    p.measured_s = r.positive(time_key);
    p.quant = quant;
    out.push_back(p);
  }
}

}  // namespace

const nlohmann::json& moe_section(const nlohmann::json& run, const std::string& file) {
  if (!run.is_object() || !run.contains("sections") || !run["sections"].is_object()) {
    throw InputError(file, "sections", "missing (a calibrate/independent/measure.py run)");
  }
  const auto& sections = run["sections"];
  if (sections.contains("moe")) return sections["moe"];
  const nlohmann::json* found = nullptr;
  for (const auto& [name, section] : sections.items()) {
    if (name.rfind("moe_", 0) != 0) continue;
    if (found) throw InputError(file, "sections." + name, "a second moe_* section: the run must have one MoE section");
    found = &section;
  }
  if (!found) throw InputError(file, "sections.moe", "missing (no moe or moe_* section)");
  return *found;
}

std::vector<GroupedGemmPoint> grouped_gemm_points(const nlohmann::json& section, const std::string& file) {
  std::vector<GroupedGemmPoint> out;
  if (!section.is_object() || !section.contains("grouped")) {
    throw InputError(file, "grouped", "must be an array of grouped GEMM rows (a measure.py moe section)");
  }
  read_grouped_rows(section, file, "grouped", "grouped_s", QuantScheme::none, out);
  if (section.contains("grouped_fp8")) read_grouped_rows(section, file, "grouped_fp8", "grouped_fp8_s", QuantScheme::fp8, out);
  return out;
}

double grouped_gemm_model_s(const GroupedGemmPoint& p, const HwProfile& hw) {
  Op op{"grouped_gemm", OpKind::grouped_gemm};
  const Precision bf16{};
  op.m = p.tokens_per_expert;
  op.n = p.n;
  op.k = p.k;
  op.groups = p.experts;
  const double rows = static_cast<double>(p.experts * p.tokens_per_expert);
  const double n = static_cast<double>(p.n), k = static_cast<double>(p.k), e = static_cast<double>(p.experts);
  op.quant = p.quant;
  op.flops = 2.0 * rows * n * k;
  // Inputs and weights in the GEMM's format (fp8: one byte), the output in bf16 either way.
  const double in_b = w8a8_dtype(p.quant) ? quant_input_bytes(p.quant) : dtype_bytes(bf16.activations);
  const double weight_b = quant_weight_bytes(p.quant, bf16.weights, bf16.group_size);
  op.bytes = rows * k * in_b + e * k * n * weight_b + rows * n * dtype_bytes(bf16.activations);
  return estimate_grouped_gemm(op, hw, Dtype::bf16).time_s;
}

std::vector<std::pair<double, double>> fit_grouped_gemm_frac(const std::vector<GroupedGemmPoint>& points,
                                                             const std::set<std::string>& fit_models, HwProfile hw,
                                                             QuantScheme quant, const std::set<std::int64_t>& skip_tokens,
                                                             double fixed_s) {
  hw.grouped_gemm_frac_by_tokens_per_expert = EfficiencyTable();
  hw.grouped_gemm_fp8_frac_by_tokens_per_expert = EfficiencyTable();
  std::map<std::int64_t, std::vector<double>> ratios;
  for (const GroupedGemmPoint& p : points) {
    if (fit_models.count(p.model) == 0 || p.quant != quant || skip_tokens.count(p.tokens_per_expert) != 0) continue;
    const double model_busy = grouped_gemm_model_s(p, hw) - hw.kernel_overhead_s;
    const double measured_busy = std::max(p.measured_s - hw.kernel_overhead_s - fixed_s, 0.5 * p.measured_s);
    ratios[p.tokens_per_expert].push_back(model_busy / measured_busy);
  }
  std::vector<std::pair<double, double>> table;
  for (auto& [t, r] : ratios) table.emplace_back(static_cast<double>(t), std::round(median(r) * 1000.0) / 1000.0);
  return table;
}

double fit_grouped_gemm_fixed_s(const std::vector<GroupedGemmPoint>& points, const std::set<std::string>& fit_models,
                                const std::vector<GroupedGemmPoint>& fixed_points, const HwProfile& hw, QuantScheme quant,
                                const std::set<std::int64_t>& skip_tokens) {
  std::vector<const GroupedGemmPoint*> scored;
  for (const GroupedGemmPoint& p : points) {
    if (fit_models.count(p.model) != 0 && p.quant == quant && skip_tokens.count(p.tokens_per_expert) == 0) scored.push_back(&p);
  }
  for (const GroupedGemmPoint& p : fixed_points) {
    if (p.quant == quant && skip_tokens.count(p.tokens_per_expert) == 0) scored.push_back(&p);
  }
  if (scored.empty()) return 0.0;
  double best_s = 0.0, best_err = std::numeric_limits<double>::infinity();
  // Whole tenths of a microsecond, counted as integers: the candidates are the same on every machine.
  for (int tenths = 0; tenths <= 300; ++tenths) {
    const double fixed_s = tenths * 1e-7;
    HwProfile fitted = hw;
    EfficiencyTable table(fit_grouped_gemm_frac(points, fit_models, hw, quant, skip_tokens, fixed_s));
    (quant == QuantScheme::fp8 ? fitted.grouped_gemm_fp8_frac_by_tokens_per_expert : fitted.grouped_gemm_frac_by_tokens_per_expert) =
        std::move(table);
    (quant == QuantScheme::fp8 ? fitted.grouped_gemm_fp8_fixed_s : fitted.grouped_gemm_fixed_s) = fixed_s;
    std::vector<double> err;
    err.reserve(scored.size());
    for (const GroupedGemmPoint* p : scored) err.push_back(std::fabs(grouped_gemm_model_s(*p, fitted) / p->measured_s - 1.0));
    const double e = median(err);
    if (e < best_err) {
      best_err = e;
      best_s = fixed_s;
    }
  }
  return best_s;
}

}  // namespace servesim
