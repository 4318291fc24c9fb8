// `servesim plan`: the engine it plans for, what each row predicts at the target rate, ties within
// the search tolerance, and that a faster GPU never ranks below a slower one.
#include <doctest/doctest.h>

#include <string>

#include "sim/config/scenario.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
// A few hundred milliseconds per simulation (tests/dist/small.json), one seed, a coarse search.
const std::string kSmall = std::string(SERVESIM_TEST_DATA_DIR) + "/dist/small.json";
const std::string kPlan = "plan --model llama-2-7b --rate 4 --slo ttft=2s,tpot=100ms --tp 1 --replications 1 --tolerance 0.1 --workload " + kSmall;

nlohmann::json plan_json(const std::string& extra) {
  const auto r = test::run_cli(kPlan + " --json " + extra + " 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}
}  // namespace

TEST_CASE("plan --engine NAME plans with that engine profile, as --set engine.profile=NAME does, and names it") {
  const auto by_default = plan_json("--hw a100-80gb-sxm");
  CHECK(by_default["engine"]["name"] == EngineConfig::kDefaultProfile);
  const auto sglang = plan_json("--hw a100-80gb-sxm --engine sglang");
  CHECK(sglang["engine"]["name"] == "sglang");
  REQUIRE(sglang["rows"].size() == 1);
  CHECK(sglang["rows"][0]["engine"] == "sglang");
  CHECK(by_default["rows"][0]["engine"] == EngineConfig::kDefaultProfile);
  // The flag is the scenario key: the same answer, number for number.
  CHECK(plan_json("--hw a100-80gb-sxm --set engine.profile=sglang") == sglang);
  // Another engine is another answer (SGLang's host costs differ from vLLM V1's).
  CHECK(sglang["rows"][0]["stable_qps_per_replica"] != by_default["rows"][0]["stable_qps_per_replica"]);
  const auto text = test::run_cli(kPlan + " --hw a100-80gb-sxm --engine sglang 2>/dev/null");
  CHECK(text.output.find("engine:    sglang (") != std::string::npos);

  const auto typo = test::run_cli(kPlan + " --hw a100-80gb-sxm --engine sglnag");
  CHECK(typo.exit_code == 2);
  CHECK(typo.output.find("servesim plan: --engine: unknown engine 'sglnag'; did you mean sglang?") != std::string::npos);
  const auto both = test::run_cli(kPlan + " --hw a100-80gb-sxm --engine sglang --set engine.profile=vllm");
  CHECK(both.exit_code == 2);
  CHECK(both.output.find("--engine: also set by --set engine.profile=vllm") != std::string::npos);
}
