// A piecewise-constant signal (e.g. KV usage) sampled on a regular time grid for plots, in bounded
// memory: when max_points samples are held, every other one is dropped and the spacing doubles.
// Sample times are multiples of the spacing, so the series is deterministic.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "sim/core/time.hpp"

namespace servesim {

class SampledSeries {
 public:
  explicit SampledSeries(std::size_t max_points = 512, TimeNs first_step_ns = 1'000'000)
      : max_points_(max_points < 2 ? 2 : max_points), step_ns_(first_step_ns) {}

  // From `now_ns` on, the signal is `value`. Calls must come in non-decreasing time. No call is
  // needed while the value holds: the next set or finish records it at each sample time.
  void set(TimeNs now_ns, double value) {
    if (next_ns_ < now_ns) record_before(now_ns);
    value_ = value;
  }
  // Takes the samples up to and including end_ns.
  void finish(TimeNs end_ns) {
    while (next_ns_ <= end_ns) record(next_ns_, value_);
  }
  const std::vector<std::pair<TimeNs, double>>& points() const { return points_; }
  TimeNs step_ns() const { return step_ns_; }

 private:
  // Records the held value at each sample time before now_ns. Out of line: a sample falls due
  // once per step_ns_, but set() runs at every change of the signal (KV usage: most decode
  // steps), and this loop inlined there costs the caller registers and stack on every call.
  [[gnu::noinline]] void record_before(TimeNs now_ns) {
    while (next_ns_ < now_ns) record(next_ns_, value_);
  }
  void record(TimeNs t, double v) {
    points_.emplace_back(t, v);
    next_ns_ = t + step_ns_;
    if (points_.size() < max_points_) return;
    // Keep samples on the doubled grid (even multiples of the old step).
    const TimeNs wide = 2 * step_ns_;
    std::size_t kept = 0;
    for (const auto& p : points_) {
      if (p.first % wide == 0) points_[kept++] = p;
    }
    points_.resize(kept);
    step_ns_ = wide;
    next_ns_ = (t / wide + 1) * wide;
  }

  std::size_t max_points_;
  TimeNs step_ns_;
  TimeNs next_ns_ = 0;
  double value_ = 0.0;
  std::vector<std::pair<TimeNs, double>> points_;
};

}  // namespace servesim
