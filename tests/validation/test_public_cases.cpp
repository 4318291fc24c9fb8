// Published measurements (data/validation/public_cases.json): the same mapping as
// `servesim validate`, with the error of each case printed and bounded.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/analysis/public_cases.hpp"
#include "sim/core/median.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/validate/bounds.hpp"
#include "../paths.hpp"

using namespace servesim;

TEST_CASE("public cases: predicted vs published") {
  const std::string file = std::string(servesim::test::reference_dir()) + "/validation/public_cases.json";
  const auto results = run_public_cases(load_json_file(file), file);
  std::vector<double> errors;
  for (const auto& r : results) {
    if (r.skipped) {
      std::printf("%-7s skipped: %s\n", r.id.c_str(), r.note.c_str());
      continue;
    }
    std::printf("%-7s %-12s %-15s %-20s published %10.4g predicted %10.4g error %+6.1f%%\n", r.id.c_str(), r.model.c_str(),
                r.hw.c_str(), r.metric.c_str(), r.published, r.predicted, 100 * r.error());
    errors.push_back(std::fabs(r.error()));
    INFO(r.id);
    // Every mapped case within its bound, 30% unless the mapping states another (quantized cases:
    // sim/analysis/public_cases.cpp). When written the worst 30% case was V4a at -28%
    // (TensorRT-LLM's decode attention at batch 384 runs beyond the measured attention grid, see
    // docs/validation.md).
    CHECK(std::fabs(r.error()) <= r.bound);
  }
  std::sort(errors.begin(), errors.end());
  REQUIRE(errors.size() >= 8);
  const double median_error = median(errors);
  std::printf("public cases: %zu mapped, median |error| %.1f%%, worst %.1f%%\n", errors.size(), 100 * median_error, 100 * errors.back());
  CHECK(median_error <= validation_bound("public-cases/median"));
}
