// vLLM-style continuous batching with prefill-prioritised iterations (see continuous.cpp).
#pragma once
#include "sim/sched/scheduler.hpp"

namespace servesim {

class ContinuousScheduler final : public BatchScheduler {
 public:
  void schedule(ReplicaState& state, IterationPlan& plan) override;
};

}  // namespace servesim
