// Streaming quantiles stay within their documented 0.1% relative error of exact nearest-rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/core/rng.hpp"
#include "sim/metrics/log_histogram.hpp"

using namespace servesim;

TEST_CASE("quantiles within 0.1% of exact nearest-rank; mean and extremes exact") {
  LogHistogram h;
  RngStream rng(3, "hist");
  std::vector<double> values;
  for (int i = 0; i < 100000; ++i) {
    const double v = std::exp(rng.normal(-3.0, 1.5));
    values.push_back(v);
    h.add(v);
  }
  std::sort(values.begin(), values.end());
  double sum = 0.0;
  for (double v : values) sum += v;
  CHECK(h.mean() == doctest::Approx(sum / values.size()).epsilon(1e-12));
  CHECK(h.min() == values.front());
  CHECK(h.max() == values.back());
  for (double q : {0.01, 0.5, 0.9, 0.95, 0.99, 0.999}) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * values.size()));
    const double exact = values[rank - 1];
    const double rel = std::fabs(h.quantile(q) - exact) / exact;
    INFO("q=" << q << " exact=" << exact << " got=" << h.quantile(q));
    CHECK(rel <= 1.001e-3);
  }
}

TEST_CASE("constant samples give the exact value") {
  LogHistogram h;
  for (int i = 0; i < 10; ++i) h.add(0.0123);
  CHECK(h.quantile(0.5) == 0.0123);
  CHECK(h.stddev() == 0.0);
}

TEST_CASE("add_repeated(v, n) matches n adds: counts and quantiles exactly, sums to rounding") {
  LogHistogram one_by_one, repeated;
  RngStream rng(5, "runs");
  for (int run = 0; run < 2000; ++run) {
    const double v = std::exp(rng.normal(-4.0, 0.5));
    const auto n = static_cast<std::int64_t>(1 + rng.uniform() * 300);
    for (std::int64_t i = 0; i < n; ++i) one_by_one.add(v);
    repeated.add_repeated(v, n);
  }
  repeated.add_repeated(1.0, 0);  // nothing
  CHECK(repeated.count() == one_by_one.count());
  CHECK(repeated.min() == one_by_one.min());
  CHECK(repeated.max() == one_by_one.max());
  for (double q : {0.01, 0.5, 0.99, 0.999}) CHECK(repeated.quantile(q) == one_by_one.quantile(q));
  CHECK(repeated.mean() == doctest::Approx(one_by_one.mean()).epsilon(1e-12));
  CHECK(repeated.stddev() == doctest::Approx(one_by_one.stddev()).epsilon(1e-9));
}

TEST_CASE("values creeping across bucket edges land where a fresh histogram puts them") {
  // The bucket cache (rebucket's inner interval) must never change a bucket: values at and
  // within a few ulp-scaled margins of many edges, ascending as a quiet decode run's gaps do,
  // against each value added to its own fresh histogram (no cache) and merged.
  LogHistogram creeping, reference;
  const double log_min = std::log(1e-7), step = std::log1p(0.002);
  int n = 0;
  for (int k = 7000; k < 7400; ++k) {  // edges near 1.2e-4 .. 2.6e-4 s
    const double edge = std::exp(log_min + k * step);
    for (double rel : {-3e-9, -1e-9, -1e-12, 0.0, 1e-12, 1e-9, 3e-9, 4e-4, 8e-4, 1.2e-3}) {
      const double v = edge * (1.0 + rel);
      creeping.add(v);
      creeping.add(v);  // a repeat: the equal-value path
      LogHistogram one;
      one.add_repeated(v, 2);
      reference.merge(one);
      n += 2;
    }
  }
  REQUIRE(creeping.count() == reference.count());
  for (int r = 1; r <= n; ++r) {
    const double q = (r - 0.5) / n;
    INFO("rank " << r);
    REQUIRE(creeping.quantile(q) == reference.quantile(q));
  }
}

TEST_CASE("the stored span grows both ways: any order of adds and merges gives one histogram's quantiles") {
  // Only the buckets the values reach are stored: descending values grow the span at its front,
  // clamped values (<= min_value, >= max_value) reach both ends of the layout, and merges join
  // spans that do not overlap.
  std::vector<double> values;
  for (int i = 0; i < 300; ++i) values.push_back(10.0 * std::pow(0.97, i));
  for (double v : {0.0, -1.0, 1e-9, 5e6, 1e6, 3.0, 1e-7, 2e-3}) values.push_back(v);
  LogHistogram all, parts[3];
  for (std::size_t i = 0; i < values.size(); ++i) {
    all.add(values[i]);
    parts[i % 3].add(values[i]);
  }
  LogHistogram merged;
  merged.merge(parts[2]);
  merged.merge(parts[0]);
  LogHistogram copy = merged;  // a copy keeps its span and its cached slot
  copy.merge(parts[1]);
  REQUIRE(copy.count() == all.count());
  CHECK(copy.min() == all.min());
  CHECK(copy.max() == all.max());
  const auto n = static_cast<double>(all.count());
  for (int r = 1; r <= all.count(); ++r) {
    INFO("rank " << r);
    REQUIRE(copy.quantile((r - 0.5) / n) == all.quantile((r - 0.5) / n));
  }
  copy.add(10.0);
  all.add(10.0);
  CHECK(copy.quantile(1.0) == all.quantile(1.0));
}

namespace {

// bucket_of (exponent bits, a table and a cubic; log() only near an edge) against its definition
// through log() for one layout: values at and up to 48 ulps around every bucket edge (the edge
// as exp() gives it is within a few ulps of where the definition's floor flips), just inside
// and outside locate's trust margin, random doubles of every kind, and the special ones.
void check_bucket_of_matches_log(double min_value, double max_value, double relative_width) {
  const LogHistogram h(min_value, max_value, relative_width);
  const double log_min = std::log(min_value), step = std::log1p(relative_width);
  std::int64_t checked = 0;
  const auto check = [&](double v) {
    ++checked;
    if (h.bucket_of(v) != h.bucket_of_by_log(v)) {
      INFO("value " << v << " (bits " << std::bit_cast<std::uint64_t>(v) << ")");
      REQUIRE(h.bucket_of(v) == h.bucket_of_by_log(v));
    }
  };
  const auto num_edges = static_cast<int>(std::ceil((std::log(max_value) - log_min) / step)) + 2;
  for (int k = 0; k <= num_edges; ++k) {
    const double edge = std::exp(log_min + k * step);
    double up = edge, down = edge;
    check(edge);
    for (int ulps = 0; ulps < 48; ++ulps) {
      up = std::nextafter(up, HUGE_VAL);
      down = std::nextafter(down, 0.0);
      check(up);
      check(down);
    }
    for (double rel : {1e-13, 1e-11, 1e-10, 3e-10, 5e-10, 1e-9, 2e-9, 1e-6, 0.25 * relative_width}) {
      check(edge * (1.0 + rel));
      check(edge * (1.0 - rel));
    }
  }
  RngStream rng(11, "bucket_of");
  for (int i = 0; i < 300000; ++i) {
    const auto bits = (static_cast<std::uint64_t>(rng.uniform() * 4294967296.0) << 32) |
                      static_cast<std::uint64_t>(rng.uniform() * 4294967296.0);
    check(std::bit_cast<double>(bits));                                                  // any double
    check(std::exp(std::log(min_value) - 5.0 + rng.uniform() * (std::log(max_value / min_value) + 10.0)));  // in range
  }
  const double specials[] = {0.0,
                             -0.0,
                             -1.0,
                             std::numeric_limits<double>::denorm_min(),
                             std::nextafter(std::numeric_limits<double>::min(), 0.0),  // largest subnormal
                             std::numeric_limits<double>::min(),
                             std::numeric_limits<double>::max(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             min_value,
                             max_value,
                             1.0,
                             2.0,
                             0.5};
  for (const double v : specials) {
    check(v);
    check(std::nextafter(v, HUGE_VAL));
    check(std::nextafter(v, -HUGE_VAL));
  }
  CHECK(checked > 600000);
}

// The quantiles a histogram must report for `values` when every value is put in
// bucket_of_by_log's bucket, against the histogram's own after add()ing them in order (the cached
// bucket and its inner interval, then bucket_of): all ranks.
void check_adds_match_log(const std::vector<double>& values) {
  LogHistogram h;
  for (const double v : values) h.add(v);
  const double log_min = std::log(1e-7), step = std::log1p(0.002);
  std::vector<std::size_t> buckets;
  for (const double v : values) buckets.push_back(h.bucket_of_by_log(v));
  std::sort(buckets.begin(), buckets.end());
  const double lo = *std::min_element(values.begin(), values.end());
  const double hi = *std::max_element(values.begin(), values.end());
  const auto n = static_cast<double>(values.size());
  for (std::size_t r = 1; r <= values.size(); ++r) {
    const double expected = std::clamp(std::exp(log_min + (static_cast<double>(buckets[r - 1]) + 0.5) * step), lo, hi);
    const double got = h.quantile((static_cast<double>(r) - 0.5) / n);
    if (got != expected) {
      INFO("rank " << r << " of " << values.size());
      REQUIRE(got == expected);
    }
  }
}

}  // namespace

TEST_CASE("bucket_of puts every double in the bucket of its log() definition") {
  check_bucket_of_matches_log(1e-7, 1e6, 0.002);  // the layout every histogram of a run has
  check_bucket_of_matches_log(1e-3, 1e3, 0.01);
  check_bucket_of_matches_log(1e-300, 1e300, 0.05);  // edges down among the smallest normals
  check_bucket_of_matches_log(0.5, 0.6, 1e-5);        // narrow buckets: margin 1e-4 of one
}

TEST_CASE("values added one by one land in their log() buckets through the cache and its interval") {
  // Creeping values (a quiet decode run's gaps) stay in the cached bucket's inner interval until
  // they leave it; these creep across many edges in steps from parts in 10^4 down to single ulps,
  // both ways, and jump between creeps.
  std::vector<double> up, down, ulp_steps, tiny_steps;
  for (double v = 1.0e-4; v < 1.0e-3; v *= 1.0003) up.push_back(v);
  for (double v = 2.0e-2; v > 2.0e-3; v /= 1.00017) down.push_back(v);
  const double log_min = std::log(1e-7), step = std::log1p(0.002);
  for (int k = 9000; k < 9300; k += 3) {
    const double edge = std::exp(log_min + k * step);
    double v = edge;
    for (int i = 0; i < 64; ++i) v = std::nextafter(v, 0.0);
    for (int i = 0; i < 129; ++i, v = std::nextafter(v, HUGE_VAL)) ulp_steps.push_back(v);
    for (double w = edge * (1.0 - 2e-9); w < edge * (1.0 + 2e-9); w *= 1.0 + 5e-11) tiny_steps.push_back(w);
    for (double w = edge * (1.0 + 2e-9); w > edge * (1.0 - 2e-9); w *= 1.0 - 5e-11) tiny_steps.push_back(w);
  }
  check_adds_match_log(up);
  check_adds_match_log(down);
  check_adds_match_log(ulp_steps);
  check_adds_match_log(tiny_steps);
  std::vector<double> all;
  for (const auto* part : {&up, &ulp_steps, &down, &tiny_steps}) all.insert(all.end(), part->begin(), part->end());
  check_adds_match_log(all);
}

TEST_CASE("add_as_in takes a twin's bucket for the value it was just given, and equals add()") {
  // Per-class histograms repeat the overall ones' values: add_as_in reuses the twin's lookup when
  // the twin's last value is this one (and its bucket is in the stored span), else it is add().
  LogHistogram twin, reused, plain;
  RngStream rng(13, "twin");
  for (int i = 0; i < 20000; ++i) {
    const double v = std::exp(rng.normal(-2.0, 2.0));
    if (i % 7 != 0) twin.add(v);  // mostly the twin has it; sometimes an older value
    reused.add_as_in(v, twin);
    plain.add(v);
    if (i % 5 == 0) {  // a repeat and a creep: the cached value and its interval carry over
      twin.add(v * 1.0001);
      reused.add_as_in(v * 1.0001, twin);
      plain.add(v * 1.0001);
    }
  }
  LogHistogram other_layout(1e-3, 1e3, 0.01);
  other_layout.add(0.5);
  reused.add_as_in(0.5, other_layout);  // another layout: a lookup of its own
  plain.add(0.5);
  REQUIRE(reused.count() == plain.count());
  const auto n = static_cast<double>(plain.count());
  for (int r = 1; r <= plain.count(); r += 7) {
    INFO("rank " << r);
    REQUIRE(reused.quantile((r - 0.5) / n) == plain.quantile((r - 0.5) / n));
  }
}
