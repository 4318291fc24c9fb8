// Fits from the independent set. The tables have the form of the calibrator's (roofline fractions,
// frac = roofline / (t - kernel_overhead)), so the cost model reproduces a fitted point exactly
// and interpolates between points the same way for every kernel family.
#include "sim/calib/independent.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "sim/calib/fit.hpp"
#include "sim/core/error.hpp"

namespace servesim {

namespace {

double number(const nlohmann::json& row, const char* key, const std::string& file, const std::string& where) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0.0) {
    throw InputError(file, where + "." + key, "missing or not a positive number");
  }
  return it->get<double>();
}

HeadLayout layout_of(const nlohmann::json& row, const std::string& file, const std::string& where) {
  return {static_cast<std::int64_t>(number(row, "hq", file, where)), static_cast<std::int64_t>(number(row, "hkv", file, where)),
          static_cast<std::int64_t>(number(row, "head_dim", file, where))};
}

const nlohmann::json& rows_of(const nlohmann::json& section, const char* key, const std::string& file) {
  const auto it = section.find(key);
  if (it == section.end() || !it->is_array()) throw InputError(file, std::string("attention.") + key, "missing or not an array");
  return *it;
}

}  // namespace

const nlohmann::json& independent_section(const nlohmann::json& run, const std::string& name, const std::string& file) {
  if (run.value("schema", "") != "servesim-independent/1") throw InputError(file, "schema", "expected \"servesim-independent/1\"");
  const auto s = run.find("sections");
  if (s == run.end() || !s->is_object()) throw InputError(file, "sections", "missing or not an object");
  const auto it = s->find(name);
  if (it == s->end() || !it->is_object()) throw InputError(file, "sections." + name, "missing");
  return *it;
}

nlohmann::json fit_sdpa_attention(const nlohmann::json& attention, const std::string& file, const HwProfile& hw,
                                  const std::set<HeadLayout>& exclude) {
  const double peak = hw.peak_flops(Dtype::bf16), bw = hw.hbm_bandwidth_bytes_per_s, overhead = hw.kernel_overhead_s;
  // Decode: one query token per sequence over `context` cached tokens; the same roofline the cost
  // model uses for a decode attention op (K and V read, q read and o written; 4 FLOPs per
  // head-dim element per query-key pair).
  std::map<double, std::map<double, std::vector<double>>> decode;  // context -> units -> fractions
  const auto& dec = rows_of(attention, "decode", file);
  for (std::size_t i = 0; i < dec.size(); ++i) {
    const std::string where = "attention.decode[" + std::to_string(i) + "]";
    const HeadLayout l = layout_of(dec[i], file, where);
    if (exclude.count(l)) continue;
    const double b = number(dec[i], "batch", file, where), c = number(dec[i], "context", file, where);
    const double q_w = static_cast<double>(l.q_heads * l.head_dim);
    const double bytes = number(dec[i], "kv_bytes", file, where) + 2.0 * b * q_w * 2.0;
    const double roofline = std::max(4.0 * q_w * b * c / peak, bytes / bw);
    const double busy = number(dec[i], "time_s", file, where) - overhead;
    decode[c][b * static_cast<double>(l.kv_heads)].push_back(busy > 0.0 ? roofline / busy : 1.0);
  }
  // Prefill: causal, query = key length S per sequence; compute fraction over KV tokens per launch.
  std::map<double, std::vector<double>> prefill;  // KV tokens per launch -> fractions
  const auto& pre = rows_of(attention, "prefill", file);
  for (std::size_t i = 0; i < pre.size(); ++i) {
    const std::string where = "attention.prefill[" + std::to_string(i) + "]";
    const HeadLayout l = layout_of(pre[i], file, where);
    if (exclude.count(l)) continue;
    const double b = number(pre[i], "batch", file, where), s = number(pre[i], "prompt", file, where);
    const double flops = 4.0 * static_cast<double>(l.q_heads * l.head_dim) * b * s * (s + 1.0) / 2.0;
    const double busy = number(pre[i], "time_s", file, where) - overhead;
    prefill[b * s].push_back(busy > 0.0 ? flops / (peak * busy) : 1.0);
  }
  if (decode.empty() || prefill.empty()) throw InputError(file, "attention", "no decode or prefill rows left to fit");
  nlohmann::json pre_table = nlohmann::json::array();
  for (const auto& [tokens, fracs] : prefill) pre_table.push_back({tokens, std::clamp(median(fracs), 1e-3, 1.0)});
  return {{"decode", decode_attention_json(decode)}, {"prefill_compute_frac_by_kv_tokens", pre_table}};
}

}  // namespace servesim
