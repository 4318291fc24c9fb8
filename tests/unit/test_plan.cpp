// `servesim plan`: the engine it plans for, what each row predicts at the target rate, ties within
// the search tolerance, and that a faster GPU never ranks below a slower one.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/analysis/plan.hpp"
#include "sim/config/scenario.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/json_reader.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
// A few hundred milliseconds per simulation (tests/dist/small.json), one seed, a coarse search.
const std::string kSmall = std::string(servesim::test::test_data_dir()) + "/dist/small.json";
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

TEST_CASE("plan rows predict the configuration at the target rate: a run of the row's replicas, and the binding SLO target") {
  // At 30 req/s one replica (about 19 req/s stable here) is not enough: the row has 2.
  const std::string args = "plan --model llama-2-7b --rate 30 --slo ttft=2s,tpot=100ms --hw a100-80gb-sxm --tp 1 --replications 1 "
                           "--tolerance 0.1 --workload " + kSmall;
  const auto r = test::run_cli(args + " --json 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  const auto row = nlohmann::json::parse(r.output)["rows"][0];
  REQUIRE(row["replicas"] == 2);
  // The same configuration through `run`: 2 replicas behind the router at 30 req/s, the workload's
  // 120 requests, the scenario's seed. Its report's percentiles are the row's, exactly.
  const std::string out = test::write_temp("plan_at_target", "");
  std::remove(out.c_str());
  const auto run = test::run_cli("run " + kSmall + " --out " + out + " --quiet --no-html --no-csv --no-trace --slo ttft=2s,tpot=100ms" +
                                 " --set dtype=bf16 --set workload.arrival.rate_per_s=30 --set parallel.data_parallel_size=2");
  REQUIRE(run.exit_code == 0);
  const auto report = load_json_file(out + "/report.json");
  CHECK(row["ttft_p50_s"] == report["latency"]["ttft_s"]["p50"]);
  CHECK(row["ttft_p99_s"] == report["latency"]["ttft_s"]["p99"]);
  CHECK(row["tpot_p50_s"] == report["latency"]["tpot_s"]["p50"]);
  CHECK(row["tpot_p99_s"] == report["latency"]["tpot_s"]["p99"]);
  // The binding target is the one with the least headroom at the SLO percentile (p99 here).
  const double ttft_headroom = 1.0 - row["ttft_p99_s"].get<double>() / 2.0;
  const double tpot_headroom = 1.0 - row["tpot_p99_s"].get<double>() / 0.1;
  CHECK(row["binding_target"] == (ttft_headroom < tpot_headroom ? "ttft_s" : "tpot_s"));
  CHECK(row["binding_headroom_frac"].get<double>() == doctest::Approx(std::min(ttft_headroom, tpot_headroom)));
  CHECK(row["meets_slo_at_target"] == (report["slo"]["status"] == "met"));
  // The text table shows the same figures in ms and the headroom in %.
  const auto text = test::run_cli(args + " 2>/dev/null");
  char cell[64];
  std::snprintf(cell, sizeof cell, "%.0f%%", 100.0 * row["binding_headroom_frac"].get<double>());
  CHECK(text.output.find(std::string(row["binding_target"] == "ttft_s" ? "TTFT" : "TPOT") + " p99 " + cell) != std::string::npos);
  std::filesystem::remove_all(out);
}

namespace {
// hwprofiles/BASE.json under other names (its "name" too), the HBM bandwidth times `bandwidth_x`.
std::string profile_copy(const std::string& base, const std::string& name, double bandwidth_x) {
  nlohmann::json doc = load_json_file(std::string(servesim::test::test_data_dir()) + "/../hwprofiles/" + base + ".json");
  REQUIRE_FALSE(doc.contains("tables"));  // a copy elsewhere would lose a relative tables path
  doc["name"] = name;
  doc["hbm_bandwidth_bytes_per_s"] = doc["hbm_bandwidth_bytes_per_s"].get<double>() * bandwidth_x;
  return test::write_temp(name + ".json", doc.dump());
}
// The same, every efficiency curve (fraction of peak against size) times `efficiency_x`.
std::string profile_copy(const std::string& base, const std::string& name, double bandwidth_x, double efficiency_x) {
  const std::string path = profile_copy(base, name, bandwidth_x);
  nlohmann::json doc = load_json_file(path);
  for (auto& [curve, points] : doc["efficiency"].items()) {
    for (auto& point : points) point[1] = point[1].get<double>() * efficiency_x;
  }
  return test::write_temp(name + ".json", doc.dump());
}
std::string prices(const std::vector<std::pair<std::string, double>>& usd) {
  nlohmann::json doc = {{"read_on", "2026-12-06"}, {"currency", "USD"}, {"gpus", nlohmann::json::object()}};
  for (const auto& [hw, price] : usd) doc["gpus"][hw] = {{"usd_per_gpu_hour", price}, {"source", "test"}};
  return test::write_temp("prices.json", doc.dump());
}
}  // namespace

TEST_CASE("plan: stable rates within the search tolerance are tied (=) and ranked by cost") {
  const std::string twin_a = profile_copy("a100-40gb-pcie", "twin-a", 1.0), twin_b = profile_copy("a100-40gb-pcie", "twin-b", 1.0);
  const std::string args = kPlan + " --hw " + twin_a + "," + twin_b + " --prices " + prices({{twin_a, 2.0}, {twin_b, 1.0}});
  const auto j = plan_json(args.substr(kPlan.size()));
  CHECK(j["search"]["rel_tolerance"] == 0.1);
  const auto& rows = j["rows"];
  REQUIRE(rows.size() == 2);
  // The same GPU under two names: the same rate, so tied, and the cheaper first.
  CHECK(rows[0]["stable_qps_per_replica"] == rows[1]["stable_qps_per_replica"]);
  CHECK(rows[0]["hw"] == twin_b);
  CHECK(rows[0]["tied_with"] == twin_a);
  CHECK(rows[1]["tied_with"] == twin_b);
  const auto text = test::run_cli(args + " 2>/dev/null");
  CHECK(text.output.find("to 10% (--tolerance), 1 seeds per probed rate") != std::string::npos);
  CHECK(text.output.find("= tied: stable rates within the search tolerance (10%)") != std::string::npos);
  CHECK(stable_rates_tied(10.0, 10.9, 0.1));
  CHECK_FALSE(stable_rates_tied(10.0, 11.1, 0.1));
  CHECK_FALSE(stable_rates_tied(0.0, 0.0, 0.1));  // neither meets the SLO: nothing to tie
}

TEST_CASE("plan: of two GPUs identical but for HBM bandwidth, the faster never sustains less nor ranks lower") {
  // Derived profiles (efficiency curves, no measured tables) of an Ampere and a Hopper card, each
  // beside a copy with 25% more bandwidth at the same price; the slower is listed first, so a tie
  // in cost and headroom would keep it first.
  for (const std::string base : {"a100-40gb-pcie", "h100-pcie"}) {
    const std::string slow = profile_copy(base, base + "-slow", 1.0), fast = profile_copy(base, base + "-fast", 1.25);
    for (const std::string rate : {"4", "20"}) {
      const auto r = test::run_cli("plan --model llama-3-8b --rate " + rate + " --slo ttft=2s,tpot=100ms --tp 1,2 --json --hw " +
                                   slow + "," + fast + " --prices " + prices({{slow, 2.0}, {fast, 2.0}}) + " 2>/dev/null");
      REQUIRE(r.exit_code == 0);
      const auto rows = nlohmann::json::parse(r.output)["rows"];
      for (int tp : {1, 2}) {
        CAPTURE(base);
        CAPTURE(rate);
        CAPTURE(tp);
        int at_slow = -1, at_fast = -1;
        for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
          if (rows[i]["tp"] != tp) continue;
          (rows[i]["hw"] == fast ? at_fast : at_slow) = i;
        }
        REQUIRE(at_slow >= 0);
        REQUIRE(at_fast >= 0);
        const double slow_qps = rows[at_slow]["stable_qps_per_replica"], fast_qps = rows[at_fast]["stable_qps_per_replica"];
        std::printf("%s tp %d at %s req/s: stable %.4g (slow) vs %.4g (fast, +25%% bandwidth)\n", base.c_str(), tp, rate.c_str(),
                    slow_qps, fast_qps);
        CHECK(fast_qps >= slow_qps);
        CHECK((at_fast < at_slow || fast_qps == slow_qps));
      }
    }
  }
}

TEST_CASE("plan explains a GPU that sustains less than one it beats on paper: the steps its profile prices") {
  // 10% more HBM bandwidth on paper, 30% less of every peak reached in its kernels.
  const std::string paper = profile_copy("a100-40gb-pcie", "paper", 1.1, 0.7), plain = profile_copy("a100-40gb-pcie", "plain", 1.0);
  const std::string args = kPlan + " --hw " + paper + "," + plain;
  const auto j = plan_json(args.substr(kPlan.size()));
  const auto& rows = j["rows"];
  REQUIRE(rows.size() == 2);
  const auto& p = rows[0]["hw"] == paper ? rows[0] : rows[1];
  const auto& q = rows[0]["hw"] == paper ? rows[1] : rows[0];
  REQUIRE(p["stable_qps_per_replica"].get<double>() < q["stable_qps_per_replica"].get<double>());
  CHECK(p["hbm_bandwidth_bytes_per_s"].get<double>() > q["hbm_bandwidth_bytes_per_s"].get<double>());
  // Its steps are slower as its own profile prices them, and the note says so with both numbers.
  CHECK(p["prefill_step_s"].get<double>() > q["prefill_step_s"].get<double>());
  CHECK(p["prefill_tokens"] == q["prefill_tokens"]);  // the same requests (the scenario's seed)
  const std::string why = p["datasheet_inversion"];
  CHECK(why.find("less than " + plain + "'s") != std::string::npos);
  CHECK(why.find("efficiency fits derived here, derived there") != std::string::npos);
  CHECK(why.find(format_duration(p["prefill_step_s"].get<double>()) + " here and " + format_duration(q["prefill_step_s"].get<double>())) !=
        std::string::npos);
  CHECK(q["datasheet_inversion"].is_null());
  const auto text = test::run_cli(args + " 2>/dev/null");
  CHECK(text.output.find("faster on paper, slower here:\n  " + paper + " bf16 tp 1: sustains") != std::string::npos);
}
