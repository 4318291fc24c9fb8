// Quantized-KV decode attention ratios from the calibrator's attention_decode_kv section; see
// kv_decode_fit.hpp.
#include "sim/calib/kv_decode_fit.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/io/data_paths.hpp"

namespace servesim {

namespace {

// The section's cache formats and the profile's key for each (bf16 is the reference).
constexpr std::pair<const char*, const char*> kFormats[] = {{"fp8_e4m3", "fp8"}, {"int8", "int8"}, {"int4", "int4"}};

const nlohmann::json& field(const nlohmann::json& rec, const char* key, const std::string& file, const std::string& where) {
  const auto it = rec.find(key);
  if (it == rec.end() || !(it->is_number() || it->is_string())) throw InputError(file, where + "." + key, "missing");
  return *it;
}

double positive(const nlohmann::json& rec, const char* key, const std::string& file, const std::string& where) {
  const nlohmann::json& v = field(rec, key, file, where);
  if (!v.is_number() || !(v.get<double>() > 0.0)) throw InputError(file, where + "." + key, "must be a number > 0");
  return v.get<double>();
}

}  // namespace

KvDecodeFit fit_kv_decode(const nlohmann::json& doc, const std::string& file, const std::string& command) {
  const auto section = doc.is_object() ? doc.find("attention_decode_kv") : doc.end();
  if (!doc.is_object() || section == doc.end() || !section->is_array() || section->empty()) {
    throw InputError(file, "attention_decode_kv", "missing or empty (the calibrator's attention_decode_kv section)");
  }
  // Shape (batch, context, q heads, kv heads, head_dim, block size) -> format -> fastest time over
  // the variants (conversion method, tokens in flight) the calibrator ran.
  using Shape = std::tuple<long long, long long, long long, long long, long long, long long>;
  std::map<Shape, std::map<std::string, double>> fastest;
  for (std::size_t i = 0; i < section->size(); ++i) {
    const nlohmann::json& r = (*section)[i];
    const std::string where = "attention_decode_kv[" + std::to_string(i) + "]";
    const nlohmann::json& dtype = field(r, "kv_dtype", file, where);
    if (!dtype.is_string()) throw InputError(file, where + ".kv_dtype", "must be a string");
    const auto n = [&](const char* key) { return static_cast<long long>(positive(r, key, file, where)); };
    const Shape shape{n("batch"), n("context"), n("num_q_heads"), n("num_kv_heads"), n("head_dim"), n("block_size")};
    const double t = positive(r, "time_s", file, where);
    auto [it, fresh] = fastest[shape].emplace(dtype.get<std::string>(), t);
    if (!fresh) it->second = std::min(it->second, t);
  }
  KvDecodeFit fit;
  fit.date = doc.value("date", "");
  fit.gpu = doc.contains("gpu") && doc["gpu"].is_object() ? doc["gpu"].value("name", "") : "";
  fit.table = {{"kernel", "standard"}, {"time_over_bf16", nlohmann::json::object()}};
  for (const auto& [section_name, key] : kFormats) {
    KvDecodeFormatFit f;
    f.format = key;
    for (const auto& [shape, times] : fastest) {
      const auto q = times.find(section_name);
      if (q == times.end()) continue;
      const auto bf16 = times.find("bf16");
      if (bf16 == times.end()) throw InputError(file, "attention_decode_kv", std::string(section_name) + " measured on a shape without a bf16 point");
      f.ratios.push_back(q->second / bf16->second);
      f.batches.push_back(std::get<0>(shape));
    }
    if (f.ratios.empty()) continue;  // not measured
    f.median = median(f.ratios);
    fit.table["time_over_bf16"][key] = f.median;
    fit.formats.push_back(std::move(f));
  }
  if (fit.formats.empty()) throw InputError(file, "attention_decode_kv", "no fp8_e4m3, int8 or int4 points");
  fit.table["points"] = fit.formats.front().ratios.size();
  fit.table["source"] = "paged decode attention (calibrate/src/kernels.cuh: CUDA cores, the standard kernel family) over quantized KV "
                        "caches, median over the measured shapes of the fastest variant's time over bf16 on the same shape, measured by "
                        "the calibrator's attention_decode_kv section, " + portable_path(file) + " (" + doc.value("command", std::string()) + ") on " + fit.gpu + ", " +
                        fit.date + "; fitted by: " + command;
  return fit;
}

}  // namespace servesim
