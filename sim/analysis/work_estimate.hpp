// Work estimates before work: the requests, sequence-steps and memory a set of simulations would
// take, from the scenarios alone, and the refusal of a set past a budget (a run that would take
// hours or exhaust memory fails in a moment, saying what to change).
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"

namespace servesim {

struct WorkEstimate {
  double requests = 0.0;        // requests generated
  double sequence_steps = 0.0;  // (sequence, iteration) visits: about requests x output tokens
  double peak_bytes = 0.0;      // memory its requests hold at once
  bool bounded = true;          // false: a trace read to its end, which the estimate does not read
};

// One simulation of `s`. Upper-leaning: lengths at their clamped means, every request in memory at
// once (as with all_at_once arrivals or a queue that never drains).
WorkEstimate estimate_work(const Scenario& s);

// Defaults: about 20 s of simulation on one core for the slowest workloads (every request at once,
// 4.5e7 sequence-steps/s; ordinary arrivals run 3-4x faster, and sweeps, plans and replications
// spread over the cores), so that a run nobody sized on purpose answers or is refused within about
// the 20 s after which a user calls it hung, while `plan` over every bundled GPU (8.9e8) still
// runs; and half a typical workstation's memory. Bigger studies pass the command's override flag.
struct WorkBudget {
  double max_sequence_steps = 1e9;
  double max_bytes = 8e9;
  // What one simulation costs beyond its requests, in sequence-steps: building its scenario (the
  // default: about 2 ms, see work_estimate.cpp), or 2e4 for a simulation of a scenario built once
  // and copied (calibrate engine: 0.40 ms per copy and simulate of a 1-request llama-3.1-8b
  // scenario on h100-sxm, Release, one core).
  double setup_sequence_steps = 1e5;
};

// Help text of the override flag, `--no-work-limit`, of every command that checks its work.
inline constexpr const char* kNoWorkLimitHelp = "run even past the work and memory limits (about 20 s of simulation on one core, 8 GB)";

// Throws InputError naming `where` (the scenario file) when the simulations (each of `runs`,
// `copies` times: replications, or a search's probes times its replications) together exceed
// `budget`: the estimate, the limit, the keys or flags that size the work (`levers`, e.g.
// "workload.num_requests or --replications") and `override_flag`, which lifts the limit.
// `built_at_once`: how many simulations' scenarios exist at the same time; by default all of them
// (run and sweep build every scenario before the first run; saturate and plan build one probe's).
// A span, not a vector: a single scenario is checked in place (`check_work(s, ...)`), not copied
// with its hardware profile (~400 page faults of start-up on a100-80gb-sxm).
void check_work(std::span<const Scenario> runs, std::size_t copies, const WorkBudget& budget, const std::string& where,
                const std::string& levers, const std::string& override_flag,
                std::optional<std::size_t> built_at_once = std::nullopt);
inline void check_work(const Scenario& run, std::size_t copies, const WorkBudget& budget, const std::string& where,
                       const std::string& levers, const std::string& override_flag,
                       std::optional<std::size_t> built_at_once = std::nullopt) {
  check_work(std::span<const Scenario>(&run, 1), copies, budget, where, levers, override_flag, built_at_once);
}

}  // namespace servesim
