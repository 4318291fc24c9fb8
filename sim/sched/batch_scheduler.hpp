// Batch scheduling policies: each decides, before every iteration, which sequences run and how
// many tokens each computes, using the replica's state (replica_state.hpp: queues, KV
// reservation, preemption) as its toolkit. Policies are registered by name in
// make_scheduler/list_policies (policies.cpp); each lives in its own file beside this one.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
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
};

struct PolicyParam {
  std::string name, type, default_value, description;
};
struct PolicyInfo {
  std::string name, description;
  std::vector<PolicyParam> params;
};

// Registries by name (policies, routers, cost models) list PolicyInfo: whether `name` is one of
// `infos`, and their names comma-separated for messages.
bool has_name(const std::vector<PolicyInfo>& infos, const std::string& name);
std::string names_of(const std::vector<PolicyInfo>& infos);

// A declared scenario key (config/scenario_keys.cpp) as a policy parameter for `servesim list`.
PolicyParam policy_param(const std::string& key);

std::unique_ptr<BatchScheduler> make_scheduler(const SchedulerConfig& config);
std::vector<PolicyInfo> list_policies();

}  // namespace servesim
