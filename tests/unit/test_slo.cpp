// SLO accounting: per-class targets at a percentile, success rate, goodput, and requests that
// time out or are turned away by the queue limit counted (never dropped silently).
#include <doctest/doctest.h>

#include "sim/core/error.hpp"
#include "sim/metrics/slo.hpp"
#include "sim/serve/simulation.hpp"
#include "../support.hpp"

using namespace servesim;

TEST_CASE("every arrival ends completed, rejected or timed out, per class and overall") {
  auto doc = test::base_scenario();
  doc["workload"]["num_requests"] = 600;
  doc["workload"]["arrival"]["rate_per_s"] = 30.0;  // about twice the capacity
  doc["workload"]["request_timeout_s"] = 4.0;
  doc["engine"]["scheduler"] = {{"impl", "continuous"}, {"max_queue_size", 40}};
  doc["workload"]["prompt_tokens"] = {{"impl", "fixed"}, {"value_tokens", 512}};
  doc["workload"]["output_tokens"] = {{"impl", "fixed"}, {"value_tokens", 64}};
  const Scenario s = test::scenario_from(doc);
  const SimResult r = simulate(s);
  const RunMetrics& m = r.metrics;
  std::printf("overload: %lld arrived, %lld completed, %lld rejected (queue full %lld), %lld timed out\n",
              static_cast<long long>(m.arrived), static_cast<long long>(m.completed), static_cast<long long>(m.rejected),
              static_cast<long long>(m.rejected_queue_full), static_cast<long long>(m.timed_out));
  CHECK(m.arrived == 600);
  CHECK(m.completed + m.rejected + m.timed_out == m.arrived);
  CHECK(m.completed > 0);
  CHECK(m.rejected_queue_full > 0);
  CHECK(m.timed_out > 0);
  CHECK(m.rejected == m.rejected_queue_full + m.rejected_too_long);
  CHECK(m.classes[0].arrived == m.arrived);
  CHECK(m.classes[0].timed_out == m.timed_out);
  // No completed request took longer than the timeout plus one iteration (timeouts are checked
  // at iteration boundaries).
  CHECK(m.e2e_s.max() < 4.0 + 0.5);
  const SloResult slo = evaluate_slo(s.workload, m);
  CHECK(slo.success_frac == doctest::Approx(static_cast<double>(m.completed) / 600.0));
  CHECK_FALSE(slo.met);  // success far below 99.9%
}

TEST_CASE("latency targets at the percentile decide each class; goodput counts requests meeting all") {
  auto doc = test::base_scenario();
  doc["workload"].erase("prompt_tokens");
  doc["workload"].erase("output_tokens");
  doc["workload"]["num_requests"] = 400;
  doc["workload"]["arrival"]["rate_per_s"] = 4.0;
  doc["workload"]["classes"] = nlohmann::json::parse(R"([
    {"name": "easy", "prompt_tokens": {"impl": "fixed", "value_tokens": 128}, "output_tokens": {"impl": "fixed", "value_tokens": 16},
     "slo": {"ttft_s": 10, "e2e_s": 100, "percentile": 0.99}},
    {"name": "hard", "prompt_tokens": {"impl": "fixed", "value_tokens": 128}, "output_tokens": {"impl": "fixed", "value_tokens": 16},
     "slo": {"ttft_s": 1e-6, "percentile": 0.5}}])");
  const Scenario s = test::scenario_from(doc);
  const SimResult r = simulate(s);
  const SloResult slo = evaluate_slo(s.workload, r.metrics);
  REQUIRE(slo.classes.size() == 2);
  CHECK(slo.classes[0].met);
  CHECK_FALSE(slo.classes[1].met);
  CHECK_FALSE(slo.met);
  CHECK(slo.classes[0].targets.size() == 2);
  CHECK(slo.classes[1].targets[0].value_s == doctest::Approx(r.metrics.classes[1].ttft_s.quantile(0.5)));
  // Goodput: every "easy" request meets its targets, no "hard" one does.
  const double dur = ns_to_seconds(r.metrics.end_ns);
  CHECK(r.metrics.classes[0].slo_met == r.metrics.classes[0].completed);
  CHECK(r.metrics.classes[1].slo_met == 0);
  CHECK(slo.goodput_requests_per_s == doctest::Approx(r.metrics.classes[0].completed / dur));
}

TEST_CASE("SLO and workload keys are strict") {
  auto expect_error = [](nlohmann::json doc, const std::string& text) {
    try {
      test::scenario_from(doc);
      FAIL("no error for " << text);
    } catch (const InputError& e) {
      INFO(std::string(e.what()));
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  auto d = test::base_scenario();
  d["slo"] = {{"ttft_s", -1}};
  expect_error(d, "slo.ttft_s");
  d = test::base_scenario();
  d["slo"] = {{"ttft", 1}};
  expect_error(d, "slo.ttft: unknown key");
  d = test::base_scenario();
  d["workload"]["arrival"] = {{"impl", "gamma"}, {"rate_per_s", 1}};
  expect_error(d, "workload.arrival.cv");
  d = test::base_scenario();
  d["workload"]["arrival"] = {{"impl", "trace"}};
  expect_error(d, "needs workload.trace");
  d = test::base_scenario();
  d["workload"].erase("num_requests");
  expect_error(d, "workload.num_requests: required unless");
  d = test::base_scenario();
  d["workload"]["prompt_tokens"] = {{"impl", "empirical"}, {"tokens", {10, 20}}, {"weights", {1}}};
  expect_error(d, "workload.prompt_tokens.weights");
  d = test::base_scenario();
  d["engine"]["max_queued_requests"] = 40;
  expect_error(d, "engine.max_queued_requests: the queue limit is engine.scheduler.max_queue_size");
}
