// The engine: one event queue driving arrivals and replica iterations to the end of the workload.
#pragma once
#include <cstdint>

#include "sim/config/scenario.hpp"
#include "sim/metrics/run_metrics.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/saturation.hpp"

namespace servesim {

struct SimResult {
  RunMetrics metrics;
  MemoryPlan memory;
  std::uint64_t events = 0;
  double wall_s = 0.0;
  Saturation saturation;
};

// Runs the scenario to completion. Throws InputError when the model does not fit.
SimResult simulate(const Scenario& scenario);

}  // namespace servesim
