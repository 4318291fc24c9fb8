// Engine profile parsing (scenarios/engines/*.json), strict like every other input.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "sim/config/engine_profile.hpp"

namespace servesim {

EngineProfile parse_engine_profile(const nlohmann::json& doc, const std::string& file);
// `ref` is a bundled name (scenarios/engines/<ref>.json) or a path.
EngineProfile load_engine_profile(const std::string& ref, const std::string& file, const std::string& key);
nlohmann::json engine_profile_summary(const EngineProfile& p);

}  // namespace servesim
