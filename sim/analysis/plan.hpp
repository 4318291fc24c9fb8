// plan: for each (GPU, precision, tensor-parallel size[, expert-parallel size]) option, whether the model fits, the
// per-replica stable rate under the SLO (saturate), the replicas and GPUs needed for the target
// rate, and the cost per million output tokens at on-demand prices.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/analysis/saturation_rate.hpp"
#include "sim/io/table.hpp"

namespace servesim {

struct PlanOption {
  std::string hw, quant;
  int tp = 1;
  int ep = 1;  // expert-parallel GPUs of the TP group (mixture-of-experts models)
};

// Scenario of one replica of `option` at `rate_per_s` and `seed`. Throws InputError when the option
// is impossible (model does not fit, dtype unsupported); plan records the message.
using PlanScenarioFactory = std::function<Scenario(const PlanOption& option, double rate_per_s, std::uint64_t seed)>;

struct PlanOptions {
  double target_rate_per_s = 1.0;
  SaturateOptions saturate;
  std::map<std::string, double> usd_per_gpu_hour;  // by hardware profile name
};

Table plan(const std::vector<PlanOption>& options, const PlanScenarioFactory& make, std::uint64_t seed, const PlanOptions& o);

}  // namespace servesim
