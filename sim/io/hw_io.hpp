// Reads and writes hardware profiles (hwprofiles/*.json).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "sim/hw/hw_profile.hpp"

namespace servesim {

HwProfile load_hw_profile(const std::string& path);
HwProfile parse_hw_profile(const nlohmann::json& doc, const std::string& file);
nlohmann::json provenance_to_json(const Provenance& p);

}  // namespace servesim
