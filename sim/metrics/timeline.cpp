// Bounded-bucket timeline; see timeline.hpp.
#include "sim/metrics/timeline.hpp"

#include <algorithm>

namespace servesim {

void TimelineBucket::merge(const TimelineBucket& o) {
  iterations += o.iterations;
  busy_ns += o.busy_ns;
  seqs_sum += o.seqs_sum;
  seqs_max = std::max(seqs_max, o.seqs_max);
  kv_frac_sum += o.kv_frac_sum;
  kv_frac_max = std::max(kv_frac_max, o.kv_frac_max);
  waiting_sum += o.waiting_sum;
  waiting_max = std::max(waiting_max, o.waiting_max);
  output_tokens += o.output_tokens;
  arrived += o.arrived;
  completed += o.completed;
  rejected += o.rejected;
  preemptions += o.preemptions;
}

Timeline::Timeline(std::size_t max_buckets, TimeNs initial_width_ns)
    : max_buckets_(std::max<std::size_t>(2, max_buckets & ~std::size_t{1})), width_ns_(std::max<TimeNs>(1, initial_width_ns)) {
  buckets_.reserve(max_buckets_);
}

TimelineBucket& Timeline::find(TimeNs t) {
  t = std::max<TimeNs>(0, t);
  while (static_cast<std::size_t>(t / width_ns_) >= max_buckets_) {
    // Double the width: bucket i absorbs 2i and 2i+1.
    const std::size_t n = buckets_.size();
    for (std::size_t i = 0; i < (n + 1) / 2; ++i) {
      TimelineBucket merged = buckets_[2 * i];
      if (2 * i + 1 < n) merged.merge(buckets_[2 * i + 1]);
      buckets_[i] = merged;
    }
    buckets_.resize((n + 1) / 2);
    width_ns_ *= 2;
  }
  const auto idx = static_cast<std::size_t>(t / width_ns_);
  if (idx >= buckets_.size()) buckets_.resize(idx + 1);
  last_index_ = idx;
  last_start_ns_ = static_cast<TimeNs>(idx) * width_ns_;
  last_end_ns_ = last_start_ns_ + width_ns_;
  return buckets_[idx];
}

}  // namespace servesim
