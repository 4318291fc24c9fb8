// `servesim compare BASE.json NEW.json [--threshold 0.05] [--threshold metric=0.1 ...] [--json]`:
// per-metric drift of a report against a baseline; exit code 3 when a threshold is crossed.
// Compared: every numeric leaf of the report except the inputs echoed back (scenario, model,
// hardware) and the machine-dependent sim.wall_s; booleans count as 0/1.
#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>
#include <map>

#include <nlohmann/json.hpp>

#include "sim/analysis/compare.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim::cli {

constexpr int kExitDrift = 3;

namespace {
void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, double>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array()) {
    // Time series (arrays of numbers or points, e.g. kv_cache.usage_series) vary in length with the
    // run's duration: they are not drift metrics. Arrays of objects (replicas, slo.classes) are.
    if (!j.empty() && !j.front().is_object()) return;
    for (std::size_t i = 0; i < j.size(); ++i) {
      // Arrays of named objects (slo.classes) are keyed by name so reordering is not drift.
      const std::string key = j[i].is_object() && j[i].contains("name") && j[i]["name"].is_string() ? j[i]["name"].get<std::string>() : std::to_string(i);
      flatten(j[i], prefix + "." + key, out);
    }
  } else if (j.is_number()) {
    out[prefix] = j.get<double>();
  } else if (j.is_boolean()) {
    out[prefix] = j.get<bool>() ? 1.0 : 0.0;
  }
}

std::map<std::string, double> report_metrics(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string() ||
      doc["schema"].get<std::string>().rfind("servesim-report/", 0) != 0) {
    throw InputError(path, "schema", "not a servesim report (expected schema servesim-report/N)");
  }
  std::map<std::string, double> out;
  for (const auto& [k, v] : doc.items()) {
    if (k == "scenario" || k == "model" || k == "hardware" || k == "schema") continue;
    flatten(v, k, out);
  }
  out.erase("sim.wall_s");
  return out;
}

double parse_threshold(const std::string& text) {
  double v = 0.0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || v < 0.0) {
    throw InputError("--threshold", "", "must be a number >= 0 (relative drift), got '" + text + "'");
  }
  return v;
}
}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim compare", "Per-metric drift of NEW.json against BASE.json; exit 3 when a threshold is crossed");
  opts.add_options()("base", "baseline report.json", cxxopts::value<std::string>())("new", "report.json to check",
                                                                                   cxxopts::value<std::string>())(
      "threshold", "relative drift allowed: X for all metrics, or metric=X / prefix.=X (repeatable)",
      cxxopts::value<std::vector<std::string>>())("all", "list every metric, not only those that crossed")("h,help", "show help");
  add_output_flags(opts);
  opts.parse_positional({"base", "new"});
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("base") || !p.count("new")) throw InputError("servesim compare", "", "expected BASE.json NEW.json");
  CompareOptions o;
  if (p.count("threshold")) {
    for (const auto& t : p["threshold"].as<std::vector<std::string>>()) {
      const auto eq = t.find('=');
      if (eq == std::string::npos) o.threshold = parse_threshold(t);
      else o.per_metric[t.substr(0, eq)] = parse_threshold(t.substr(eq + 1));
    }
  }
  const auto drifts = compare_metrics(report_metrics(p["base"].as<std::string>()), report_metrics(p["new"].as<std::string>()), o);
  Table t;
  std::size_t row = 0, crossed = 0;
  for (const auto& d : drifts) {
    crossed += d.crossed ? 1 : 0;
    if (!d.crossed && !p.count("all")) continue;
    t.set(row, "metric", d.metric);
    t.set(row, "base", std::isnan(d.base) ? Cell{} : Cell{d.base});
    t.set(row, "new", std::isnan(d.value) ? Cell{} : Cell{d.value});
    t.set(row, "drift", std::isfinite(d.drift) ? Cell{d.drift} : Cell{std::string("missing")});
    t.set(row, "threshold", d.threshold);
    t.set(row, "crossed", d.crossed);
    ++row;
  }
  if (t.columns.empty()) {
    for (const char* c : {"metric", "base", "new", "drift", "threshold", "crossed"}) t.column(c);
  }
  emit_table(p, t, "# compare\n\n`servesim compare " + join_args(args) + "`");
  if (!p.count("json")) std::cout << drifts.size() << " metrics compared, " << crossed << " crossed their threshold\n";
  return crossed > 0 ? kExitDrift : kExitOk;
}

}  // namespace servesim::cli
