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
  // Nothing swapped out, and no waiting prompt or one that its token budget, max_num_seqs or
  // the free blocks keep out (each stays so while only decode steps run: blocks only shrink);
  // admit_ok is never reached then. A waiting prompt that max_waiting_time_s may drop is not quiet.
  bool decodes_only(const ReplicaState& state) const override;
  // Decode windows of engine.num_scheduler_steps (vLLM 0.5.5-0.6.x; see continuous.cpp).
  bool supports_multi_step() const override { return true; }

 protected:
  // The head of the queue passes the token budget, max_num_seqs and the free-block checks
  // (admit_ok comes after); `tokens` its prompt tokens past the cached prefix.
  static bool head_fits(const ReplicaState& state, const Sequence& head, const PrefixProbe& probe, std::int64_t tokens,
                        std::int64_t budget);

  // Extra admission test for the head of the queue, after the token budget, max_num_seqs and
  // free-block checks passed. Continuous batching needs none.
  virtual bool admit_ok(ReplicaState& /*state*/, const Sequence& /*head*/) { return true; }
};

}  // namespace servesim
