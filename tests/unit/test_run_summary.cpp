// `servesim run`'s summary and report.replications: a line per request class when the workload
// has several; replications on a trace resample its requests (bootstrap), and replications that
// cannot differ (nothing drawn from the seed) are said to be so.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "sim/io/describe.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/report_io.hpp"
#include "sim/serve/simulation.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
// `run` with `flags`: its stdout and report.json.
std::pair<std::string, nlohmann::json> run_cli_report(const std::string& scenario, const std::string& flags) {
  const std::string out = test::write_temp("run_summary", "");
  std::remove(out.c_str());
  const auto r = test::run_cli("run " + scenario + " --out " + out + " --no-html --no-csv --no-trace " + flags + " 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = load_json_file(out + "/report.json");
  std::filesystem::remove_all(out);
  return {r.output, report};
}
}  // namespace

TEST_CASE("the summary has a line per request class: its status, each target against its value, completed and goodput") {
  auto doc = test::base_scenario();
  doc["workload"].erase("prompt_tokens");
  doc["workload"].erase("output_tokens");
  doc["workload"]["arrival"]["rate_per_s"] = 20.0;
  doc["workload"]["num_requests"] = 200;
  doc["workload"]["classes"] = {
      {{"name", "chat"}, {"weight", 3}, {"prompt_tokens", {{"impl", "fixed"}, {"value_tokens", 128}}},
       {"output_tokens", {{"impl", "fixed"}, {"value_tokens", 32}}}, {"slo", {{"ttft_s", 0.001}, {"percentile", 0.9}}}},
      {{"name", "docs"}, {"weight", 1}, {"prompt_tokens", {{"impl", "fixed"}, {"value_tokens", 2000}}},
       {"output_tokens", {{"impl", "fixed"}, {"value_tokens", 64}}}, {"slo", {{"ttft_s", 30.0}, {"e2e_s", 60.0}, {"percentile", 0.5}}}}};
  const Scenario s = test::scenario_from(doc);
  const nlohmann::json report = make_report(s, simulate(s));
  std::ostringstream summary;
  print_summary(summary, report, 0.0);
  const auto& classes = report["slo"]["classes"];
  REQUIRE(classes.size() == 2);
  CHECK(classes[0]["status"] == "not met");  // 1 ms is below any prefill
  CHECK(classes[1]["status"] == "met");
  for (const auto& c : classes) {
    const std::string name = c["name"];
    const std::string status = c["status"] == "met" ? "met" : "NOT met";
    const auto& ttft = c["targets"]["ttft_s"];
    const std::string target = "TTFT " + format_duration(ttft["value_s"].get<double>()) + (ttft["met"].get<bool>() ? " <= " : " > ") +
                               format_duration(ttft["threshold_s"].get<double>());
    INFO(summary.str());
    char pct[16];
    std::snprintf(pct, sizeof pct, "%g", 100.0 * c["percentile"].get<double>());
    CHECK(summary.str().find("    " + name) != std::string::npos);
    CHECK(summary.str().find(status + " at p" + pct + ": " + target) != std::string::npos);
  }
  CHECK(summary.str().find("E2E ") != std::string::npos);  // docs' second target
  // One class: the summary's slo line alone, as before.
  const Scenario one = test::scenario_from(test::base_scenario());
  std::ostringstream single;
  print_summary(single, make_report(one, simulate(one)), 0.0);
  CHECK(single.str().find("\n    ") == std::string::npos);
}

TEST_CASE("run --replications on a trace: the runs after the first resample its requests (bootstrap), a non-zero interval, deterministic") {
  // 120 requests of mixed lengths at ~5 req/s: the mix decides how much queueing the run sees.
  std::string rows;
  const int prompts[] = {64, 300, 900, 2000}, outputs[] = {16, 80, 300};
  for (int i = 0; i < 120; ++i) {
    rows += "{\"arrival_s\": " + std::to_string(0.2 * i) + ", \"prompt_tokens\": " + std::to_string(prompts[(i * 7) % 4]) +
            ", \"output_tokens\": " + std::to_string(outputs[(i * 5) % 3]) + "}\n";
  }
  auto doc = test::base_scenario();
  doc["workload"] = {{"trace", {{"path", test::write_temp("replications_trace.jsonl", rows)}, {"format", "jsonl"}}},
                     {"arrival", {{"impl", "trace"}}},
                     {"prompt_tokens", {{"impl", "trace"}}},
                     {"output_tokens", {{"impl", "trace"}}}};
  const std::string scen = test::write_temp("replications_trace.json", doc.dump());
  const auto [out, rep] = run_cli_report(scen, "--replications 8");
  const auto& r = rep["replications"];
  CHECK(r["method"] == "bootstrap over the trace's requests");
  CHECK(r["identical_runs"] == false);
  for (const char* latency : {"ttft_s", "tpot_s", "e2e_s"}) {
    const nlohmann::json& m = r.at("metrics").at(std::string("latency.") + latency + ".p99");
    INFO(latency << ": " << m.dump());
    CHECK(m.at("ci95_half_width").get<double>() > 0.0);
    // Centred on the trace's own run (the report's figure), 1.96 bootstrap standard errors wide.
    CHECK(m.at("run").get<double>() == doctest::Approx(rep.at("latency").at(latency).at("p99").get<double>()));
    CHECK(m["ci95_half_width"].get<double>() == doctest::Approx(1.96 * m["stddev"].get<double>()));
  }
  CHECK(out.find("bootstrap 95% CI") != std::string::npos);
  // The same command gives the same report; another seed draws other resamples.
  const auto again = run_cli_report(scen, "--replications 8").second;
  CHECK(again["replications"] == r);
  const auto other = run_cli_report(scen, "--replications 8 --seed 8").second;
  CHECK(other["replications"]["metrics"]["latency.e2e_s.p99"]["stddev"] != r["metrics"]["latency.e2e_s.p99"]["stddev"]);
  // One resample gives no spread: refused, naming the flag.
  const auto two = test::run_cli("run " + scen + " --replications 2 --out " + test::write_temp("rep2", "") + "_d 2>&1");
  CHECK(two.exit_code == 2);
  CHECK(two.output.find("--replications") != std::string::npos);
}

TEST_CASE("run --replications says when the seeds cannot differ (constant arrivals, fixed lengths) and when they do") {
  auto doc = test::base_scenario();
  doc["workload"]["arrival"] = {{"impl", "constant"}, {"rate_per_s", 2.0}};
  const auto [fixed_out, fixed] = run_cli_report(test::write_temp("replications_constant.json", doc.dump()), "--replications 3");
  CHECK(fixed["replications"]["method"] == "seeds");
  CHECK(fixed["replications"]["identical_runs"] == true);
  CHECK(fixed["replications"]["metrics"]["latency.ttft_s.p99"]["ci95_half_width"] == 0.0);
  CHECK(fixed_out.find("the 3 seeds gave identical runs") != std::string::npos);
  // Poisson arrivals draw from the seed: the runs differ and nothing is said.
  const auto [random_out, random] = run_cli_report(test::write_temp("replications_poisson.json", test::base_scenario().dump()), "--replications 3");
  CHECK(random["replications"]["identical_runs"] == false);
  CHECK(random["replications"]["metrics"]["latency.e2e_s.p99"]["stddev"].get<double>() > 0.0);
  CHECK(random_out.find("identical runs") == std::string::npos);
}
