// The median of a sample, defined once for every fit, validation suite and test: the mean of the
// two middle values for an even count, 0 for an empty sample.
#pragma once
#include <algorithm>
#include <vector>

namespace servesim {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace servesim
