// Calibration: a fitted profile reproduces the measurements it was fitted to, and the fit is
// honest about points it did not see (its held-out error is what the README quotes).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/calib/fit.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "../paths.hpp"

using namespace servesim;

namespace {
const std::string kRaw = std::string(servesim::test::test_data_dir()) + "/../calibrate/results/h200/raw.json";
}

TEST_CASE("H200 fit: calibrated GEMM points are reproduced, held-out points are predicted") {
  const auto raw = load_json_file(kRaw);
  const std::string base_path = resolve_data_ref("hwprofiles", "h200-sxm", "", "");
  FitOptions opt;
  opt.name = "h200-test";
  opt.holdout_every = 3;
  const FitSummary s = fit_profile(raw, kRaw, load_json_file(base_path), base_path, opt);
  const HwProfile hw = parse_hw_profile(s.profile, "fitted");
  CHECK(hw.provenance.kind == "measured");
  CHECK(hw.provenance.gpu == "NVIDIA H200");
  // Provenance names its inputs relative to the repository, never by this machine's paths.
  CHECK(hw.provenance.sources == std::vector<std::string>{"calibrate/results/h200/raw.json", "hwprofiles/h200-sxm.json"});

  // Every shape's first M point is always in the fit: the cost model must give back its time.
  int checked = 0;
  for (const auto& g : raw["gemm"]) {
    if (g["m"] != 1 || g["dtype"] != "bf16") continue;
    const Op op = make_gemm_op("gemm", 1, 1, g["n"], g["k"], Precision{Dtype::bf16, Dtype::bf16, Dtype::bf16});
    const double t = g["time_s"];
    CHECK(estimate(op, hw, Dtype::bf16).time_s == doctest::Approx(t).epsilon(1e-9));
    ++checked;
  }
  CHECK(checked == 41);  // calibrate/src/bench_gemm.cu's shapes
  MESSAGE("held-out GEMM points " << s.gemm_holdout_points << ": median |error| " << 100 * s.gemm_holdout_median_abs_err
                                  << "%, worst " << 100 * s.gemm_holdout_worst_abs_err << "%");
  CHECK(s.gemm_holdout_points > 300);
  // Issue 3's target: GEMM median error at most 8% on points left out of the fit.
  CHECK(s.gemm_holdout_median_abs_err <= 0.08);
}

TEST_CASE("the fit rejects a file that is not calibrator output") {
  const std::string base_path = resolve_data_ref("hwprofiles", "h200-sxm", "", "");
  nlohmann::json raw = {{"schema", "something-else"}};
  FitOptions opt;
  opt.name = "x";
  CHECK_THROWS_WITH_AS(fit_profile(raw, "bad.json", load_json_file(base_path), base_path, opt),
                       doctest::Contains("bad.json: schema"), InputError);
}
