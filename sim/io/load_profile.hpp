// Load profiles as benchmark tools take them: "rps=50, duration=300s" (also requests=N,
// arrival=poisson|gamma|constant, cv=X, timeout=30s). Applied to a scenario document before parsing.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace servesim {

// Rewrites doc's workload per the profile; InputError naming "--load-profile" on bad syntax.
void apply_load_profile(nlohmann::json& doc, const std::string& profile);

// "300s", "5m", "1.5h", "250ms", "800us", "300" (seconds) -> seconds; otherwise InputError naming
// `flag` (the option the text came from) and `what` (its key).
double parse_duration_s(const std::string& text, const std::string& flag, const std::string& what);

}  // namespace servesim
