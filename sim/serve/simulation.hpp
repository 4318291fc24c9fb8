// The event loop (EventLoop, simulation.cpp): one event queue driving arrivals, a router and replica iterations (and, when
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
#include "sim/serve/saturation_batch.hpp"
#include "sim/serve/replica.hpp"

namespace servesim {

struct ReplicaResult {
  ReplicaSpec spec;
  RunMetrics metrics;
};

// What the end-of-run invariant checks saw (simulate() throws when one breaks; tests read it).
struct RunAccounting {
  std::int64_t requests_in_flight_at_end = 0;  // must be 0
  std::int64_t request_table_high_water = 0;   // most requests alive at once (the pool's size)
  std::int64_t kv_blocks_in_use_at_end = 0;    // must be 0 (cached free blocks do not count)
  std::int64_t output_tokens_asked = 0;        // by completed requests; == tokens generated for them
  std::int64_t output_tokens_generated = 0;
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
  std::uint64_t decode_run_steps = 0;  // of those, iterations committed in quiet decode runs (not in the report)
  double wall_s = 0.0;
  Saturation saturation;
  RunAccounting accounting;
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
  // The exact reference path: every kernel timed by estimate() (no KernelTimeCache), every
  // token written into its Request (no decode window) and every prefix-cache block registered as
  // it fills. Slower; the tests check that it gives the same report as the default path.
  bool reference_path = false;
  // Fast-forward (on unless reference_path): a replica's iterations that end before any other
  // event are chained without the event queue (EventLoop::start). Off: one queue event per
  // iteration, the per-step loop the tests compare it with. Also runs of quiet decode steps
  // (Replica::advance_decode_run) are committed without the policy or per-sequence work.
  bool fast_forward = true;
  // Fleets in time windows (serve/fleet_lanes.hpp; on with fast_forward): each replica runs alone
  // up to the next router decision. Off: the one event queue for every replica's events.
  bool windows = true;
  // Threads that run a window's replicas (issue 39): the same report as 1 (one thread, the default).
  int sim_threads = 1;
  // O(KV capacity) allocator checks and the decode window's bookkeeping checks after every
  // iteration. On by default when built with SERVESIM_CHECK_INVARIANTS (Debug builds); the cheap
  // end-of-run checks always run.
#ifdef SERVESIM_CHECK_INVARIANTS
  bool check_every_iteration = true;
#else
  bool check_every_iteration = false;
#endif
};
// The replicas a scenario deploys: data_parallel_size unified replicas, or the prefill pool then
// the decode pool. Throws InputError when a replica's model does not fit.
std::vector<ReplicaSpec> replica_specs(const Scenario& scenario);

// Runs the scenario to completion. Throws InputError when the model does not fit, and
// std::logic_error when a run invariant breaks: every arrived request ends completed, rejected
// or timed out and none is left in flight; every KV block is free at the end; time never goes
// backwards; each completed request generated exactly the tokens it asked for.
SimResult simulate(const Scenario& scenario, const SimHooks& hooks = {});

}  // namespace servesim
