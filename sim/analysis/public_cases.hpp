// Validation against published measurements (data/validation/public_cases.json): each case's
// conditions become a scenario or a step, the simulator predicts the metric, and the error is
// reported. Cases whose conditions need a feature servesim does not model yet are listed as
// skipped with the reason, never silently dropped.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct CaseResult {
  std::string id, model, hw, metric, note;
  double published = 0.0;
  double predicted = 0.0;
  bool skipped = false;
  double bound = 0.30;  // stated bound on |error| for this case (tests check it; reasons in public_cases.cpp)
  double error() const { return (predicted - published) / published; }
};

std::vector<CaseResult> run_public_cases(const nlohmann::json& cases, const std::string& file);

}  // namespace servesim
