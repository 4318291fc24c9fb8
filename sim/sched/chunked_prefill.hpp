// Sarathi / vLLM v1 chunked prefill (see chunked_prefill.cpp).
#pragma once
#include <vector>

#include "sim/sched/batch_scheduler.hpp"

namespace servesim {

class ChunkedPrefillScheduler final : public BatchScheduler {
 public:
  explicit ChunkedPrefillScheduler(const SchedulerConfig& config);
  void schedule(ReplicaState& state, IterationPlan& plan) override;

 private:
  std::int64_t threshold_;             // largest chunk per prompt per iteration
  std::vector<std::int64_t> tokens_;   // this iteration's tokens per running index
};

}  // namespace servesim
