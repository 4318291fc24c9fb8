// Static and dynamic batching. A new batch forms when the replica is empty and either enough
// requests wait (batch_size / max_batch_size) or the oldest has waited the window. Its prompts are
// prefilled in as few iterations as max_num_batched_tokens allows, then it decodes until its last
// request is done.
//  - static: every batch has batch_size rows (a compiled, fixed shape). Prompts are padded to the
//    longest prompt of the batch; rows without a request, and rows whose request has finished,
//    keep computing (padding) until the longest output is done. Finished requests still stream
//    their answer at their own last token; their KV is freed at once (it is never read again).
//  - dynamic: up to max_batch_size requests, ragged (no padding): finished requests leave.
#include "sim/sched/run_to_completion.hpp"

#include <algorithm>

namespace servesim {

RunToCompletionScheduler::RunToCompletionScheduler(Mode mode, const SchedulerConfig& c)
    : mode_(mode),
      rows_(mode == Mode::static_padded ? c.batch_size : c.max_batch_size),
      window_ns_(seconds_to_ns(mode == Mode::static_padded ? c.batch_timeout_s : c.max_queue_delay_s)) {}

bool RunToCompletionScheduler::form_batch(ReplicaState& st, IterationPlan& plan) {
  if (st.waiting.empty()) return false;
  const TimeNs deadline = st.requests[st.waiting.front().request].arrival_ns + window_ns_;
  if (static_cast<std::int64_t>(st.waiting.size()) < rows_ && st.now_ns < deadline) {
    plan.wake_at_ns = deadline;
    return false;
  }
  pad_tokens_ = 0;
  std::int64_t admitted = 0;
  while (admitted < rows_ && !st.waiting.empty()) {
    const Sequence& head = st.waiting.front();
    const PrefixProbe probe = st.probe_prefix(head);
    const std::int64_t tokens = head.target_tokens - probe.hit_blocks * st.kv.block_size_tokens();
    if (!st.fits_with_watermark(st.admission_blocks(head, probe, tokens))) break;
    st.admit_front(probe, tokens);
    pad_tokens_ = std::max(pad_tokens_, tokens);
    ++admitted;
  }
  empty_rows_to_prefill_ = mode_ == Mode::static_padded ? rows_ - admitted : 0;
  return admitted > 0;
}

void RunToCompletionScheduler::plan_prefill(ReplicaState& st, IterationPlan& plan) {
  std::int64_t budget = st.config.max_num_batched_tokens;
  const bool padded = mode_ == Mode::static_padded;
  for (std::size_t i = 0; i < st.running.size(); ++i) {
    const Sequence& seq = st.running[i];
    const std::int64_t tokens = seq.target_tokens - seq.computed_tokens;
    if (tokens <= 0) continue;
    const std::int64_t cost = padded ? pad_tokens_ : tokens;
    if (cost > budget && !plan.items.empty()) break;
    if (padded) {
      // The row computes pad_tokens_ positions; the model sees the padded shape.
      plan.items.push_back({static_cast<std::uint32_t>(i), tokens, true});
      plan.shape.add_prefill(pad_tokens_, seq.computed_tokens, true);
      plan.padding_tokens += pad_tokens_ - tokens;
    } else {
      plan.add_prefill(i, tokens, seq);
    }
    budget -= cost;
  }
  while (padded && empty_rows_to_prefill_ > 0 && (budget >= pad_tokens_ || plan.shape.total_tokens() == 0)) {
    plan.shape.add_prefill(pad_tokens_, 0, true);
    plan.padding_tokens += pad_tokens_;
    budget -= pad_tokens_;
    --empty_rows_to_prefill_;
  }
}

void RunToCompletionScheduler::schedule(ReplicaState& st, IterationPlan& plan) {
  st.drop_expired();
  if (st.running.empty() && st.swapped.empty()) {
    empty_rows_to_prefill_ = 0;
    if (!form_batch(st, plan)) return;
  }
  plan_prefill(st, plan);
  if (plan.shape.total_tokens() > 0) return;

  st.decode_all(plan);
  if (mode_ == Mode::static_padded && plan.seqs() > 0) {
    // Rows without a live request decode padding at the batch's longest context.
    std::int64_t context = 0;
    for (const Sequence& s : st.running) context = std::max(context, s.computed_tokens);
    for (std::int64_t r = static_cast<std::int64_t>(st.running.size()); r < rows_; ++r) {
      plan.shape.add_decode(context);
      plan.padding_tokens += 1;
    }
  }
}

}  // namespace servesim
