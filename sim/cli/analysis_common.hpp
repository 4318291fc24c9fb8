// Flags shared by the analysis subcommands: how a scenario is loaded (file, --set, --load-profile,
// --slo, --seed) and how a result table is written (--json, --csv FILE, --md FILE, else text).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "sim/io/load_data.hpp"
#include "sim/io/table.hpp"
#include "sim/cli/options.hpp"
#include "sim/config/scenario.hpp"

namespace servesim::cli {

// "ttft=0.5s,tpot=50ms,e2e=20,p=0.99,success=0.999" -> SloConfig (durations accept ms/s/m/h).
SloConfig parse_slo_flag(const std::string& text);

struct ScenarioSource {
  std::string path;
  std::vector<std::string> overrides;  // --set, applied after the load profile
  std::string load_profile;
  std::optional<SloConfig> slo;        // --slo replaces every class's SLO
  std::optional<long long> seed;

  // The scenario with `extra` overrides and, when seed >= 0, that seed.
  Scenario load(const std::vector<std::string>& extra = {}, long long seed = -1) const;
};

// Adds --set, --load-profile, --slo, --seed; reads them back.
void add_scenario_flags(cxxopts::Options& opts);
ScenarioSource scenario_source(const cxxopts::ParseResult& p, const std::string& path);

// Adds --json, --csv FILE, --md FILE; writes the table accordingly (text on stdout by default).
void add_output_flags(cxxopts::Options& opts);
void emit_table(const cxxopts::ParseResult& p, const Table& t, const std::string& title);
// --csv FILE alone (for commands that write their own text and markdown).
void write_csv_if_asked(const cxxopts::ParseResult& p, const Table& t);

// --load-csv FILE (saturate, sweep, plan): latency and throughput against the offered rate, one row
// per configuration and rate, in load_table's columns (sim/io/load_data.hpp), the same for each.
void add_load_csv_flag(cxxopts::Options& opts);
void write_load_csv_if_asked(const cxxopts::ParseResult& p, const std::vector<LoadCurve>& curves);

}  // namespace servesim::cli
