// Published grouped (MoE) GEMM kernel benchmarks against servesim's grouped-GEMM model
// (data/validation/grouped_gemm_published.json, sources cited there; docs/validation.md section 6).
// Every row is held out: no servesim number was fitted to them. Each row is one launch of `groups`
// experts, every one with `tokens_per_group` rows, priced as the profile's grouped GEMM in the
// row's format (grouped_gemm_model_s, the path test_moe_measured.cpp times our own kernels with).
// Rows marked "scored": false (their source says why) are printed, not bounded. Bounds
// grouped-published/* in data/validation/bounds.json, set before the first run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/calib/grouped_gemm_fit.hpp"
#include "sim/core/median.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/validate/bounds.hpp"
#include "../paths.hpp"

using namespace servesim;

TEST_CASE("published grouped GEMMs: DeepGEMM's FP8 block-scaled kernels (H800) against the model on h100-sxm") {
  const std::string file = std::string(servesim::test::reference_dir()) + "/validation/grouped_gemm_published.json";
  const nlohmann::json doc = load_json_file(file);
  std::printf("\nPublished grouped GEMMs, held out (data/validation/grouped_gemm_published.json)\n");
  std::printf("  %-38s %-10s %6s %5s %5s %9s %9s %8s\n", "row", "profile", "groups", "n", "k", "pub us", "sim us", "error");
  std::vector<double> errors;
  for (const auto& row : doc.at("rows")) {
    const std::string profile = row.at("profile").get<std::string>();
    const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", profile, "test", "profile"));
    const auto quant = parse_quant(row.at("quant").get<std::string>());
    REQUIRE(quant.has_value());
    GroupedGemmPoint p;
    p.model = row.at("id").get<std::string>();
    p.experts = row.at("groups").get<std::int64_t>();
    p.tokens_per_expert = row.at("tokens_per_group").get<std::int64_t>();
    p.n = row.at("n").get<std::int64_t>();
    p.k = row.at("k").get<std::int64_t>();
    p.quant = *quant;
    if (row.contains("time_us")) {
      p.measured_s = row.at("time_us").get<double>() * 1e-6;
    } else {  // the source prints 2 * groups * m * n * k / time
      const double flops = 2.0 * static_cast<double>(p.experts * p.tokens_per_expert) * static_cast<double>(p.n) * static_cast<double>(p.k);
      p.measured_s = flops / (row.at("tflops").get<double>() * 1e12);
    }
    const double model_s = grouped_gemm_model_s(p, hw);
    const double err = model_s / p.measured_s - 1.0;
    const bool scored = row.value("scored", true);
    if (scored) errors.push_back(std::fabs(err));
    std::printf("  %-38s %-10s %6lld %5lld %5lld %9.1f %9.1f %+7.1f%%  (%lld rows each%s)\n", p.model.c_str(), profile.c_str(),
                static_cast<long long>(p.experts), static_cast<long long>(p.n), static_cast<long long>(p.k), p.measured_s * 1e6,
                model_s * 1e6, 100 * err, static_cast<long long>(p.tokens_per_expert), scored ? "" : "; not scored");
  }
  REQUIRE(!errors.empty());
  const double med = median(errors);
  const double worst = *std::max_element(errors.begin(), errors.end());
  const double median_bound = validation_bound("grouped-published/deepgemm-h800-median");
  const double worst_bound = validation_bound("grouped-published/deepgemm-h800-worst");
  std::printf("  scored rows |error|: n %zu, median %.1f%% (bound %.0f%%), worst %.1f%% (bound %.0f%%)\n", errors.size(), 100 * med,
              100 * median_bound, 100 * worst, 100 * worst_bound);
  CHECK(med <= median_bound);
  CHECK(worst <= worst_bound);
}
