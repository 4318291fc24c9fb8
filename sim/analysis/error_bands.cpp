#include "sim/analysis/error_bands.hpp"

#include <cctype>
#include <cstdio>

#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

std::string default_error_bands_path() { return data_dir() + "/data/validation/error_bands.json"; }

std::vector<ErrorBand> load_error_bands(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  JsonReader top(doc, path, "");
  if (top.string("schema") != "servesim-error-bands/1") top.fail("schema", "expected servesim-error-bands/1");
  top.accept("generated_by");
  const nlohmann::json& rows = top.raw("bands");
  if (!rows.is_array()) top.fail("bands", "must be an array");
  top.finish();
  std::vector<ErrorBand> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    JsonReader r(rows[i], path, "bands[" + std::to_string(i) + "]");
    ErrorBand b;
    b.hw = r.string("hw");
    b.engine = r.string("engine");
    b.phase = r.string("phase");
    b.n = static_cast<std::size_t>(r.integer_in("n", 1, 1000000));
    b.median_abs = r.number_in("median_abs", 0.0, 100.0);
    b.worst_abs = r.number_in("worst_abs", b.median_abs, 100.0);
    b.source = r.string("source");
    // Absent in files written before the attention-DP bands: a plain band.
    b.feature = r.string_or("feature", "");
    if (!b.feature.empty() && b.feature != kAttentionDpFeature) r.fail("feature", std::string("expected \"") + kAttentionDpFeature + "\" or absent");
    r.finish();
    out.push_back(std::move(b));
  }
  return out;
}

nlohmann::json error_bands_to_json(const std::vector<ErrorBand>& bands, const std::string& generated_by) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ErrorBand& b : bands) {
    rows.push_back({{"hw", b.hw}, {"engine", b.engine}, {"phase", b.phase}, {"n", b.n}, {"median_abs", b.median_abs},
                    {"worst_abs", b.worst_abs}, {"source", b.source}});
    if (!b.feature.empty()) rows.back()["feature"] = b.feature;  // plain bands stay as they were written
  }
  return {{"schema", "servesim-error-bands/1"}, {"generated_by", generated_by}, {"bands", rows}};
}

namespace {

// The band of this GPU, engine, phase and feature ("" = plain), or null.
const ErrorBand* find_band(const std::vector<ErrorBand>& bands, const std::string& hw, const std::string& engine,
                           const std::string& phase, const std::string& feature) {
  for (const ErrorBand& b : bands) {
    if (b.hw == hw && b.engine == engine && b.phase == phase && b.feature == feature) return &b;
  }
  return nullptr;
}

}  // namespace

std::optional<ErrorBand> serving_band(const std::vector<ErrorBand>& bands, const std::string& hw, const std::string& engine,
                                      const std::string& feature) {
  // Whole-request phases first: a plan answers for requests, not kernels.
  for (const char* phase : {"e2e-p50", "throughput", "tpot-p50", "tpot", "decode"}) {
    if (const ErrorBand* b = find_band(bands, hw, engine, phase, feature)) return *b;
  }
  return std::nullopt;
}

SloBands slo_bands(const std::vector<ErrorBand>& bands, const std::string& hw, const std::string& engine, bool ttft, bool tpot, bool e2e,
                   const std::string& feature) {
  SloBands out;
  out.feature = feature;
  const auto find = [&](const std::string& phase) { return find_band(bands, hw, engine, phase, feature); };
  const struct { bool wanted; const char* name; const char* metric; } targets[] = {
      {ttft, "TTFT", "ttft"}, {tpot, "TPOT", "tpot"}, {e2e, "E2E", "e2e"}};
  for (const auto& t : targets) {
    if (!t.wanted) continue;
    const ErrorBand* b = find(std::string(t.metric) + "-p90");
    if (!b) b = find(std::string(t.metric) + "-p50");
    if (b) {
      out.bands.push_back(*b);
    } else {
      out.missing.push_back(t.name);
    }
  }
  if (!ttft && !tpot && !e2e) {
    if (auto b = serving_band(bands, hw, engine, feature)) out.bands.push_back(*b);
  }
  return out;
}

std::string describe_band(const ErrorBand& b) {
  std::string metric = b.phase;
  for (char& c : metric) c = c == '-' ? ' ' : c;
  const std::string head = metric.substr(0, metric.find(' '));
  if (head == "ttft" || head == "tpot" || head == "e2e") {
    for (std::size_t i = 0; i < head.size(); ++i) metric[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(metric[i])));
  }
  metric = missing_band_text(b.feature, metric);
  const char* tail = b.feature.empty() ? "" : ", development";  // attention-DP rows: modelling choices saw them
  char buf[128];
  if (b.n < 5) {
    std::snprintf(buf, sizeof buf, "%s few rows (n %zu%s)", metric.c_str(), b.n, tail);
  } else {
    std::snprintf(buf, sizeof buf, "%s %.0f%% (n %zu%s)", metric.c_str(), 100 * b.median_abs, b.n, tail);
  }
  return buf;
}

std::string missing_band_text(const std::string& feature, const std::string& metric) {
  if (feature.empty()) return metric;
  const std::string prefix = feature == kAttentionDpFeature ? "attention DP" : feature;
  return metric.empty() ? prefix : prefix + " " + metric;
}

}  // namespace servesim
