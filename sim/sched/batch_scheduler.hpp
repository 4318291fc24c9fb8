// Batch scheduling policies: each decides, before every iteration, which sequences run and how
// many tokens each computes, using the replica's state (replica_state.hpp: queues, KV
// reservation, preemption) as its toolkit. Each policy lives in its own file beside this one and
// is one entry of the registry in policies.cpp; what the parser and the replica need to know about
// a policy they ask it (the traits below), never its name.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/core/registry.hpp"
#include "sim/sched/replica_state.hpp"

namespace servesim {

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  // Fills `plan` (cleared by the caller) for the next iteration at state.now_ns; an empty plan
  // means idle (until plan.wake_at_ns, if set, or the next arrival or completion). May admit
  // from `waiting`, allocate KV blocks and preempt running sequences.
  virtual void schedule(ReplicaState& state, IterationPlan& plan) = 0;
  // Whether schedule() reads the running sequences' computed_tokens other than through
  // decode_all (or after close_decode_window); if not, the replica keeps them lazily in the
  // decode window (ReplicaState::lazy_computed).
  virtual bool reads_running_tokens() const { return true; }
  // Whether schedule() in `state` would only run decode_all (admit, drop, swap and preempt
  // nothing else) and would keep doing so while nothing happens but decode steps (no arrival,
  // no sequence finishing, free blocks only shrinking). The replica then advances such steps
  // in a quiet decode run (Replica::advance_decode_run) without calling schedule(). Policies
  // that look at the batch every step answer false (the default) and are stepped one by one.
  virtual bool decodes_only(const ReplicaState& /*state*/) const { return false; }

  // Traits: what the parser's start-up checks and the replica ask of the chosen policy.
  // Whether a prompt longer than the iteration's token budget (max_num_batched_tokens) is
  // computed in chunks over several iterations. A policy that neither chunks prompts nor rejects
  // them on arrival needs max_num_batched_tokens >= max_model_len, as vLLM checks at start-up.
  virtual bool chunks_prompts() const { return false; }
  // Whether a prompt longer than the token budget is rejected on arrival (it would never run).
  virtual bool rejects_prompts_over_budget() const { return false; }
  // Whether the policy plans vLLM's multi-step decode windows (engine.num_scheduler_steps > 1).
  virtual bool supports_multi_step() const { return false; }
  // The most requests one batch holds, when the policy has its own setting for it (which must be
  // <= engine.max_num_seqs): the setting's key and value.
  struct BatchRows {
    std::string key;
    std::int64_t rows = 0;
  };
  virtual std::optional<BatchRows> max_batch_rows() const { return std::nullopt; }
};

// One entry per policy: its name (engine.scheduler.impl), description, the settings only it
// reads (own_keys: engine.scheduler.* keys declared in config/scenario_keys.cpp) and its factory.
struct PolicyEntry : RegistryEntry {
  std::unique_ptr<BatchScheduler> (*make)(const SchedulerConfig& config) = nullptr;
};
const Registry<PolicyEntry>& scheduler_policies();

// The policy config.impl names (a registered name: the parser checks it first).
std::unique_ptr<BatchScheduler> make_scheduler(const SchedulerConfig& config);
// The registered policies, made with default settings, that answer `trait` true ("a, b"), for
// messages that say which policy a setting needs.
std::string policies_with(bool (BatchScheduler::*trait)() const);
// Whether `impl` reads declared key `path`: its own settings, and those no policy owns.
bool policy_reads(const std::string& impl, const std::string& path);

}  // namespace servesim
