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
