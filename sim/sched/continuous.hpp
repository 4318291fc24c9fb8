// vLLM-style continuous batching with prefill-prioritised iterations (see continuous.cpp).
#pragma once
#include "sim/sched/batch_scheduler.hpp"

namespace servesim {

class ContinuousScheduler : public BatchScheduler {
 public:
  void schedule(ReplicaState& state, IterationPlan& plan) override;
  // Admission reads the waiting queue; running sequences are read only by decode_all (and by a
  // subclass's admit_ok after close_decode_window).
  bool reads_running_tokens() const override { return false; }

 protected:
  // Extra admission test for the head of the queue, after the token budget, max_num_seqs and
  // free-block checks passed. Continuous batching needs none.
  virtual bool admit_ok(ReplicaState& /*state*/, const Sequence& /*head*/) { return true; }
};

}  // namespace servesim
