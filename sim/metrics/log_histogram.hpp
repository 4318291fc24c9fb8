// Streaming distribution of positive values in constant memory: log-spaced buckets 0.1% wide,
// so quantiles are within 0.1% relative error of the exact sample quantile (nearest rank);
// count, mean, standard deviation, min and max are exact.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace servesim {

class LogHistogram {
 public:
  // Values below min_value land in the first bucket; above max_value in the last.
  explicit LogHistogram(double min_value = 1e-7, double max_value = 1e6, double relative_width = 0.002);

  // Inline: called once per generated token (inter-token latency).
  void add(double value) {
    if (count_ == 0) {
      min_ = max_ = value;
    } else {
      min_ = value < min_ ? value : min_;
      max_ = value > max_ ? value : max_;
    }
    ++count_;
    sum_ += value;
    sum_sq_ += value * value;
    if (value != cached_value_) {
      cached_value_ = value;
      if (!(value >= inner_lo_ && value < inner_hi_)) rebucket(value);
    }
    ++buckets_[cached_slot_];
  }
  // add(value) where `twin` (the same layout) may have just been given the same value: then its
  // bucket is taken without a lookup. A request's per-class e2e and TPOT repeat the overall ones.
  void add_as_in(double value, const LogHistogram& twin) {
    if (value == twin.cached_value_ && value != cached_value_ && twin.log_min_ == log_min_ &&
        twin.inv_log_step_ == inv_log_step_ && twin.num_buckets_ == num_buckets_) {
      const std::size_t slot = twin.first_bucket_ + twin.cached_slot_ - first_bucket_;  // wraps if below
      if (slot < buckets_.size()) {
        cached_value_ = value;
        cached_slot_ = slot;
        inner_lo_ = twin.inner_lo_;
        inner_hi_ = twin.inner_hi_;
      }
    }
    add(value);
  }
  // add(value) n times in O(1) (a decode batch adds runs of equal inter-token gaps). The sums
  // take n * value at once, so they may differ from n separate adds in the last bits.
  void add_repeated(double value, std::int64_t n) {
    if (n <= 0) return;
    add(value);
    const double more = static_cast<double>(n - 1);
    count_ += n - 1;
    sum_ += more * value;
    sum_sq_ += more * (value * value);
    buckets_[cached_slot_] += n - 1;
  }
  // Adds all of `other`'s values; both must have been built with the same bounds and width.
  void merge(const LogHistogram& other);
  std::int64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  double stddev() const;
  double min() const { return count_ ? min_ : 0.0; }
  double max() const { return count_ ? max_ : 0.0; }
  // Nearest-rank quantile q in [0, 1]: the bucket holding the ceil(q*n)-th smallest value,
  // reported at its geometric centre and clamped to [min, max].
  double quantile(double q) const;

  // The bucket (0 .. num_buckets - 1 of the layout) a value is counted in: the definition,
  // floor((log(value) - log(min_value)) / log1p(relative_width)) clamped, with glibc's log().
  std::size_t bucket_of_by_log(double value) const;
  // The same bucket for every double, mostly without log() (log_histogram.cpp says why it is
  // exact); tests compare the two.
  std::size_t bucket_of(double value) const;

 private:
  double log_min_, inv_log_step_, log_step_;
  // locate's constants (log_histogram.cpp): the margin, in buckets, by which its position must
  // clear a bucket edge to be trusted, and 1 - margin; the positions below / from which it
  // clamps. set_inner's: the linear bounds of a bucket's edges around a value inside it.
  double margin_buckets_, trust_high_frac_, clamp_low_pos_, clamp_high_pos_;
  double shrink_per_bucket_, grow_per_bucket_, lo_base_, hi_base_;
  static constexpr std::size_t kUndecided = std::numeric_limits<std::size_t>::max();
  // bucket_of without log(): the bucket and how far into it the value lies, in buckets (frac
  // NaN for the clamped end buckets), or kUndecided where log() must decide: too close to an
  // edge, or not a positive normal double.
  std::size_t locate(double value, double& frac) const;
  // cached_slot_ and the inner interval for a value outside [inner_lo_, inner_hi_).
  void rebucket(double value);
  // rebucket's rare cases: log() decides, or the stored span must grow.
  [[gnu::noinline]] void place(double value);
  void set_inner(double value, double frac);
  // Widens the stored span to hold buckets lo..hi.
  void cover(std::size_t lo, std::size_t hi);
  std::size_t num_buckets_;  // of the layout: bucket_of returns 0 .. num_buckets_ - 1
  // Counts of buckets first_bucket_ .. first_bucket_ + buckets_.size() - 1, the span the values
  // have reached so far (empty before the first): the layout has ~15,000 buckets (120 KB), and
  // zeroing them all in each of a run's ~20 histograms, then copying them, was ~600 of the
  // ~2,450 page faults of a 1-request run (a fault costs ~7 us on the benchmark host). Buckets
  // outside the span are zero, so quantiles are the same.
  std::size_t first_bucket_ = 0;
  std::vector<std::int64_t> buckets_;
  // The last value's bucket (index into buckets_): a decode batch adds the same inter-token gap
  // for most of its sequences, so this saves a log() per token without changing any result.
  // NaN at first: the first value always goes through rebucket, which makes its bucket's slot.
  double cached_value_ = std::numeric_limits<double>::quiet_NaN();
  std::size_t cached_slot_ = 0;
  // Values that bucket_of provably puts in the cached slot's bucket: its edges pulled in by half
  // locate's margin (rebucket). A quiet decode run's gaps creep up by a few parts in 10^4 a
  // step, so most steps stay in the bucket and skip the lookup. Empty (lo > hi, or NaN) where
  // the last lookup fell back to log() or the bucket is a clamped end one.
  double inner_lo_ = 1.0, inner_hi_ = 0.0;
  std::int64_t count_ = 0;
  double sum_ = 0.0, sum_sq_ = 0.0, min_ = 0.0, max_ = 0.0;
};

}  // namespace servesim
