// The engine: one event queue driving arrivals, a router and replica iterations (and, when
// disaggregated, KV transfers from prefill to decode replicas) to the end of the workload.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/metrics/run_metrics.hpp"
#include "sim/metrics/run_observer.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/saturation.hpp"
#include "sim/serve/replica.hpp"

namespace servesim {

struct ReplicaResult {
  ReplicaSpec spec;
  RunMetrics metrics;
};

struct SimResult {
  RunMetrics metrics;  // the fleet: all replicas merged; arrivals and rejections counted at the router
  MemoryPlan memory;   // of the replicas requests arrive at (the prefill pool when disaggregated)
  std::vector<ReplicaResult> replicas;
  std::int64_t gpus = 0;  // all replicas' GPUs
  std::int64_t kv_transfers = 0;
  double kv_transfer_bytes = 0.0;
  double kv_transfer_s = 0.0;  // summed transfer durations (not counting waits for the link)
  std::string kv_transfer_link;
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
// The replicas a scenario deploys: data_parallel_size unified replicas, or the prefill pool then
// the decode pool. Throws InputError when a replica's model does not fit.
std::vector<ReplicaSpec> replica_specs(const Scenario& scenario);

// Runs the scenario to completion. Throws InputError when the model does not fit.
SimResult simulate(const Scenario& scenario, const SimHooks& hooks = {});

}  // namespace servesim
