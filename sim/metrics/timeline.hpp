// Timeline: run-wide quantities over simulated time in a bounded number of buckets, so memory
// stays constant however long the run is. The bucket width starts at 1 ms and doubles (merging
// neighbours) whenever an event falls past the last bucket; deterministic for the same events.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/time.hpp"

namespace servesim {

struct TimelineBucket {
  std::int64_t iterations = 0;       // iterations starting in the bucket
  double busy_ns = 0.0;              // their durations
  double seqs_sum = 0.0;             // batch size summed over those iterations
  std::int64_t seqs_max = 0;
  double kv_frac_sum = 0.0, kv_frac_max = 0.0;  // KV blocks used / capacity, per iteration
  double waiting_sum = 0.0;          // queue length after scheduling, per iteration
  std::int64_t waiting_max = 0;
  std::int64_t output_tokens = 0;    // tokens sampled by iterations ending in the bucket
  std::int64_t arrived = 0, completed = 0, rejected = 0, preemptions = 0;

  void merge(const TimelineBucket& o);
};

class Timeline {
 public:
  explicit Timeline(std::size_t max_buckets = 240, TimeNs initial_width_ns = 1'000'000);

  // The bucket holding time t (>= 0), widening the buckets first when t lies past the end.
  // Iterations come in time order, several to a bucket: the last bucket found answers without
  // a division when t falls in it (the same bucket the division gives).
  TimelineBucket& at(TimeNs t) {
    if (t >= last_start_ns_ && t < last_end_ns_) return buckets_[last_index_];
    return find(t);
  }
  TimeNs bucket_width_ns() const { return width_ns_; }
  // Buckets from t = 0 up to the last one touched.
  const std::vector<TimelineBucket>& buckets() const { return buckets_; }

 private:
  TimelineBucket& find(TimeNs t);

  std::size_t max_buckets_;
  TimeNs width_ns_;
  std::vector<TimelineBucket> buckets_;
  // [last_start_ns_, last_end_ns_): the bucket find() returned last, at buckets_[last_index_]
  // (empty until the first find; widening moves every bucket, and find() runs first then).
  TimeNs last_start_ns_ = 0, last_end_ns_ = 0;
  std::size_t last_index_ = 0;
};

}  // namespace servesim
