// Chunked prefill, as Sarathi-Serve and vLLM v1 schedule it: every iteration has one token budget
// (max_num_batched_tokens). Running decodes come first (one token each; growth may preempt the
// youngest), then the next chunks of prompts already running, oldest first, then new prompts in
// queue order, each chunk capped by long_prefill_token_threshold and by what is left of the budget.
// Prefill and decode share iterations, so a long prompt no longer stalls every decode behind it.
// Without chunking (the `inflight` policy) the same loop is TensorRT-LLM's in-flight batching:
// its MicroBatchScheduler (cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp) walks the
// active requests in order, generation requests counting one token, a context request its whole
// prompt, and stops at the first one that would exceed max_num_tokens or max_batch_size.
#include "sim/sched/chunked_prefill.hpp"

#include <algorithm>
#include <limits>

namespace servesim {

ChunkedPrefillScheduler::ChunkedPrefillScheduler(const SchedulerConfig& c, bool chunk_prompts)
    : threshold_(chunk_prompts && c.long_prefill_token_threshold > 0 ? c.long_prefill_token_threshold
                                                                     : std::numeric_limits<std::int64_t>::max()),
      chunk_prompts_(chunk_prompts) {}

void ChunkedPrefillScheduler::schedule(ReplicaState& st, IterationPlan& plan) {
  const EngineConfig& cfg = st.config;
  st.drop_expired();
  st.swap_in();
  auto& running = st.running;

  // 1. Decodes. Every running sequence is visited once here and once for the plan below, each
  // visit no more than the plan needs (growth is inline while the last block has room); the
  // prompts being prefilled, usually few, are listed (unprefilled_, ascending) for the rest.
  const std::size_t decodes = st.grow_prefilled(unprefilled_);
  chunks_.assign(unprefilled_.size(), 0);
  std::int64_t budget = cfg.max_num_batched_tokens - static_cast<std::int64_t>(decodes);

  // 2. Chunks of prompts already running. A chunk without blocks preempts the youngest running
  // prompt (not a decode: those are planned); with none younger, it waits for decodes to finish.
  for (std::size_t u = 0; u < unprefilled_.size() && budget > 0; ++u) {
    const std::size_t j = unprefilled_[u];
    const std::int64_t chunk = std::min({running[j].target_tokens - running[j].computed_tokens, threshold_, budget});
    bool grown = st.grow(j, running[j].computed_tokens + chunk);
    // The youngest prompt is the last listed; it is younger than running[j] unless it is j.
    while (!grown && unprefilled_.size() > u + 1) {
      st.preempt(unprefilled_.back());
      unprefilled_.pop_back();
      chunks_.pop_back();
      grown = st.grow(j, running[j].computed_tokens + chunk);
    }
    if (!grown) continue;
    chunks_[u] = chunk;
    budget -= chunk;
  }

  // 3. New prompts (none while sequences wait in swap space).
  while (budget > 0 && st.swapped.empty() && !st.waiting.empty() &&
         static_cast<std::int64_t>(running.size()) < cfg.max_num_seqs) {
    const Sequence& head = st.waiting.front();
    const PrefixProbe probe = st.probe_prefix(head);
    const std::int64_t remaining = head.target_tokens - probe.hit_blocks * st.kv.block_size_tokens();
    // Whole prompts only: one that does not fit what is left waits (queue order, as TensorRT-LLM
    // stops at the first request that does not fit). Replica::enqueue rejects prompts longer than
    // the budget, but a sequence preempted by recompute returns with its generated tokens and may
    // exceed it; that one is recomputed in chunks rather than waiting for ever.
    if (!chunk_prompts_ && remaining > budget && remaining <= cfg.max_num_batched_tokens) break;
    const std::int64_t chunk = std::min({remaining, threshold_, budget});
    if (!st.fits_with_watermark(st.admission_blocks(head, probe, chunk))) break;
    unprefilled_.push_back(static_cast<std::uint32_t>(st.admit_front(probe, chunk)));
    chunks_.push_back(chunk);
    budget -= chunk;
  }

  // Items in running order: every sequence not listed decodes, a listed one runs its chunk, if
  // any. The decodes' contexts are summed as integers and added to the shape once: the same
  // double as one add_decode each (every partial sum is an integer below 2^53: exact in any order).
  std::int64_t decode_context = 0;
  std::size_t u = 0;
  for (std::size_t j = 0; j < running.size(); ++j) {
    if (u < unprefilled_.size() && unprefilled_[u] == j) {
      if (chunks_[u] > 0) plan.add_prefill(j, chunks_[u], running[j]);
      ++u;
      continue;
    }
    plan.items.push_back({static_cast<std::uint32_t>(j), 1, false});
    decode_context += running[j].computed_tokens;
  }
  if (decodes > 0) {
    const auto n = static_cast<std::int64_t>(decodes);
    plan.shape.decode_seqs += n;
    plan.shape.decode_kv_tokens += static_cast<double>(decode_context + n * plan.shape.decode_query_tokens);
  }
}

}  // namespace servesim
