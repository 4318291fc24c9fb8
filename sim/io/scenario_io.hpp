// Scenario parsing: a scenario file plus --set overrides -> a validated Scenario with its model
// and hardware resolved. Also the inverse (the resolved scenario, defaults filled in, for reports).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"

namespace servesim {

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);
Scenario parse_scenario(const nlohmann::json& doc, const std::string& file);
nlohmann::json scenario_to_json(const Scenario& s);
nlohmann::json slo_to_json(const SloConfig& s);

}  // namespace servesim
