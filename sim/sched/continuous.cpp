// Continuous batching as vLLM (v0 scheduler, chunked prefill off) does it: waiting prompts are
// admitted in queue order while max_num_seqs, max_num_batched_tokens and free KV blocks (above a
// watermark) allow, and an iteration with new prompts runs only those prompts (prefill-
// prioritised). Otherwise every running sequence decodes one token; when a block cannot be found
// the youngest running sequence is preempted (recompute or swap). While sequences are swapped out
// no new prompt is admitted, and they come back in a step that preempts nothing (as vLLM).
#include "sim/sched/continuous.hpp"

namespace servesim {

void ContinuousScheduler::schedule(ReplicaState& st, IterationPlan& plan) {
  const EngineConfig& cfg = st.config;
  st.drop_expired();

  // 1. Prefill: admit waiting prompts.
  if (st.swapped.empty()) {
    std::int64_t budget = cfg.max_num_batched_tokens;
    while (!st.waiting.empty()) {
      const Sequence& head = st.waiting.front();
      const PrefixProbe probe = st.probe_prefix(head);
      const std::int64_t tokens = head.target_tokens - probe.hit_blocks * st.kv.block_size_tokens();
      if (!head_fits(st, head, probe, tokens, budget) || !admit_ok(st, head)) break;
      const std::size_t index = st.admit_front(probe, tokens);
      plan.add_prefill(index, tokens, st.running[index]);
      budget -= tokens;
    }
    if (!plan.items.empty()) return;
  }

  // 2. Decode: each running sequence appends one token, oldest first.
  st.decode_all(plan);
}

bool ContinuousScheduler::head_fits(const ReplicaState& st, const Sequence& head, const PrefixProbe& probe,
                                    std::int64_t tokens, std::int64_t budget) {
  return tokens <= budget && static_cast<std::int64_t>(st.running.size()) < st.config.max_num_seqs &&
         st.fits_with_watermark(st.admission_blocks(head, probe, tokens));
}

bool ContinuousScheduler::decodes_only(const ReplicaState& st) const {
  if (!st.swapped.empty()) return false;
  if (st.waiting.empty()) return true;
  if (st.config.scheduler.max_waiting_time_s > 0.0) return false;
  // schedule()'s first admission test, which fails alike at every step of the run.
  const Sequence& head = st.waiting.front();
  const PrefixProbe probe = st.probe_prefix(head);
  return !head_fits(st, head, probe, head.target_tokens - probe.hit_blocks * st.kv.block_size_tokens(),
                    st.config.max_num_batched_tokens);
}

}  // namespace servesim
