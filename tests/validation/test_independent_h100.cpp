// The independent H100 set (calibrate/results/h100/independent/, measured with
// calibrate/independent/measure.py on a lent H100 SXM on 2026-12-06): torch GEMMs and SDPA kernels,
// CUDA-graph decode steps and prefill GPU time of six dense models, predicted by the h100-sxm
// profile (fitted from our calibrators' H100 run, calibrate/results/h100/raw.json) with every
// fitted quantity refitted without the predicted rows (leave-one-model-out for steps). Bounds:
// data/validation/bounds.json (table independent/h100-sxm), set before the set's first run.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "sim/calib/independent.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/validate/independent_set.hpp"

using namespace servesim;

namespace {

void check_h100_suite(const ValidationResult& res, const char* title) {
  const auto bounds = validation_bounds("h100-sxm");
  std::printf("\nH100 %s (leave-one-out): %zu rows\n", title, res.rows.size());
  for (const auto& s : summarize(res.rows, bounds)) {
    std::printf("  %-7s %-17s %-15s %5zu %7.1f%% %7.1f%% (bound %.0f%% / %.0f%%)\n", s.group.c_str(), s.engine.c_str(), s.phase.c_str(),
                s.n, 100 * s.median_abs, 100 * s.worst_abs, s.bound ? 100 * s.bound->median : 0.0, s.bound ? 100 * s.bound->worst : 0.0);
    CAPTURE(s.group);
    CAPTURE(s.engine);
    CAPTURE(s.phase);
    REQUIRE(s.bound.has_value());
    CHECK(s.median_abs <= s.bound->median);
    CHECK(s.worst_abs <= s.bound->worst);
  }
  for (const auto& f : res.folds) std::printf("  fit without %s: %s\n", f.held_out.c_str(), f.text.c_str());
}

}  // namespace

TEST_CASE("independent H100 set: kernels and whole steps against tables fitted without them") {
  const IndependentSet set = load_independent_set(independent_files_for("h100-sxm"));
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "test", "hw"));
  const ValidationResult kernels = validate_kernels(set, hw);
  CHECK(kernels.rows.size() > 500);
  check_h100_suite(kernels, "kernels");
  const ValidationResult steps = validate_steps(set, hw);
  CHECK(steps.rows.size() > 200);  // 157 decode + 65 prefill rows of five models
  check_h100_suite(steps, "steps");
}
