// Streaming quantiles stay within their documented 0.1% relative error of exact nearest-rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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
