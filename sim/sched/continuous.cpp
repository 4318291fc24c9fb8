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
      if (tokens > budget) break;
      if (static_cast<std::int64_t>(st.running.size()) >= cfg.max_num_seqs) break;
      if (!st.fits_with_watermark(st.admission_blocks(head, probe, tokens))) break;
      if (!admit_ok(st, head)) break;
      const std::size_t index = st.admit_front(probe, tokens);
      plan.add_prefill(index, tokens, st.running[index]);
      budget -= tokens;
    }
    if (!plan.items.empty()) return;
  }

  // 2. Decode: each running sequence appends one token, oldest first.
  st.decode_all(plan);
}

}  // namespace servesim
