// Writing hardware profiles as the two files people read (see hw_io.hpp): the profile in
// datasheet order with short arrays on one line, and its measured tables one row per shape.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/table_io.hpp"

namespace fs = std::filesystem;

namespace servesim {

namespace {

// The profile's keys in the order a datasheet reads; others follow alphabetically.
const std::vector<std::string> kProfileKeyOrder = {
    "schema", "name", "display_name", "architecture", "compute_capability", "sm_count", "memory_bytes",
    "hbm_bandwidth_bytes_per_s", "l2_bytes", "peak_flops_per_s", "host_link", "nvlink", "interconnect", "launch",
    "efficiency", "quantized", "tables", "fit_report", "provenance", "notes"};

const std::vector<std::string> kTablesKeyOrder = {"schema", "notes", "efficiency", "calibration"};

// `v` with `digits` significant digits, as the shortest decimal that reads back the same.
double round_to(double v, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

// Every non-integral number in `j` rounded to `digits`; with `integers`, integral values as
// integers (no "768.0").
nlohmann::json rounded(const nlohmann::json& j, int digits, bool integers) {
  if (j.is_object() || j.is_array()) {
    nlohmann::json out = j;
    for (auto& v : out) v = rounded(v, digits, integers);
    return out;
  }
  if (!j.is_number_float()) return j;
  const double v = j.get<double>();
  const bool integral = std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15;
  const double r = integral ? v : round_to(v, digits);
  if (integers && r == std::floor(r) && std::fabs(r) < 1e15) return static_cast<std::int64_t>(r);
  return r;
}

bool is_scalar(const nlohmann::json& j) { return !j.is_object() && !j.is_array(); }

// JSON laid out for people and diffs: one key per line; an array of numbers or strings on one
// line; an array of arrays or objects one element per line (one row per shape in the tables).
void layout(std::string& out, const nlohmann::json& j, int indent, const std::vector<std::string>* order) {
  const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
  if (j.is_object() && !j.empty()) {
    std::vector<std::string> keys;
    if (order) {
      for (const auto& k : *order) {
        if (j.contains(k)) keys.push_back(k);
      }
    }
    const std::set<std::string> placed(keys.begin(), keys.end());
    for (const auto& item : j.items()) {
      if (!placed.count(item.key())) keys.push_back(item.key());
    }
    out += "{\n";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      out += pad + nlohmann::json(keys[i]).dump() + ": ";
      layout(out, j.at(keys[i]), indent + 2, nullptr);
      out += i + 1 < keys.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<std::size_t>(indent), ' ') + "}";
  } else if (j.is_array() && !j.empty() && !std::all_of(j.begin(), j.end(), is_scalar)) {
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
      out += pad;
      layout(out, j[i], indent + 2, nullptr);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<std::size_t>(indent), ' ') + "]";
  } else if (j.is_array()) {
    out += "[";
    for (std::size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + j[i].dump();
    out += "]";
  } else {
    out += j.dump();
  }
}

std::string laid_out(const nlohmann::json& j, const std::vector<std::string>* order = nullptr) {
  std::string out;
  layout(out, j, 0, order);
  return out + "\n";
}

}  // namespace

std::string hw_tables_path(const std::string& name, const std::string& file) {
  const std::string path = (fs::path(file).parent_path() / name).string();
  std::error_code ec;
  if (fs::exists(path, ec)) return path;
  const std::string bundled = data_dir() + "/hwprofiles/" + name;
  throw InputError(file, "tables", "names " + name + ", which is not beside this profile (no " + path + "): copy the tables file with the profile" +
                                       (fs::is_regular_file(bundled, ec) ? " (the bundled one is " + portable_path(bundled) + ")" : ""));
}

void inline_hw_tables(nlohmann::json& doc, const std::string& file) {
  if (!doc.is_object() || !doc.contains("tables") || !doc["tables"].is_string()) return;
  const std::string tables_file = hw_tables_path(doc["tables"].get<std::string>(), file);
  nlohmann::json tables = load_json_file(tables_file);
  if (!tables.is_object()) throw InputError(tables_file, "(top level)", "must be an object");
  tables.erase("schema");
  tables.erase("notes");
  doc["tables"] = std::move(tables);
}

void set_fitted_curve(nlohmann::json& profile, const std::string& key, nlohmann::json curve) {
  if (profile.contains("efficiency") && profile["efficiency"].is_object()) {
    profile["efficiency"].erase(key);
    if (profile["efficiency"].empty()) profile.erase("efficiency");
  }
  profile["tables"]["efficiency"][key] = std::move(curve);
}

nlohmann::json gemm_columns_json(const GemmCurves& curves) {
  std::set<double> grid;
  for (const auto& [nk, points] : curves) {
    for (const auto& p : points) grid.insert(p.first);
  }
  const std::vector<double> m(grid.begin(), grid.end());
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [nk, points] : curves) {
    nlohmann::json row = {nk.first, nk.second};
    std::size_t at = 0;  // points and m both increase: walk them together
    for (const auto& [pm, frac] : points) {
      while (m[at] < pm) {
        row.push_back(nullptr);
        ++at;
      }
      row.push_back(frac);
      ++at;
    }
    rows.push_back(std::move(row));
  }
  return {{"m", m}, {"shapes", rows}};
}

nlohmann::json rounded_tables(const nlohmann::json& tables) { return rounded(tables, 5, true); }

std::string write_hw_profile(const nlohmann::json& profile, const std::string& path) {
  nlohmann::json main = rounded(profile, 6, false);
  if (main.contains("fit_report")) main["fit_report"] = rounded(profile["fit_report"], 4, false);
  std::string tables_path;
  if (profile.contains("tables") && profile["tables"].is_object() && !profile["tables"].empty()) {
    const std::string ref = "tables/" + fs::path(path).stem().string() + ".json";
    tables_path = (fs::path(path).parent_path() / ref).string();
    nlohmann::json tables = {{"schema", "servesim-hwtables/1"},
                             {"notes", "Measured tables of " + fs::path(path).filename().string() +
                                           ", written by servesim calibrate (layout: docs/hardware-profiles.md)"}};
    const nlohmann::json measured = rounded_tables(profile["tables"]);
    for (const auto& item : measured.items()) tables[item.key()] = item.value();
    std::error_code ec;
    fs::create_directories(fs::path(tables_path).parent_path(), ec);
    write_file(tables_path, laid_out(tables, &kTablesKeyOrder));
    main["tables"] = ref;
  }
  write_file(path, laid_out(main, &kProfileKeyOrder));
  load_hw_profile(path);  // what was written reads back
  return tables_path;
}

}  // namespace servesim
