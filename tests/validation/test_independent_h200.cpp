// The independent H200 set (calibrate/results/h200/independent/, measured with
// calibrate/independent/measure.py): what users run, predicted on rows the fits did not see
// (every fitted table or parameter is refitted without the predicted head layout, GEMM shapes
// or model). The same tables as `servesim validate`; each (group, engine, phase) must stay
// inside the bound servesim states for it (sim/validate/independent_set.cpp).
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/validate/independent_set.hpp"
#include "tests/validation/band_check.hpp"

using namespace servesim;

namespace {

void check_suite(const ValidationResult& res, const char* title) {
  const auto bounds = validation_bounds();
  std::printf("\n%s (leave-one-out): %zu rows\n", title, res.rows.size());
  std::printf("  %-7s %-17s %-15s %5s %8s %8s %8s %8s\n", "group", "engine", "phase", "n", "median", "worst", "bound", "worst");
  for (const auto& s : summarize(res.rows, bounds)) {
    std::printf("  %-7s %-17s %-15s %5zu %7.1f%% %7.1f%% %7.0f%% %7.0f%%\n", s.group.c_str(), s.engine.c_str(), s.phase.c_str(), s.n,
                100 * s.median_abs, 100 * s.worst_abs, s.bound ? 100 * s.bound->median : 0.0, s.bound ? 100 * s.bound->worst : 0.0);
    CAPTURE(s.group);
    CAPTURE(s.engine);
    CAPTURE(s.phase);
    REQUIRE(s.bound.has_value());  // every reported group has a stated bound
    CHECK(s.n > 0);
    CHECK(s.median_abs <= s.bound->median);
    CHECK(s.worst_abs <= s.bound->worst);
  }
  for (const auto& f : res.folds) std::printf("  fit without %s: %s\n", f.held_out.c_str(), f.text.c_str());
}

}  // namespace

TEST_CASE("independent H200 set: kernels (torch GEMMs, SDPA) against tables fitted without them") {
  const IndependentSet set = load_independent_set(default_independent_files());
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h200-sxm", "test", "hw"));
  const ValidationResult res = validate_kernels(set, hw);
  CHECK(res.rows.size() > 900);
  check_suite(res, "kernels");
}

TEST_CASE("independent H200 set: whole steps of five models, each fitted without itself") {
  const IndependentSet set = load_independent_set(default_independent_files());
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h200-sxm", "test", "hw"));
  const ValidationResult res = validate_steps(set, hw);
  CHECK(res.rows.size() > 250);
  CHECK(res.folds.size() == independent_dense_models().size());
  check_suite(res, "steps");
}

TEST_CASE("independent H200 set: transformers generate() and generate_batch() end to end, each fitted without its model") {
  const IndependentSet set = load_independent_set(default_independent_files());
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h200-sxm", "test", "hw"));
  const ValidationResult res = validate_engines(set, hw);
  CHECK(res.rows.size() >= 80);  // 9 generate() runs x 2 + 56 generate_batch() runs x 4 + per-count medians
  // One fold per model: llama-3-8b, qwen2-7b, phi-3-mini (both engines), mistral-7b (generate_batch, run h).
  CHECK(res.folds.size() == 4);
  check_suite(res, "engines");
}

TEST_CASE("the committed error bands (data/validation/error_bands.json) are what the suites give now") {
  // plan shows these bands; regenerate with `servesim validate --bands data/validation/error_bands.json`.
  const IndependentSet set = load_independent_set(default_independent_files());
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h200-sxm", "test", "hw"));
  ValidationResult res = validate_steps(set, hw);
  const ValidationResult engines = validate_engines(set, hw);
  res.rows.insert(res.rows.end(), engines.rows.begin(), engines.rows.end());
  const std::vector<ErrorBand> now = error_bands(res, hw.name);
  const std::vector<ErrorBand> committed = test::committed_bands_except({test::kPublishedBandSource, test::kVllmRunsBandSource});
  test::check_bands_equal(now, committed);
  const auto band = serving_band(committed, "h200-sxm", "hf-transformers-cb");
  REQUIRE(band.has_value());
  CHECK(band->phase == "e2e-p50");  // the whole-request phase speaks for a serving answer
  CHECK_FALSE(serving_band(committed, "a100-80gb-sxm", "hf-transformers-cb").has_value());
}

TEST_CASE("independent set: malformed input names the file and key") {
  CHECK_THROWS_WITH_AS(load_independent_set({"/nonexistent/run.json"}), doctest::Contains("run.json"), InputError);
  IndependentSet empty;
  CHECK_THROWS_WITH_AS(empty.section("attention"), doctest::Contains("sections.attention"), InputError);
  nlohmann::json attention = {{"decode", nlohmann::json::array({{{"hq", 32}, {"hkv", 8}, {"batch", 1}}})},
                              {"prefill", nlohmann::json::array()}};
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h200-sxm", "test", "hw"));
  CHECK_THROWS_WITH_AS(fit_sdpa_attention({{"attention", &attention, "bad.json"}}, hw), doctest::Contains("attention.decode[0].head_dim"),
                       InputError);
}
