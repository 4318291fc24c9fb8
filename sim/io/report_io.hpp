// report.json (schema servesim-report/1) and the short human summary `run` prints.
#pragma once
#include <ostream>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

nlohmann::json make_report(const Scenario& scenario, const SimResult& result);
void print_summary(std::ostream& os, const nlohmann::json& report);

}  // namespace servesim
