// Log-bucketed histogram; see log_histogram.hpp for the error bound.
#include "sim/metrics/log_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace servesim {

LogHistogram::LogHistogram(double min_value, double max_value, double relative_width)
    : log_min_(std::log(min_value)), inv_log_step_(1.0 / std::log1p(relative_width)), log_step_(std::log1p(relative_width)) {
  num_buckets_ = static_cast<std::size_t>(std::ceil((std::log(max_value) - log_min_) * inv_log_step_)) + 1;
}

std::size_t LogHistogram::bucket_of(double value) const {
  std::size_t idx = 0;
  if (value > 0.0) {
    const double pos = (std::log(value) - log_min_) * inv_log_step_;
    if (pos > 0.0) idx = std::min(static_cast<std::size_t>(pos), num_buckets_ - 1);
  }
  return idx;
}

void LogHistogram::cover(std::size_t lo, std::size_t hi) {
  if (buckets_.empty()) {
    first_bucket_ = lo;
    buckets_.assign(hi - lo + 1, 0);
    return;
  }
  // Grown by at least the span's size on the side that needs it (clamped to the layout), so a
  // creeping value reallocates O(log n) times.
  const std::size_t size = buckets_.size();
  if (lo < first_bucket_) {
    const std::size_t grow = std::max(first_bucket_ - lo, std::min(size, first_bucket_));
    buckets_.insert(buckets_.begin(), grow, 0);
    first_bucket_ -= grow;
    cached_slot_ += grow;
  }
  const std::size_t end = first_bucket_ + buckets_.size();  // one past the last stored bucket
  if (hi >= end) buckets_.resize(buckets_.size() + std::max(hi + 1 - end, std::min(size, num_buckets_ - end)), 0);
}

void LogHistogram::rebucket(double value) {
  const std::size_t b = bucket_of(value);
  const bool again = !buckets_.empty() && b == first_bucket_ + cached_slot_;
  if (buckets_.empty() || b < first_bucket_ || b >= first_bucket_ + buckets_.size()) cover(b, b);
  cached_slot_ = b - first_bucket_;
  inner_lo_ = 1.0;
  inner_hi_ = 0.0;
  // The first and last buckets also hold the values clamped into them: keep those on bucket_of.
  if (!again || b == 0 || b + 1 >= num_buckets_) return;
  // Bucket b holds log(v) in [log_min + b step, log_min + (b + 1) step). bucket_of's position
  // (log(v) - log_min) / step is off by ~1e-11 at most (a few ulp of log() and of the
  // subtraction, times 1 / step = 500); a 1e-9 relative margin moves it by 1e-9 / step = 5e-7.
  constexpr double kMargin = 1e-9;
  const double lo = std::exp(log_min_ + static_cast<double>(b) * log_step_);
  const double hi = std::exp(log_min_ + static_cast<double>(b + 1) * log_step_);
  inner_lo_ = lo * (1.0 + kMargin);
  inner_hi_ = hi * (1.0 - kMargin);
}

void LogHistogram::merge(const LogHistogram& o) {
  if (o.count_ == 0) return;
  if (o.num_buckets_ != num_buckets_) throw std::logic_error("LogHistogram::merge: different bucket layouts");
  if (count_ == 0) {
    min_ = o.min_;
    max_ = o.max_;
  } else {
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  count_ += o.count_;
  sum_ += o.sum_;
  sum_sq_ += o.sum_sq_;
  cover(o.first_bucket_, o.first_bucket_ + o.buckets_.size() - 1);
  const std::size_t offset = o.first_bucket_ - first_bucket_;
  for (std::size_t i = 0; i < o.buckets_.size(); ++i) buckets_[offset + i] += o.buckets_[i];
}

double LogHistogram::stddev() const {
  if (count_ < 2) return 0.0;
  const double m = mean();
  const double var = sum_sq_ / static_cast<double>(count_) - m * m;
  return var > 0.0 ? std::sqrt(var) : 0.0;
}

double LogHistogram::quantile(double q) const {
  if (count_ == 0) return 0.0;
  const auto rank = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(q * static_cast<double>(count_))));
  std::int64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      const double centre = std::exp(log_min_ + (static_cast<double>(first_bucket_ + i) + 0.5) * log_step_);
      return std::clamp(centre, min_, max_);
    }
  }
  return max_;
}

}  // namespace servesim
