// Blackwell/Grace profiles and FP4: weight bytes with block scales, the FP4 tensor-core rate on
// GPUs that have it, emulation (flagged) on those that do not, provenance on every bundled card
// and profile, and plan over the new GPUs, schemes and expert-parallel sizes.
#include <doctest/doctest.h>

#include <filesystem>

#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {
HwProfile gpu(const std::string& name) { return load_hw_profile(resolve_data_ref("hwprofiles", name, "", "")); }
}  // namespace

TEST_CASE("FP4 weights: 4 bits plus the block scales (NVFP4: FP8 per 16, MXFP4: E8M0 per 32)") {
  CHECK(quant_weight_bytes(QuantScheme::nvfp4, Dtype::bf16, 128) == 0.5625);
  CHECK(quant_weight_bytes(QuantScheme::mxfp4, Dtype::bf16, 128) == 0.53125);
  CHECK(parse_quant("fp4") == QuantScheme::nvfp4);
  CHECK(w8a8_dtype(QuantScheme::mxfp4) == Dtype::fp4);
  const ModelSpec m = load_model(resolve_data_ref("models", "llama-3.1-8b", "", ""));
  const double h = static_cast<double>(m.hidden_size);
  const double proj = m.num_layers * (m.layer_params() - 2.0 * h);
  CHECK(m.weight_bytes(Dtype::bf16, QuantScheme::nvfp4, 128) == doctest::Approx((m.total_params() - proj) * 2.0 + proj * 0.5625));
}

TEST_CASE("an FP4 GEMM runs at the FP4 tensor-core rate on Blackwell and is emulated on Hopper") {
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16, QuantScheme::nvfp4};
  const Op big = make_gemm_op("gemm", 1, 8192, 8192, 8192, p);
  const HwProfile b200 = gpu("b200"), h100 = gpu("h100-sxm");
  const KernelTime fp4 = estimate(big, b200, Dtype::bf16);
  CHECK(fp4.gemm == GemmKernel::w8a8);
  // FP4 GEMMs take the profile's FP4 curve (measured B200 kernels), 16-bit ones the generic curve.
  const double fp4_frac = b200.gemm_frac_curve(Dtype::fp4).at(8192.0), bf16_frac = b200.gemm_compute_frac_by_m.at(8192.0);
  CHECK(fp4_frac == doctest::Approx(b200.gemm_compute_frac_by_m_fp4.at(8192.0)));
  CHECK(fp4_frac < bf16_frac);
  CHECK(fp4.compute_s == doctest::Approx(big.flops / (9.0e15 * fp4_frac)));
  Precision bf{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  const KernelTime dense = estimate(make_gemm_op("gemm", 1, 8192, 8192, 8192, bf), b200, Dtype::bf16);
  // 9 vs 2.25 PFLOPS dense, at each dtype's fraction of its peak.
  CHECK(dense.time_s / fp4.time_s == doctest::Approx(4.0 * fp4_frac / bf16_frac).epsilon(0.05));
  CHECK(estimate(big, h100, Dtype::bf16).gemm == GemmKernel::w8a8_emulated);
  CHECK_FALSE(gpu("gh200").supports(Dtype::fp4));
  CHECK(gpu("rtx-pro-6000").supports(Dtype::fp4));

  auto s = test::base_scenario();
  s["model"] = "llama-3.1-8b";
  s["hardware"] = "h100-sxm";
  s["dtype"] = "bf16";
  s["quantization"] = {{"method", "nvfp4"}};
  CHECK(test::scenario_from(s).quant_emulated);
  s["hardware"] = "b200";
  CHECK_FALSE(test::scenario_from(s).quant_emulated);
  s["quantization"]["method"] = "fp5";
  CHECK(test::parse_error(s).find("quantization.method") != std::string::npos);
}

TEST_CASE("every bundled model card and hardware profile names its sources") {
  for (const std::string& name : bundled_names("models")) {
    const nlohmann::json j = load_json_file(resolve_data_ref("models", name, "", ""));
    INFO(name);
    CHECK((j.contains("source") || (j.contains("sources") && !j["sources"].empty())));
  }
  for (const std::string& name : bundled_names("hwprofiles")) {
    const HwProfile hw = gpu(name);
    INFO(name);
    CHECK(!hw.provenance.sources.empty());
    CHECK((hw.provenance.kind == "derived" || hw.provenance.kind == "measured"));
  }
  for (const char* name : {"b200", "gb200", "gh200", "rtx-pro-6000"}) CHECK(gpu(name).provenance.kind == "derived");
}

TEST_CASE("plan answers for an MoE model on H200 and B200 in FP8 and FP4, with expert parallelism") {
  const auto r = test::run_cli("plan --model qwen3-235b-a22b --hw h200-sxm,b200 --quant fp8,fp4 --tp 4 --ep 1,4 --rate 2 "
                               "--slo ttft=2s,tpot=100ms --replications 1 --json");
  REQUIRE(r.exit_code == 0);
  const auto rows = nlohmann::json::parse(r.output)["rows"];
  REQUIRE(rows.size() == 8);  // 2 GPUs x 2 schemes x 2 EP sizes
  for (const auto& row : rows) {
    INFO(row.dump());
    CHECK(row["fits"].get<bool>());
    CHECK(row["stable_qps_per_replica"].get<double>() > 0.0);
    // The H200 has no FP4 units: those rows run emulated and say so.
    CHECK(row["emulated"].get<bool>() == (row["hw"] == "h200-sxm" && row["quant"] == "fp4"));
  }
  const auto bad = test::run_cli("plan --model qwen3-235b-a22b --hw b200 --quant fp3 --rate 2 --slo ttft=2s");
  CHECK(bad.exit_code == 2);
}
