// Request-level batching: static (fixed, padded batches) and dynamic (Triton's dynamic batcher).
// A batch forms only when the previous one is done, and nothing joins it while it runs.
#pragma once
#include "sim/sched/batch_scheduler.hpp"

namespace servesim {

class RunToCompletionScheduler final : public BatchScheduler {
 public:
  enum class Mode { static_padded, dynamic };
  RunToCompletionScheduler(Mode mode, const SchedulerConfig& config);
  void schedule(ReplicaState& state, IterationPlan& plan) override;
  std::optional<BatchRows> max_batch_rows() const override {
    return BatchRows{mode_ == Mode::static_padded ? "engine.scheduler.batch_size" : "engine.scheduler.max_batch_size", rows_};
  }

 private:
  bool form_batch(ReplicaState& st, IterationPlan& plan);
  void plan_prefill(ReplicaState& st, IterationPlan& plan);

  Mode mode_;
  std::int64_t rows_;     // static: rows of every batch; dynamic: most requests in a batch
  TimeNs window_ns_;      // static: batch_timeout_s; dynamic: max_queue_delay_s
  std::int64_t pad_tokens_ = 0;         // static: the batch's prompts are padded to this length
  std::int64_t empty_rows_to_prefill_ = 0;  // static: rows without a request still to prefill
};

}  // namespace servesim
