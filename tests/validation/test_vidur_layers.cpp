// Measured validation: one transformer layer's non-attention ops against the vidur operator
// profiles for Llama-2-7B (public_cases.json VL-a100 and VL-h100). Prints the table, bounds the error.
// The bundled A100/H100 profiles are fitted to vidur's timings of the OTHER models only
// (`servesim calibrate vidur ... --holdout-model Llama-2-7b-hf`), so this is out of sample.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/core/median.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/validate/bounds.hpp"
#include "../paths.hpp"

using namespace servesim;

namespace {

// Vidur's per-layer op set: emb, input_layernorm, attn_pre_proj, attn_rope, attn_post_proj,
// post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj, add (one add).
double layer_non_attention_s(const ModelSpec& m, const HwProfile& hw, std::int64_t tokens) {
  BatchShape b;
  b.add_prefill(tokens, 0, false);
  std::vector<Op> ops;
  build_iteration_ops(m, b, Precision{Dtype::fp16, Dtype::fp16, Dtype::fp16}, ops);
  double total = 0.0;
  for (const Op& op : ops) {
    const std::string name = op.name;
    double per_layer = 0.0;
    if (name == "embedding" || name == "qkv_proj" || name == "rope" || name == "o_proj" || name == "mlp_gate_up_proj" ||
        name == "mlp_act" || name == "mlp_down_proj" || name == "residual_add") {
      per_layer = 1.0;
    } else if (name == "rmsnorm") {
      per_layer = 2.0;
    }
    total += per_layer * estimate(op, hw, Dtype::fp16).time_s;
  }
  return total;
}

}  // namespace

TEST_CASE("vidur per-layer operator sums, Llama-2-7B, A100 and H100") {
  const auto cases = load_json_file(std::string(servesim::test::reference_dir()) + "/validation/public_cases.json");
  const ModelSpec model = load_model(resolve_data_ref("models", "llama-2-7b", "", ""));
  std::vector<double> errors;
  std::printf("%-8s %-15s %7s %12s %12s %8s\n", "case", "hw", "tokens", "published ms", "predicted ms", "error");
  for (const auto& c : cases["cases"]) {
    const std::string id = c["id"];
    if (id != "VL-a100" && id != "VL-h100") continue;
    // H100: the vidur fit this case checks, kept as data/validation/profiles/h100-sxm-vidur.json
    // since h100-sxm is fitted from our own calibrators (2026-12-06); the bundled profile is
    // compared after the loop.
    const std::string hw_name = id == "VL-a100" ? "a100-80gb-sxm" : "h100-sxm-vidur";
    const HwProfile hw = id == "VL-a100" ? load_hw_profile(resolve_data_ref("hwprofiles", hw_name, "", ""))
                                         : load_hw_profile(std::string(servesim::test::reference_dir()) + "/validation/profiles/h100-sxm-vidur.json");
    for (const auto& [tokens, value] : c["value"].items()) {
      const double published_ms = value.get<double>();
      const double predicted_ms = 1e3 * layer_non_attention_s(model, hw, std::stoll(tokens));
      const double err = (predicted_ms - published_ms) / published_ms;
      errors.push_back(std::fabs(err));
      std::printf("%-8s %-15s %7s %12.3f %12.3f %+7.1f%%\n", id.c_str(), hw_name.c_str(), tokens.c_str(), published_ms,
                  predicted_ms, 100 * err);
    }
  }
  REQUIRE(errors.size() == 14);
  std::sort(errors.begin(), errors.end());
  const double median_error = median(errors);
  std::printf("vidur layer sums: median |error| %.1f%%, worst %.1f%%\n", 100 * median_error, 100 * errors.back());
  // Measured: median 3.8%, worst 12.8% (H100, 256 tokens) with the Llama-2-7B-held-out fit.
  CHECK(median_error <= validation_bound("vidur-layers/median"));
  CHECK(errors.back() <= validation_bound("vidur-layers/worst"));
}

TEST_CASE("cross-check: the H100 profile fitted from our calibrators against vidur's measured vLLM operator sums") {
  // Two independent sources for one GPU: our cuBLAS / elementwise calibration (h100-sxm) and
  // vidur's per-operator timings of vLLM's kernels (public_cases VL-h100, Llama-2-7B). Bound set
  // after the first comparison (development, not held out): median 8%, worst 30%. Measured
  // 2026-12-06: median 3.8%, worst -23.7% at 256 tokens, where vidur's vLLM GEMMs run slower
  // than cuBLAS in our calibration.
  const auto cases = load_json_file(std::string(servesim::test::reference_dir()) + "/validation/public_cases.json");
  const ModelSpec model = load_model(resolve_data_ref("models", "llama-2-7b", "", ""));
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "", ""));
  std::vector<double> errors;
  for (const auto& c : cases["cases"]) {
    if (c["id"] != "VL-h100") continue;
    for (const auto& [tokens, value] : c["value"].items()) {
      const double predicted_ms = 1e3 * layer_non_attention_s(model, hw, std::stoll(tokens));
      const double err = predicted_ms / value.get<double>() - 1.0;
      errors.push_back(std::fabs(err));
      std::printf("VL-h100 h100-sxm (ours) %5s tokens: published %.3f ms, predicted %.3f ms, %+.1f%%\n", tokens.c_str(),
                  value.get<double>(), predicted_ms, 100 * err);
    }
  }
  REQUIRE(errors.size() == 7);
  std::sort(errors.begin(), errors.end());
  std::printf("our H100 profile vs vidur: median |error| %.1f%%, worst %.1f%%\n", 100 * errors[3], 100 * errors.back());
  CHECK(errors[3] <= validation_bound("vidur-layers/cross-check-median"));
  CHECK(errors.back() <= validation_bound("vidur-layers/cross-check-worst"));
}
