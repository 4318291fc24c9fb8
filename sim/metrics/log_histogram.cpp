// Log-bucketed histogram; see log_histogram.hpp for the error bound.
#include "sim/metrics/log_histogram.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace servesim {

namespace {

// bucket_of's table: ln of the centre of each of 128 equal cells of the mantissa range [1, 2),
// so ln(mantissa) = ln(centre) + ln(1 + r) with |r| <= 2^-8.
constexpr int kCellBits = 7;
constexpr int kNumCells = 1 << kCellBits;
struct MantissaCell {
  double inv_centre, ln_centre;
};
// ln(c) for c in [1, 2] at compile time (std::log is not constexpr): 2 atanh(z), z = (c-1)/(c+1)
// <= 1/3, whose series terms fall at least 9x each; 40 terms are far past double precision.
constexpr double ln_by_series(double c) {
  const double z = (c - 1.0) / (c + 1.0), z2 = z * z;
  double term = z, sum = 0.0;
  for (int k = 0; k < 40; ++k, term *= z2) sum += term / (2 * k + 1);
  return 2.0 * sum;
}
constexpr std::array<MantissaCell, kNumCells> make_cells() {
  std::array<MantissaCell, kNumCells> cells{};
  for (int i = 0; i < kNumCells; ++i) {
    const double centre = 1.0 + (i + 0.5) / kNumCells;
    cells[i] = {1.0 / centre, ln_by_series(centre)};
  }
  return cells;
}
constexpr std::array<MantissaCell, kNumCells> kCells = make_cells();

// How far (natural-log units) the fast log may be from glibc's before its bucket is not trusted.
// Both are far closer to ln(value) than this (see locate): the margin is 16x their summed error.
constexpr double kLnMargin = 1e-9;

}  // namespace

LogHistogram::LogHistogram(double min_value, double max_value, double relative_width)
    : log_min_(std::log(min_value)),
      inv_log_step_(1.0 / std::log1p(relative_width)),
      log_step_(std::log1p(relative_width)),
      margin_buckets_(kLnMargin * inv_log_step_) {
  num_buckets_ = static_cast<std::size_t>(std::ceil((std::log(max_value) - log_min_) * inv_log_step_)) + 1;
  trust_high_frac_ = 1.0 - margin_buckets_;
  clamp_low_pos_ = 1.0 - margin_buckets_;
  clamp_high_pos_ = static_cast<double>(num_buckets_ - 1) + margin_buckets_;
  shrink_per_bucket_ = -std::expm1(-log_step_);
  grow_per_bucket_ = log_step_;
  lo_base_ = 1.0 + 0.5 * margin_buckets_ * shrink_per_bucket_;
  hi_base_ = 1.0 + (1.0 - 0.5 * margin_buckets_) * grow_per_bucket_;
}

// Cold: only where locate is undecided (~1 value in 10^6, and values that are not positive
// normal doubles); rebucket's hot path then needs no call frame.
[[gnu::cold, gnu::noinline]] std::size_t LogHistogram::bucket_of_by_log(double value) const {
  std::size_t idx = 0;
  if (value > 0.0) {
    const double pos = (std::log(value) - log_min_) * inv_log_step_;
    // Clamped before the conversion: +inf (and any pos past the last bucket) would not fit it.
    const auto last = static_cast<double>(num_buckets_ - 1);
    if (pos > 0.0) idx = pos >= last ? num_buckets_ - 1 : static_cast<std::size_t>(pos);
  }
  return idx;
}

std::size_t LogHistogram::bucket_of(double value) const {
  double frac;
  const std::size_t b = locate(value, frac);
  return b != kUndecided ? b : bucket_of_by_log(value);
}

// glibc's log() was ~51 instructions a call and histograms ~12 calls a request. Here ln(value)
// comes from the exponent bits, a table cell on the top 7 mantissa bits and a cubic:
//   ln(value) = e ln2 + ln(centre) + ln(1 + r),  r = (mantissa - centre) / centre,  |r| <= 2^-8.
// Its error: the cubic's truncation, |r|^4 / 4 / (1 - |r|) <= 5.9e-11; rounding of at most five
// terms below 2048 in magnitude (|e ln2| <= 709, |ln min_value| for any sane layout), ~5e-13;
// ln2's rounding times |e| <= 1022, 6e-14; the table, a few 1e-16. glibc's log() is within 1 ulp
// (<= 1.2e-13 below 1024) and bucket_of_by_log's subtraction adds half an ulp. Both positions
// are then scaled by the same 1 / step and rounded (relative 1.1e-16: below 3e-13 in log units).
// So the two positions differ by less than 6.2e-11 log units, and where the fast one is more than
// kLnMargin = 1e-9 from every bucket edge (and from the clamps at 1 and num_buckets - 1), both
// floor to the same bucket. Otherwise (~1 value in 10^6) and for values that are not positive
// normal doubles (0, negatives, subnormals, inf, NaN), it returns kUndecided: log() decides.
// Measured gain (kept because it is above the 2% of a bench/million.sh run that a hand-made
// numeric must earn): bench/instructions.sh 100000 (bench/million.json with its outputs, callgrind)
// 1,643.6M instructions with glibc's log() for every value (locate always undecided, which also
// leaves the cached bucket's linear bounds unset) -> 1,535.7M
// (-6.6%), 2026-12-06; when introduced (2d006c3) scenarios/default.json 100k requests -8.0%.
std::size_t LogHistogram::locate(double value, double& frac) const {
  frac = std::numeric_limits<double>::quiet_NaN();
  const auto bits = std::bit_cast<std::uint64_t>(value);
  const auto biased_exponent = static_cast<std::uint32_t>(bits >> 52);  // the sign bit above it
  if (biased_exponent - 1u >= 2046u) return kUndecided;  // not a positive normal
  const MantissaCell& cell = kCells[(bits >> (52 - kCellBits)) & (kNumCells - 1)];
  const double mantissa = std::bit_cast<double>((bits & ((std::uint64_t{1} << 52) - 1)) | std::bit_cast<std::uint64_t>(1.0));
  const double r = mantissa * cell.inv_centre - 1.0;
  const double ln_value = static_cast<double>(static_cast<int>(biased_exponent) - 1023) * std::numbers::ln2 + cell.ln_centre +
                          r * (1.0 + r * (-0.5 + r * (1.0 / 3.0)));
  const double pos = (ln_value - log_min_) * inv_log_step_;
  if (pos < clamp_low_pos_) return 0;
  if (pos >= clamp_high_pos_) return num_buckets_ - 1;
  const auto b = static_cast<std::int64_t>(pos);  // pos > 0: truncation is floor
  const double f = pos - static_cast<double>(b);
  if (f < margin_buckets_ || f > trust_high_frac_) return kUndecided;
  frac = f;
  return static_cast<std::size_t>(b);
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
  double frac;
  const std::size_t b = locate(value, frac);
  const std::size_t slot = b - first_bucket_;  // wraps past size() where b < first_bucket_
  // Undecided, or outside the stored span: a tail call, so this path needs no stack frame.
  if (slot >= buckets_.size()) [[unlikely]] return place(value);
  cached_slot_ = slot;
  set_inner(value, frac);
}

void LogHistogram::place(double value) {
  double frac;
  std::size_t b = locate(value, frac);
  if (b == kUndecided) b = bucket_of_by_log(value);
  if (buckets_.empty() || b < first_bucket_ || b >= first_bucket_ + buckets_.size()) cover(b, b);
  cached_slot_ = b - first_bucket_;
  set_inner(value, frac);
}

void LogHistogram::set_inner(double value, double frac) {
  // `value` lies frac buckets above its bucket's lower edge, frac in [margin, 1 - margin], give
  // or take locate's error (below margin / 16). So values from t = frac - margin / 2 buckets below
  // it to u = 1 - margin / 2 - frac above (t, u in [0, 1]) are in the bucket with margin / 2 to
  // spare for both positions' errors. A bucket is a factor exp(step): those bounds are
  // value exp(-t step) and value exp(u step). The linear ones set here are inside them:
  // exp(-t step) <= 1 - t (1 - exp(-step)) (exp is convex, below its chord) and
  // exp(u step) >= 1 + u step; their few-ulp rounding is ~10^6 times smaller than the spare
  // margin (relative 5e-10). NaN frac (log() decided, or a clamped end bucket): NaN bounds, so
  // the interval is empty and every value comes back here.
  inner_lo_ = value * (lo_base_ - frac * shrink_per_bucket_);
  inner_hi_ = value * (hi_base_ - frac * grow_per_bucket_);
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
