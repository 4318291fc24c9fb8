// Token-level admission as LightLLM's router does it: no blocks are reserved ahead, but a prompt
// is admitted only if, with every running request (and the candidate) assumed to produce
// expected_output_tokens in total, the KV tokens held at the worst future step stay within
// capacity (minus the watermark). The estimate, not the true length, drives admission: a request
// that outlives it can still force a preemption when the cache runs out.
#include "sim/sched/token_level.hpp"

#include <algorithm>

namespace servesim {

std::int64_t TokenLevelScheduler::peak_future_tokens(std::vector<std::pair<std::int64_t, std::int64_t>>& seqs) {
  std::sort(seqs.begin(), seqs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::int64_t held = 0, peak = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    held += seqs[i].second;
    // When sequence i finishes, sequences 0..i (longer remaining) are still there, each grown by
    // remaining_i; the rest have finished and freed their tokens.
    peak = std::max(peak, held + static_cast<std::int64_t>(i + 1) * seqs[i].first);
  }
  return peak;
}

bool TokenLevelScheduler::admit_ok(ReplicaState& st, const Sequence& head) {
  st.close_decode_window();  // reads the running Requests' generated_tokens
  const std::int64_t max_len = st.config.max_model_len;
  const auto add = [&](const Sequence& s, std::int64_t current) {
    const Request& r = st.requests[s.request];
    std::int64_t remaining = std::max<std::int64_t>(1, expected_output_tokens_ - r.generated_tokens);
    remaining = std::min(remaining, std::max<std::int64_t>(1, max_len - current));
    scratch_.emplace_back(remaining, current);
  };
  scratch_.clear();
  for (const Sequence& s : st.running) add(s, s.kv_tokens);
  for (const Sequence& s : st.swapped) add(s, s.computed_tokens);
  add(head, head.target_tokens);
  const std::int64_t capacity_tokens = (st.kv.capacity_blocks() - st.watermark_blocks) * st.kv.block_size_tokens();
  return peak_future_tokens(scratch_) <= capacity_tokens;
}

}  // namespace servesim
