// See analysis_common.hpp.
#include "sim/cli/analysis_common.hpp"

#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>

#include "sim/cli/failure.hpp"
#include "sim/config/scenario_keys.hpp"
#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/load_profile.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/io/table_io.hpp"

namespace servesim::cli {

SloConfig parse_slo_flag(const std::string& text) {
  SloConfig s;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw InputError("--slo", "", "expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "ttft") s.ttft_s = parse_duration_s(value, "--slo", "ttft");
    else if (key == "tpot") s.tpot_s = parse_duration_s(value, "--slo", "tpot");
    else if (key == "e2e") s.e2e_s = parse_duration_s(value, "--slo", "e2e");
    else if (key == "p" || key == "percentile" || key == "success") {
      double v = 0.0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      // A fraction (0.99) or a percentage (99); between 1 and 50 neither reading is a sensible SLO
      // (p=1.5 would ask that 1.5% of requests meet it), so it is refused rather than guessed.
      const bool fraction = v > 0.0 && v <= 1.0, percentage = v >= 50.0 && v <= 100.0;
      if (ec != std::errc() || ptr != value.data() + value.size() || !std::isfinite(v) || !(fraction || percentage)) {
        throw InputError("--slo", key, "must be a fraction in (0, 1] or a percentage in [50, 100], got '" + value + "'");
      }
      if (percentage) v /= 100.0;
      (key == "success" ? s.min_success_frac : s.percentile) = v;
    } else {
      throw InputError("--slo", key, "unknown key (ttft, tpot, e2e, p, success)");
    }
  }
  // The same physical ranges as the scenario's slo keys (config/scenario_keys.cpp).
  const std::pair<const char*, double> values[] = {{"ttft_s", s.ttft_s}, {"tpot_s", s.tpot_s}, {"e2e_s", s.e2e_s},
                                                   {"percentile", s.percentile}, {"min_success_frac", s.min_success_frac}};
  for (const auto& [name, v] : values) {
    const KeyRange& range = find_scenario_key(std::string("<slo>.") + name)->range;
    if (!range.contains(v)) throw InputError("--slo", name, "must be in " + range.text() + ", got " + key_number_text(v));
  }
  return s;
}

namespace {
// --seed: the scenario key seed, with its range.
const IntegerFlag& seed_flag() {
  static const IntegerFlag f{"seed", "override the scenario seed", find_scenario_key("seed")->range, ""};
  return f;
}
}  // namespace

Scenario ScenarioSource::load(const std::vector<std::string>& extra, long long seed_override) const {
  nlohmann::json doc = load_json_file(path);
  if (!load_profile.empty()) apply_load_profile(doc, load_profile);
  for (const auto& o : overrides) apply_override(doc, o, path);
  for (const auto& o : extra) apply_override(doc, o, path);
  if (seed) doc["seed"] = *seed;
  if (seed_override >= 0) doc["seed"] = seed_override;
  Scenario s = parse_scenario(doc, path);
  if (slo) {
    for (auto& c : s.workload.classes) c.slo = *slo;
  }
  remember_scenario(s);  // for a bug report, should one come
  return s;
}

void add_scenario_flags(cxxopts::Options& opts) {
  opts.add_options()("set", "override a scenario key: key.path=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "load-profile", "workload as benchmark tools take it: \"rps=50, duration=300s\"", cxxopts::value<std::string>())(
      "slo", "SLO for every class: ttft=0.5,tpot=50ms,e2e=20,p=0.99,success=0.999", cxxopts::value<std::string>());
  seed_flag().add(opts);
}

ScenarioSource scenario_source(const cxxopts::ParseResult& p, const std::string& path) {
  ScenarioSource s;
  s.path = path;
  if (p.count("set")) s.overrides = p["set"].as<std::vector<std::string>>();
  if (p.count("load-profile")) s.load_profile = p["load-profile"].as<std::string>();
  if (p.count("slo")) s.slo = parse_slo_flag(p["slo"].as<std::string>());
  if (seed_flag().has(p)) s.seed = seed_flag().read(p, "");
  return s;
}

void add_output_flags(cxxopts::Options& opts) {
  opts.add_options()("json", "print the result as JSON on stdout")("csv", "also write the table as CSV to FILE",
                                                                   cxxopts::value<std::string>())(
      "md", "also write the table as markdown to FILE", cxxopts::value<std::string>());
}

void write_csv_if_asked(const cxxopts::ParseResult& p, const Table& t) {
  if (!p.count("csv")) return;
  std::ostringstream os;
  write_csv(os, t);
  write_file(p["csv"].as<std::string>(), os.str());
}

void add_load_csv_flag(cxxopts::Options& opts) {
  opts.add_options()("load-csv", "also write latency and throughput against the offered rate as CSV to FILE: one row per "
                                 "configuration and rate (the load page's data; the same columns in saturate, sweep and plan)",
                     cxxopts::value<std::string>());
}

void write_load_csv_if_asked(const cxxopts::ParseResult& p, const std::vector<LoadCurve>& curves) {
  if (!p.count("load-csv")) return;
  std::ostringstream os;
  write_csv(os, load_table(curves));
  write_file(p["load-csv"].as<std::string>(), os.str());
}

void emit_table(const cxxopts::ParseResult& p, const Table& t, const std::string& title) {
  write_csv_if_asked(p, t);
  if (p.count("md")) {
    std::ostringstream os;
    os << title << "\n\n";
    write_markdown(os, t);
    write_file(p["md"].as<std::string>(), os.str());
  }
  if (p.count("json")) {
    std::cout << table_to_json(t).dump(2) << "\n";
  } else {
    write_text(std::cout, t);
  }
}

}  // namespace servesim::cli
