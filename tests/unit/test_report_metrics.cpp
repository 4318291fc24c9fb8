// The registry of report metric paths (io/report_metrics): it matches what the report writer
// produces, both ways (the `present` descriptions against the conditions the writer applies); summaries read their values from the report; unknown names fail before
// any simulation, listing close ones.
#include <doctest/doctest.h>

#include <set>

#include "sim/analysis/summary.hpp"
#include "sim/analysis/sweep.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/report_metrics.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {
// Fleet-level paths of a report: flatten_report without the per-replica and per-class copies.
std::set<std::string> fleet_paths(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const auto& [path, value] : flatten_report(report)) {
    if (path.rfind("replicas.", 0) == 0 || path.rfind("slo.classes.", 0) == 0) continue;
    out.insert(path);
  }
  return out;
}
}  // namespace

TEST_CASE("the registry lists exactly the fleet-level scalars of the reports the writer produces") {
  // Plain, tensor-parallel, two instances per GPU, disaggregated with an SLO, speculative
  // decoding, attention DP, KV offload: every conditional section.
  std::vector<nlohmann::json> docs(7, test::base_scenario());
  docs[1]["parallel"] = {{"tensor_parallel_size", 2}};
  docs[2]["parallel"] = {{"instances_per_gpu", 2}};
  docs[2]["workload"]["arrival"]["rate_per_s"] = 20.0;
  docs[3]["parallel"] = {{"tensor_parallel_size", 2}};
  docs[3]["disaggregation"] = {{"prefill", {{"replicas", 1}}}, {"decode", {{"replicas", 1}}}};
  docs[3]["slo"] = {{"ttft_s", 5.0}};  // slo.met is written only with a latency target
  docs[4]["engine"]["speculative"] = {{"method", "eagle"}, {"num_speculative_tokens", 3}};
  docs[5]["model"] = "qwen3-30b-a3b";
  docs[5]["hardware"] = "h100-sxm";
  docs[5]["dtype"] = "bf16";
  docs[5]["parallel"] = {{"tensor_parallel_size", 2}, {"expert_parallel_size", 2}, {"enable_attention_dp", true}};
  docs[6]["engine"]["enable_prefix_caching"] = true;
  docs[6]["engine"]["kv_offload"] = {{"cpu_bytes", 1e9}};
  std::set<std::string> registered;
  for (const auto& m : report_metrics()) registered.insert(m.path);
  std::set<std::string> seen;
  for (const auto& doc : docs) {
    const Scenario s = test::scenario_from(doc);
    const SimResult r = simulate(s);
    const nlohmann::json report = make_report(s, r);
    const std::set<std::string> paths = fleet_paths(report);
    for (const auto& p : paths) {
      INFO("report path " << p);
      CHECK(registered.count(p) == 1);  // written but not registered
    }
    for (const auto& m : report_metrics()) {
      if (!m.present.empty()) continue;
      INFO("registered path " << m.path);
      CHECK(paths.count(m.path) == 1);  // registered as always present, but missing
    }
    seen.insert(paths.begin(), paths.end());
    // Run figures are written again under each replica, fleet figures only at the top level.
    const std::map<std::string, double> flat = flatten_report(report);
    for (const ReportFigure& f : report_figures()) {
      const std::string leaf = "replicas.0." + f.path + (f.histogram ? ".p50" : "");
      INFO("replica path " << leaf);
      if (f.scope == FigureScope::fleet) CHECK(flat.count(leaf) == 0);
      if (f.scope == FigureScope::run && !f.written) CHECK(flat.count(leaf) == 1);
    }
    // The summary is the report's values, not a second computation.
    for (const auto& named : summarize_run(s, r)) {
      INFO(named.first);  // not a structured binding: clang refuses one captured by INFO
      CHECK(named.second == flat.at(named.first));
    }
    // report_figures_at computes each figure alone, with the report's value, and only the
    // figures this report has.
    const std::map<std::string, double> alone = report_figures_at(s, r, report_metric_paths());
    CHECK(alone.size() == summarize_run(s, r).size());
    for (const auto& named : alone) {
      INFO(named.first);
      CHECK(named.second == flat.at(named.first));
    }
  }
  for (const auto& m : report_metrics()) {
    INFO("conditional path " << m.path << " (" << m.present << ")");
    CHECK(seen.count(m.path) == 1);  // no scenario above writes it: stale entry
  }
  for (const auto& name : replicated_metrics()) CHECK(registered.count(name) == 1);
}

TEST_CASE("unknown metric names fail before any simulation, naming close ones") {
  std::string message;
  try {
    check_report_metrics({"latency.ttft.p99"}, "--metrics");
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message.find("--metrics") != std::string::npos);
  CHECK(message.find("unknown metric 'latency.ttft.p99'") != std::string::npos);
  CHECK(message.find("latency.ttft_s.p99") != std::string::npos);
  CHECK_NOTHROW(check_report_metrics({"requests.preemptions", "kv_cache.internal_fragmentation_frac"}, "--metrics"));

  int scenarios_built = 0;
  SweepOptions o;
  o.metrics = {"slo.goodput_requests_per_s", "requests.preemption"};
  const ScenarioFactory make = [&](const std::vector<std::string>&, long long) {
    ++scenarios_built;
    return test::scenario_from(test::base_scenario());
  };
  CHECK_THROWS_AS(run_sweep(make, {}, o), InputError);
  CHECK(scenarios_built == 0);
}

TEST_CASE("sweep --metrics takes any registered path; unknown ones exit 2 with close names") {
  const std::string path = test::write_temp("metrics.json", test::base_scenario().dump());
  const auto ok = test::run_cli("sweep " + path + " --metrics requests.preemptions,kv_cache.internal_fragmentation_frac --json");
  CHECK(ok.exit_code == 0);
  const auto bad = test::run_cli("sweep " + path + " --metrics requests.preemption");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("did you mean requests.preemptions") != std::string::npos);
  const auto list = test::run_cli("list metrics");
  CHECK(list.exit_code == 0);
  CHECK(list.output.find("latency.ttft_s.p99: 99th percentile of time to first token") != std::string::npos);
}
