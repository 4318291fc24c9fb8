// Scenario parsing: a scenario file plus --set overrides -> a validated Scenario with its model
// and hardware resolved. Also the inverse (the resolved scenario, defaults filled in, for reports).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"
#include "sim/config/scenario_keys.hpp"

namespace servesim {

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);
Scenario parse_scenario(const nlohmann::json& doc, const std::string& file);
nlohmann::json scenario_to_json(const Scenario& s);
nlohmann::json slo_to_json(const SloConfig& s);
// What the registries the parser checks names against (policies, routers, cost models, trace
// formats) say about the keys: their values and the keys each impl reads as its own, for the
// reference (`servesim list keys`, docs/scenario-keys.md).
RegisteredKeys registered_keys();

}  // namespace servesim
