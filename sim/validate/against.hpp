// servesim against a user's own server: the scenario a benchmark result file describes (its model,
// load, request count and lengths; the GPU, engine and anything else from --scenario / --set),
// simulated, and its TTFT / TPOT / ITL / E2E statistics and throughput next to the measured ones
// (`servesim validate --against FILE`). The files are read by bench_result.hpp.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"
#include "sim/serve/simulation.hpp"
#include "sim/validate/bench_result.hpp"

namespace servesim {

struct AgainstOptions {
  std::string scenario_path;           // --scenario: what the file does not say ("" = none)
  std::vector<std::string> overrides;  // --set key=value, applied last (they win over the file)
  BenchReadOptions read;
};

// A result file and the scenario that replays it.
struct AgainstCase {
  BenchResult bench;
  nlohmann::json scenario_doc;           // as simulated (before parsing)
  Scenario scenario;
  std::vector<std::string> assumptions;  // where each part of the scenario came from, one line each
};

// One compared figure: a latency statistic (seconds) or a throughput (per second).
struct AgainstRow {
  std::string metric;     // ttft, tpot, itl, e2e, throughput
  std::string statistic;  // mean, p50 ... for latencies; requests_per_s, output_tokens_per_s
  double measured = 0.0, predicted = 0.0;
  double error() const { return measured > 0.0 ? (predicted - measured) / measured : 0.0; }  // signed
};

// Reads `file` and builds its scenario; InputError naming the file and key (the model when no
// bundled card matches and none is given, the hardware when none is given).
AgainstCase against_case(const std::string& file, const AgainstOptions& options);

// Every figure the file measured, with servesim's from `result` (a run of the case's scenario).
std::vector<AgainstRow> compare_against(const BenchResult& bench, const SimResult& result);

// The row of `metric` at `statistic`, or nullptr.
const AgainstRow* find_row(const std::vector<AgainstRow>& rows, const std::string& metric, const std::string& statistic);

}  // namespace servesim
