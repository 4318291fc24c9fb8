// The engine: one event queue driving arrivals and replica iterations to the end of the workload.
#pragma once
#include <cstdint>
#include <functional>

#include "sim/config/scenario.hpp"
#include "sim/metrics/run_metrics.hpp"
#include "sim/metrics/run_observer.hpp"
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

struct Progress {
  std::int64_t arrived = 0, finished = 0;  // finished = completed + rejected
  std::int64_t expected = 0;               // workload.num_requests
  double simulated_s = 0.0;
};

// Optional attachments to a run; none of them changes the simulation's result.
struct SimHooks {
  RunObserver* observer = nullptr;  // not owned
  // Called every few thousand events with where the run stands (for progress bars).
  std::function<void(const Progress&)> progress;
};

// Runs the scenario to completion. Throws InputError when the model does not fit.
SimResult simulate(const Scenario& scenario, const SimHooks& hooks = {});

}  // namespace servesim
