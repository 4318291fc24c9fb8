// Per-query-head decode attention over the grouped kernel, from the calibrator's
// attention_decode_mmha section; see decode_per_query_head_fit.hpp.
#include "sim/calib/decode_per_query_head_fit.hpp"

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"

namespace servesim {

namespace {

constexpr const char* kSection = "attention_decode_mmha";

// The section's cache formats and the profile's key for each.
const char* profile_format(const std::string& kv_dtype) {
  if (kv_dtype == "bf16") return "bf16";
  if (kv_dtype == "fp8_e4m3") return "fp8";
  return nullptr;
}

const nlohmann::json& need(const nlohmann::json& rec, const char* key, const std::string& file, const std::string& where) {
  const auto it = rec.find(key);
  if (it == rec.end()) throw InputError(file, where + "." + key, "missing");
  return *it;
}

std::string text(const nlohmann::json& rec, const char* key, const std::string& file, const std::string& where) {
  const nlohmann::json& v = need(rec, key, file, where);
  if (!v.is_string()) throw InputError(file, where + "." + key, "must be a string");
  return v.get<std::string>();
}

// `j[key]` where it is a string, else `fallback` (descriptive fields: a number there is no error).
std::string string_or(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

double positive(const nlohmann::json& rec, const char* key, const std::string& file, const std::string& where) {
  const nlohmann::json& v = need(rec, key, file, where);
  if (!v.is_number() || !(v.get<double>() > 0.0)) throw InputError(file, where + "." + key, "must be a number > 0");
  return v.get<double>();
}

// (format, group) -> (batch, context) -> form -> time in microseconds.
using Cell = std::pair<long long, long long>;
using Times = std::map<std::pair<std::string, int>, std::map<Cell, std::map<std::string, double>>>;

// The section's records of the grouped form and of `form`, groups of 2 or more (group 1 is the
// one-read floor, not a group); InputError on a failed correctness check or a malformed record.
Times read_times(const nlohmann::json& s, const std::string& file, const std::string& form) {
  const std::string at = std::string(kSection) + ".";
  // A failed float64 check means a form computed something else: its times say nothing.
  if (const auto checks = s.find("checks"); checks != s.end() && checks->is_array()) {
    for (std::size_t i = 0; i < checks->size(); ++i) {
      const auto& c = (*checks)[i];
      if (c.is_object() && c.contains("pass") && c["pass"] != true) {
        throw InputError(file, at + "checks[" + std::to_string(i) + "]", "a correctness check failed; its times are not used");
      }
    }
  }
  const auto records = s.find("records");
  if (records == s.end() || !records->is_array() || records->empty()) throw InputError(file, at + "records", "missing or empty");
  Times times;
  for (std::size_t i = 0; i < records->size(); ++i) {
    const nlohmann::json& r = (*records)[i];
    const std::string where = at + "records[" + std::to_string(i) + "]";
    if (!r.is_object()) throw InputError(file, where, "must be an object");
    const std::string f = text(r, "form", file, where);
    const char* format = profile_format(text(r, "kv_dtype", file, where));
    if (format == nullptr) throw InputError(file, where + ".kv_dtype", "must be bf16 or fp8_e4m3");
    const int group = static_cast<int>(positive(r, "group", file, where));
    if (group < 2 || (f != "grouped" && f != form)) continue;
    const Cell cell{static_cast<long long>(positive(r, "batch", file, where)), static_cast<long long>(positive(r, "context", file, where))};
    times[{format, group}][cell][f] = positive(r, "time_us", file, where);
  }
  return times;
}

// One (format, group)'s grid: the batches with both forms at every context (a point the time
// budget skipped drops its batch), `form` / grouped at each point.
DecodePerQueryHeadGridFit grid_of(const std::string& format, int group, const std::map<Cell, std::map<std::string, double>>& cells,
                                  const std::string& form) {
  DecodePerQueryHeadGridFit g;
  g.format = format;
  g.group = group;
  std::set<long long> batches, contexts;
  for (const auto& [cell, forms] : cells) {
    batches.insert(cell.first);
    contexts.insert(cell.second);
  }
  for (long long b : batches) {
    bool whole = true;
    for (long long c : contexts) {
      const auto it = cells.find({b, c});
      whole = whole && it != cells.end() && it->second.count("grouped") && it->second.count(form);
    }
    if (!whole) {
      g.dropped_batches.push_back(b);
      continue;
    }
    g.batches.push_back(b);
    for (long long c : contexts) {
      const auto& forms = cells.at({b, c});
      g.ratios.push_back(forms.at(form) / forms.at("grouped"));
    }
  }
  g.contexts.assign(contexts.begin(), contexts.end());
  return g;
}

// The grid as the profile's table holds it; InputError for a ratio the profile would refuse.
nlohmann::json grid_json(const DecodePerQueryHeadGridFit& g, const std::string& file, const std::string& form) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < g.batches.size(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t j = 0; j < g.contexts.size(); ++j) {
      const double r = g.ratios[i * g.contexts.size() + j];
      if (!(r >= 0.1 && r <= 20.0)) {
        throw InputError(file, kSection, g.format + " group " + std::to_string(g.group) + ": " + form + " / grouped = " +
                                             std::to_string(r) + " at batch " + std::to_string(g.batches[i]) + ", context " +
                                             std::to_string(g.contexts[j]) + " is outside [0.1, 20]");
      }
      row.push_back(std::round(r * 1e4) / 1e4);
    }
    rows.push_back(row);
  }
  return {{"batch", g.batches}, {"context", g.contexts}, {"ratio", rows}};
}

}  // namespace

DecodePerQueryHeadFit fit_decode_per_query_head(const nlohmann::json& doc, const std::string& file, const std::string& form,
                                                const std::string& date, const std::string& measured_by,
                                                const std::string& fitted_by) {
  const auto section = doc.is_object() ? doc.find(kSection) : doc.end();
  if (section == doc.end() || !section->is_object()) {
    throw InputError(file, kSection, "missing (the calibrator's attention_decode_mmha section, calibrate/mmha_batch.sh)");
  }
  const nlohmann::json& s = *section;
  const long long kv_heads = s.contains("num_kv_heads") ? static_cast<long long>(positive(s, "num_kv_heads", file, kSection)) : 8;
  DecodePerQueryHeadFit fit;
  fit.gpu = string_or(s, "gpu", "");
  fit.date = string_or(doc, "date", string_or(s, "date", date));
  nlohmann::json by_format = nlohmann::json::object();
  std::size_t points = 0;
  for (const auto& [key, cells] : read_times(s, file, form)) {
    DecodePerQueryHeadGridFit g = grid_of(key.first, key.second, cells, form);
    if (!g.batches.empty()) by_format[g.format][std::to_string(g.group)] = grid_json(g, file, form);  // else reported, not written
    points += g.ratios.size();
    fit.grids.push_back(std::move(g));
  }
  if (points == 0) {
    throw InputError(file, std::string(kSection) + ".records", "no group of 2 or more with both the grouped and the " + form + " form on a whole row");
  }
  fit.table = {{"form", form},
               {"kv_heads", kv_heads},
               {"time_over_grouped", by_format},
               {"points", points},
               {"gpu", fit.gpu},
               {"date", fit.date.empty() ? "not recorded" : fit.date},
               {"file", portable_path(file)},
               {"command", measured_by.empty() ? "not recorded" : measured_by},
               {"fitted_by", fitted_by},
               {"source", "paged decode attention (calibrate/src/kernels.cuh k_paged_decode: CUDA cores) in the " + form +
                              " form (one program per query head) over the grouped form (one program per KV head serving its "
                              "group) on the same shapes, time ratio per KV format, group, batch and context; our kernel stands "
                              "in for TensorRT-LLM's masked multi-head attention and XQA; measured by the calibrator's "
                              "attention_decode_mmha section, " + portable_path(file) + " on " + fit.gpu}};
  return fit;
}

}  // namespace servesim
