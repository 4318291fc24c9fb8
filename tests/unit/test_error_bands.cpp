// Error bands (issue 38): the attention-DP bands are separate entries (feature "attention_dp",
// development data); the loader reads files with and without the field; plan judges an option
// that runs attention DP by those bands alone and says so where there is none.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/analysis/error_bands.hpp"
#include "sim/core/error.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
std::string bands_file(const std::string& name, const std::string& extra) {
  return test::write_temp(name, R"({"schema": "servesim-error-bands/1", "generated_by": "x", "bands": [
    {"hw": "h100-sxm", "engine": "e", "phase": "throughput", "n": 9, "median_abs": 0.04, "worst_abs": 0.1, "source": "plain"},
    {"hw": "h100-sxm", "engine": "e", "phase": "throughput", "n": 8, "median_abs": 0.626, "worst_abs": 0.77, "source": "adp")" +
                                     extra + R"(}]})");
}
}  // namespace

TEST_CASE("error bands: the feature field is read when present, absent in older files, and checked") {
  const std::vector<ErrorBand> old_file = load_error_bands(bands_file("bands_old.json", ""));
  REQUIRE(old_file.size() == 2);
  CHECK(old_file[0].feature.empty());
  CHECK(old_file[1].feature.empty());  // no field: a plain band
  const std::vector<ErrorBand> bands = load_error_bands(bands_file("bands_adp.json", R"(, "feature": "attention_dp")"));
  REQUIRE(bands.size() == 2);
  CHECK(bands[0].feature.empty());
  CHECK(bands[1].feature == kAttentionDpFeature);
  // Written back: the plain band without the key (the committed file's old entries unchanged).
  const nlohmann::json doc = error_bands_to_json(bands, "x");
  CHECK_FALSE(doc["bands"][0].contains("feature"));
  CHECK(doc["bands"][1]["feature"] == "attention_dp");
  // A wrong type or an unknown feature names the file and key.
  const std::string wrong_type = bands_file("bands_feature_type.json", R"(, "feature": 3)");
  CHECK_THROWS_WITH_AS(load_error_bands(wrong_type), doctest::Contains("bands_feature_type.json"), InputError);
  CHECK_THROWS_WITH_AS(load_error_bands(wrong_type), doctest::Contains("bands[1].feature"), InputError);
  CHECK_THROWS_WITH_AS(load_error_bands(bands_file("bands_feature_name.json", R"(, "feature": "mtp")")),
                       doctest::Contains("bands[1].feature"), InputError);
}

TEST_CASE("error bands: an attention-DP lookup takes only the attention-DP band, a plain one only the plain band") {
  const std::vector<ErrorBand> bands = load_error_bands(bands_file("bands_pick.json", R"(, "feature": "attention_dp")"));
  const auto plain = serving_band(bands, "h100-sxm", "e");
  REQUIRE(plain.has_value());
  CHECK(plain->source == "plain");
  const auto adp = serving_band(bands, "h100-sxm", "e", kAttentionDpFeature);
  REQUIRE(adp.has_value());
  CHECK(adp->source == "adp");
  CHECK(describe_band(*adp) == "attention DP throughput 63% (n 8, development)");
  CHECK(describe_band(*plain) == "throughput 4% (n 9)");
  // No attention-DP band on this GPU: none, not the plain one.
  const std::vector<ErrorBand> plain_only = load_error_bands(bands_file("bands_plain_only.json", ""));
  CHECK_FALSE(serving_band(plain_only, "h100-sxm", "e", kAttentionDpFeature).has_value());
  const SloBands none = slo_bands(plain_only, "h100-sxm", "e", false, false, false, kAttentionDpFeature);
  CHECK(none.bands.empty());
  CHECK(none.feature == kAttentionDpFeature);
  // A latency target has no attention-DP band (a throughput band does not speak for it).
  const SloBands ttft = slo_bands(bands, "h100-sxm", "e", true, false, false, kAttentionDpFeature);
  CHECK(ttft.bands.empty());
  REQUIRE(ttft.missing.size() == 1);
  CHECK(missing_band_text(ttft.feature, ttft.missing[0]) == "attention DP TTFT");
  CHECK(missing_band_text("", "TTFT") == "TTFT");
  const SloBands whole = slo_bands(bands, "h100-sxm", "e", false, false, false, kAttentionDpFeature);
  REQUIRE(whole.bands.size() == 1);
  CHECK(whole.bands[0].source == "adp");
}

TEST_CASE("plan: an attention-DP deployment is shown the attention-DP bands, never the plain ones") {
  // The vLLM runs give h100-sxm / vllm TTFT and TPOT bands, none of them with attention DP.
  const std::string common = "plan --model qwen3-30b-a3b --rate 4 --slo ttft=2s,tpot=100ms --hw h100-sxm,a100-80gb-sxm --quant fp8 "
                             "--tp 2 --ep tp --replications 1 --tolerance 0.1 ";
  const std::string adp = " --set parallel.enable_attention_dp=true --set parallel.tensor_parallel_size=2 --set parallel.expert_parallel_size=2";
  const auto plain = test::run_cli(common + "--engine vllm 2>/dev/null");
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.output.find("TTFT p90") != std::string::npos);
  CHECK(plain.output.find("attention DP") == std::string::npos);
  const auto with_adp = test::run_cli(common + "--engine vllm" + adp + " 2>/dev/null");
  REQUIRE(with_adp.exit_code == 0);
  CHECK(with_adp.output.find("TTFT p90") == std::string::npos);
  CHECK(with_adp.output.find("attention DP TTFT ?, attention DP TPOT ?") != std::string::npos);
  // The legend lists the attention-DP bands there are (TensorRT-LLM's), as development data.
  CHECK(with_adp.output.find("development data") != std::string::npos);
  CHECK(with_adp.output.find("h100-sxm/tensorrt-llm-pytorch throughput") != std::string::npos);
  // --json: the same, in words per row.
  const auto json = test::run_cli(common + "--engine tensorrt-llm-pytorch --json" + adp + " 2>/dev/null");
  REQUIRE(json.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(json.output);
  for (const auto& row : j["rows"]) {
    CAPTURE(row["hw"]);
    CHECK(row["error_bands"] == "attention DP TTFT not validated; attention DP TPOT not validated");
  }
}
