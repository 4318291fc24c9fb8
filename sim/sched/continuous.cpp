// Continuous batching as vLLM (v0 scheduler, chunked prefill off) does it: waiting prompts are
// admitted FCFS while max_num_seqs, max_num_batched_tokens and free KV blocks (above a watermark)
// allow, and an iteration with new prompts runs only those prompts (prefill-prioritised). Otherwise
// every running sequence decodes one token; when a block cannot be found the youngest running
// sequence is preempted by recompute.
#include "sim/sched/continuous.hpp"

#include <cmath>

namespace servesim {

void ContinuousScheduler::schedule(ReplicaState& st, IterationPlan& plan) {
  const EngineConfig& cfg = st.config;
  const auto watermark_blocks = static_cast<std::int64_t>(std::floor(cfg.watermark_frac * static_cast<double>(st.kv.capacity_blocks())));

  // 1. Prefill: admit waiting prompts.
  std::int64_t budget = cfg.max_num_batched_tokens;
  while (!st.waiting.empty()) {
    const Sequence& head = st.waiting.front();
    const std::int64_t tokens = head.target_tokens;
    if (tokens > budget) break;
    if (static_cast<std::int64_t>(st.running.size()) >= cfg.max_num_seqs) break;
    if (st.kv.free_blocks() - st.kv.blocks_for_tokens(tokens) < watermark_blocks) break;
    Sequence seq = head;
    st.waiting.pop_front();
    seq.slot = st.take_slot();
    st.kv.grow_to(seq.slot, tokens);
    st.requests[seq.request].state = RequestState::running;
    plan.items.push_back({static_cast<std::uint32_t>(st.running.size()), tokens, true});
    plan.shape.add_prefill(tokens, 0, true);
    st.running.push_back(seq);
    budget -= tokens;
  }
  if (!plan.items.empty()) return;

  // 2. Decode: each running sequence appends one token. Make room oldest-first, preempting the
  // youngest (vLLM preempts from the back of the running queue).
  for (std::size_t i = 0; i < st.running.size(); ++i) {
    while (!st.kv.can_grow_to(st.running[i].slot, st.running[i].computed_tokens + 1)) {
      const Sequence victim = st.running.back();
      st.running.pop_back();
      st.preempt_to_waiting_front(victim);
      if (i >= st.running.size()) break;  // the sequence itself was the youngest
    }
    if (i < st.running.size()) st.kv.grow_to(st.running[i].slot, st.running[i].computed_tokens + 1);
  }
  for (std::size_t i = 0; i < st.running.size(); ++i) {
    plan.items.push_back({static_cast<std::uint32_t>(i), 1, false});
    plan.shape.add_decode(st.running[i].computed_tokens);
  }
}

}  // namespace servesim
