// Sarathi / vLLM v1 chunked prefill, and in-flight batching with whole prompts (TensorRT-LLM's
// micro-batch scheduler without context chunking): see chunked_prefill.cpp.
#pragma once
#include <vector>

#include "sim/sched/batch_scheduler.hpp"

namespace servesim {

class ChunkedPrefillScheduler final : public BatchScheduler {
 public:
  // chunk_prompts false: a prompt runs whole in one iteration or waits (the `inflight` policy).
  ChunkedPrefillScheduler(const SchedulerConfig& config, bool chunk_prompts);
  void schedule(ReplicaState& state, IterationPlan& plan) override;
  bool chunks_prompts() const override { return chunk_prompts_; }
  // In-flight batching runs a prompt whole: one longer than an iteration's token budget never runs.
  bool rejects_prompts_over_budget() const override { return !chunk_prompts_; }

 private:
  std::int64_t threshold_;             // largest chunk per prompt per iteration
  bool chunk_prompts_;
  // This iteration's prompts being prefilled (running indices, ascending) and their chunks (0: none).
  std::vector<std::uint32_t> unprefilled_;
  std::vector<std::int64_t> chunks_;
};

}  // namespace servesim
