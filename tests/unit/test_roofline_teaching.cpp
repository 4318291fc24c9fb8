// roofline's teaching figures: MFU and achieved bandwidth per op and per step are the op's and
// the step's FLOPs and bytes over their time against the datasheet peaks, and the why lines
// appear for the two results issue 35 names (eager no slower than CUDA graphs at batch 1; int8
// W8A8 barely faster than bf16 at batch 1 on A100), and not for a step they do not describe.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "sim/io/json_reader.hpp"
#include "../support.hpp"

namespace {
const std::string kStep = "roofline --model llama-2-7b --hw a100-80gb-sxm --batch 1 --context 2048 --json";

nlohmann::json roofline(const std::string& extra) {
  const auto r = servesim::test::run_cli(kStep + " " + extra + " 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}
bool has_why(const nlohmann::json& j, const std::string& words) {
  for (const auto& w : j["why"]) {
    if (w.get<std::string>().find(words) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("roofline: MFU and TB/s per op and per step, from FLOPs, bytes and time") {
  const auto j = roofline("");
  const double peak = j["peak_flops_per_s"], hbm = j["hbm_bandwidth_bytes_per_s"];
  CHECK(peak == doctest::Approx(312e12));  // A100 SXM dense bf16
  double flops = 0.0, bytes = 0.0;
  for (const auto& op : j["ops"]) {
    const double t = op["predicted_time_s"];
    INFO(op["name"].get<std::string>());
    CHECK(op["mfu_frac"].get<double>() == doctest::Approx(op["flops"].get<double>() / t / peak));
    CHECK(op["hbm_bandwidth_frac"].get<double>() == doctest::Approx(op["bytes"].get<double>() / t / hbm));
    CHECK(op["achieved_bandwidth_bytes_per_s"].get<double>() == doctest::Approx(op["bytes"].get<double>() / t));
    flops += op["flops"].get<double>();
    bytes += op["bytes"].get<double>();
  }
  const double step = j["step_time_s"];
  CHECK(j["mfu_frac"].get<double>() == doctest::Approx(flops / step / peak));
  CHECK(j["achieved_bandwidth_bytes_per_s"].get<double>() == doctest::Approx(bytes / step));
  std::printf("llama-2-7b a100 batch 1: MFU %.2f%%, %.2f TB/s (%.0f%% of HBM)\n", 100.0 * j["mfu_frac"].get<double>(),
              j["achieved_bandwidth_bytes_per_s"].get<double>() / 1e12, 100.0 * j["hbm_bandwidth_frac"].get<double>());
  // What users computed by hand from --json (issue 35): 0.43% and 1.31-1.33 TB/s.
  CHECK(j["mfu_frac"].get<double>() < 0.01);
  CHECK(j["hbm_bandwidth_frac"].get<double>() > 0.5);
  CHECK(j["hbm_bandwidth_frac"].get<double>() < 1.0);
  CHECK(j["why"].empty());  // graphs on, bf16: nothing to explain
}

TEST_CASE("roofline why: eager is not slower than CUDA graphs at batch 1 because the GPU does not wait on launches") {
  const auto eager = roofline("--engine torch-eager"), graphs = roofline("--engine torch-cudagraph");
  std::printf("batch 1: torch-eager %.3f ms, torch-cudagraph %.3f ms\n", 1e3 * eager["step_time_s"].get<double>(),
              1e3 * graphs["step_time_s"].get<double>());
  CHECK(eager["step_time_s"].get<double>() < 1.05 * graphs["step_time_s"].get<double>());
  CHECK(has_why(eager, "CUDA graphs (which remove launches) could save at most"));
  CHECK_FALSE(has_why(graphs, "CUDA graphs"));
}

TEST_CASE("roofline why: int8 W8A8 GEMMs at batch 1 on A100 are bound by the kernel, not their bytes") {
  const auto bf16 = roofline(""), int8 = roofline("--quant int8");
  const double speedup = bf16["step_time_s"].get<double>() / int8["step_time_s"].get<double>();
  std::printf("batch 1 A100: int8 %.3fx bf16\n", speedup);
  CHECK(speedup < 1.3);  // the bytes of the weights halve; the step does not
  CHECK(has_why(int8, "int8 GEMMs move fewer bytes but stream them at only"));
  CHECK_FALSE(has_why(bf16, "GEMMs"));
}
