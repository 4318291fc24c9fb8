// `servesim saturate` beyond Poisson arrivals: a trace's arrivals scaled through time_scale, an SLO
// no rate meets explained in one line, and replications that cannot differ said to be identical.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "sim/analysis/saturation_rate.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/json_reader.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
// A run's report.json, written to a scratch folder removed afterwards.
nlohmann::json run_report(const std::string& scenario, const std::string& flags) {
  const std::string out = test::write_temp("saturate_cli_run", "");
  std::remove(out.c_str());
  const auto r = test::run_cli("run " + scenario + " --out " + out + " --quiet --no-html --no-csv --no-trace " + flags);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = load_json_file(out + "/report.json");
  std::filesystem::remove_all(out);
  return report;
}

// 300 requests of varied lengths at irregular times (a fixed pattern, about 4 per second).
std::string trace_scenario() {
  std::string rows;
  double t = 0.0;
  for (int i = 0; i < 300; ++i) {
    t += 0.05 + 0.4 * ((i * 37) % 11) / 10.0;
    char row[128];
    std::snprintf(row, sizeof row, "{\"arrival_s\": %.3f, \"prompt_tokens\": %d, \"output_tokens\": %d}\n", t, 100 + (i * 53) % 900,
                  20 + (i * 29) % 150);
    rows += row;
  }
  const std::string trace = test::write_temp("saturate_trace.jsonl", rows);
  auto doc = test::base_scenario();
  doc["workload"] = {{"trace", {{"path", trace}, {"format", "jsonl"}}},
                     {"arrival", {{"impl", "trace"}}},
                     {"prompt_tokens", {{"impl", "trace"}}},
                     {"output_tokens", {{"impl", "trace"}}}};
  return test::write_temp("saturate_trace.json", doc.dump());
}
}  // namespace

TEST_CASE("saturate on trace arrivals scales the trace's rate through time_scale") {
  const std::string scen = trace_scenario();
  const auto r = test::run_cli("saturate " + scen + " --slo ttft=300ms,p=0.9 --tolerance 0.02 --json 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  // The trace's own rate: its 300 arrivals over the last one's time.
  const nlohmann::json first = run_report(scen, "");
  CHECK(j["trace_rate_per_s"].get<double>() == doctest::Approx(first["requests"]["offered_rate_per_s"].get<double>()));
  const double stable = j["stable_qps"], failing = j["first_failing_qps"], trace_rate = j["trace_rate_per_s"];
  CHECK(j["time_scale_at_stable_qps"].get<double>() == doctest::Approx(trace_rate / stable));
  std::printf("trace at %.4g req/s: stable %.4g req/s (time_scale %.4g), first failing %.4g\n", trace_rate, stable,
              j["time_scale_at_stable_qps"].get<double>(), failing);
  // The trace fixes arrivals and lengths: every seed of a probe is the same run.
  CHECK(j["identical_replications"] == true);
  // Replayed at the stable rate the SLO holds; at the first failing rate it does not.
  char at_stable[96], at_failing[96];
  std::snprintf(at_stable, sizeof at_stable, "--slo ttft=300ms,p=0.9 --set workload.trace.time_scale=%.17g", trace_rate / stable);
  std::snprintf(at_failing, sizeof at_failing, "--slo ttft=300ms,p=0.9 --set workload.trace.time_scale=%.17g", trace_rate / failing);
  const nlohmann::json ok = run_report(scen, at_stable), bad = run_report(scen, at_failing);
  CHECK(ok["slo"]["met"] == true);
  CHECK(bad["slo"]["met"] == false);
  CHECK(ok["requests"]["offered_rate_per_s"].get<double>() == doctest::Approx(stable));
}

TEST_CASE("saturate: an SLO no rate meets is one line saying what the lowest rate gave, not a simulated-time limit") {
  // 5000 requests: halving the rate down to 1e-4 req/s would put the last arrivals past the
  // simulated-time limit (3.2e7 s); the search stops at 2 x 5000 / 3.2e7 req/s.
  auto doc = test::base_scenario();
  doc["workload"]["num_requests"] = 5000;
  doc["workload"]["output_tokens"]["value_tokens"] = 4;
  const std::string scen = test::write_temp("saturate_unmet.json", doc.dump());
  const auto r = test::run_cli("saturate " + scen + " --slo ttft=1ms --replications 1");
  CHECK(r.exit_code == 2);
  const std::string head = "--slo: no rate meets the SLO: even at ";
  const auto at = r.output.find(head);
  REQUIRE(at != std::string::npos);
  CHECK(r.output.find("simulated-time limit") == std::string::npos);
  const double lowest = std::stod(r.output.substr(at + head.size()));
  CHECK(lowest >= lowest_probe_rate(test::scenario_from(doc)) * 0.999);
  CHECK(lowest < 2.0 * lowest_probe_rate(test::scenario_from(doc)));
  // What it quotes is what a run at that rate measures: every 128-token prompt alone on the GPU.
  const nlohmann::json alone = run_report(scen, "--slo ttft=1ms --set workload.arrival.rate_per_s=" + std::to_string(lowest));
  const std::string quoted = "TTFT p99 is " + format_duration(alone["latency"]["ttft_s"]["p99"].get<double>()) + ", above its 1 ms target";
  CHECK(r.output.find(quoted) != std::string::npos);

  // plan says the same of an option that meets no rate.
  const auto plan = test::run_cli("plan --model llama-2-7b --rate 1 --slo ttft=1ms --hw a100-80gb-sxm --tp 1 --replications 1 --workload " +
                                  std::string(servesim::test::test_data_dir()) + "/dist/small.json 2>/dev/null");
  REQUIRE(plan.exit_code == 0);
  CHECK(plan.output.find("a100-80gb-sxm bf16 tp 1: no rate meets the SLO: even at ") != std::string::npos);
}
