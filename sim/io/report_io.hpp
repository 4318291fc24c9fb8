// report.json (schema servesim-report/1) and the short human summary `run` prints.
#pragma once
#include <ostream>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

nlohmann::json make_report(const Scenario& scenario, const SimResult& result);
// The summary `run` prints; `wall_s` (the machine's time for the run) is printed, never written
// into report.json, so reruns give the same report bytes.
void print_summary(std::ostream& os, const nlohmann::json& report, double wall_s);

}  // namespace servesim
