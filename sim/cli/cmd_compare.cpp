// `servesim compare BASE.json NEW.json [--threshold 0.05] [--threshold metric=0.1 ...] [--json]`:
// per-metric drift of a report against a baseline; exit code 3 when a threshold is crossed.
// Compared: every numeric leaf of the report (flatten_report, sim/io/report_metrics.hpp): not the
// inputs echoed back (scenario, model, hardware) nor the machine-dependent sim.wall_s; booleans
// count as 0/1.
#include <algorithm>
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
#include "sim/core/suggest.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/report_metrics.hpp"

namespace servesim::cli {

constexpr int kExitDrift = 3;

namespace {
std::map<std::string, double> read_report(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string() ||
      doc["schema"].get<std::string>().rfind("servesim-report/", 0) != 0) {
    throw InputError(path, "schema", "not a servesim report (expected schema servesim-report/N)");
  }
  return flatten_report(doc);
}

// A per-metric threshold names a metric of either report, or a prefix ("latency.") of one.
void check_threshold_names(const CompareOptions& o, const std::map<std::string, double>& base,
                           const std::map<std::string, double>& value) {
  std::vector<std::string> names;
  for (const auto* m : {&base, &value}) {
    for (const auto& [k, v] : *m) names.push_back(k);
  }
  for (const auto& entry : o.per_metric) {
    const std::string& name = entry.first;  // not a structured binding: clang cannot capture one
    const bool known = std::any_of(names.begin(), names.end(), [&name](const std::string& k) {
      return k == name || (!name.empty() && name.back() == '.' && k.rfind(name, 0) == 0);
    });
    if (known) continue;
    throw InputError("--threshold", "", "unknown metric '" + name + "'" + did_you_mean(name, names));
  }
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
  const auto base = read_report(p["base"].as<std::string>());
  const auto value = read_report(p["new"].as<std::string>());
  check_threshold_names(o, base, value);
  const auto drifts = compare_metrics(base, value, o);
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
