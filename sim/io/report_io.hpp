// report.json (schema servesim-report/1) and the short human summary `run` prints.
#pragma once
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

nlohmann::json make_report(const Scenario& scenario, const SimResult& result);
// The fleet figures at `paths` (report metric paths, a histogram's statistic as path.p99) with the
// values make_report writes, computing only those: for callers that read a few figures of many
// runs (saturate's probes). A path the run's report would not have is absent.
std::map<std::string, double> report_figures_at(const Scenario& scenario, const SimResult& result, const std::vector<std::string>& paths);
// "vllm (vLLM V1 ...); fp8, KV cache fp8, tp 2, 3 replicas": the engine, the precision run (the
// quantization method, else the dtype; the KV cache's dtype when it differs) and the layout;
// "" for a report written before reports named the engine.
std::string engine_layout(const nlohmann::json& report);
// The summary `run` prints; `wall_s` (the machine's time for the run) is printed, never written
// into report.json, so reruns give the same report bytes.
void print_summary(std::ostream& os, const nlohmann::json& report, double wall_s);

}  // namespace servesim
