// Multi-step scheduling (engine.num_scheduler_steps, vLLM 0.5.5-0.6.x --num-scheduler-steps;
// semantics and sources in sim/sched/continuous.cpp): prompts admitted only at a window's
// boundary, K decode steps per window with K slots of KV reserved at its start, a window's tokens
// delivered at its end, and K = 1 exactly the single-step scheduler.
#include <doctest/doctest.h>

#include "../support.hpp"
#include "sim/io/report_io.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "sim/serve/simulation.hpp"
#include "scheduler_harness.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

nlohmann::json report_of(const nlohmann::json& doc) {
  const Scenario s = scenario_from(doc);
  auto j = make_report(s, simulate(s));
  j["sim"].erase("events");
  return j;
}

RunMetrics metrics_of(const nlohmann::json& doc) { return simulate(scenario_from(doc)).metrics; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("multi-step: num_scheduler_steps 1 is the single-step scheduler, byte for byte") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 80;
  doc["workload"]["arrival"]["rate_per_s"] = 20.0;
  const auto absent = report_of(doc);
  doc["engine"]["num_scheduler_steps"] = 1;
  CHECK(report_of(doc).dump() == absent.dump());
  CHECK_FALSE(absent["scenario"]["engine"].contains("num_scheduler_steps"));  // single-step reports keep their bytes
  doc["engine"]["num_scheduler_steps"] = 4;
  CHECK(report_of(doc)["scenario"]["engine"]["num_scheduler_steps"] == 4);
}

TEST_CASE("multi-step: a prompt arriving mid-window is admitted only at the window's end; K slots reserved") {
  EngineConfig cfg = test::small_engine("continuous");
  cfg.num_scheduler_steps = 4;
  test::Harness h(cfg, 1000);
  ReplicaState& st = *h.st;
  RequestPool& requests = h.requests;
  const IterationPlan& plan = h.plan;
  h.add(16, 10);  // A
  h.add(30, 2);   // B: finishes inside its first window
  h.step();
  REQUIRE(plan.items.size() == 2);
  CHECK(plan.items[0].prefill);
  CHECK(plan.decode_steps == 1);  // a prefill is one step (no lookahead for prompts)
  for (const auto& item : plan.items) st.running[item.running_index].computed_tokens += item.new_tokens;
  requests[st.running[0].request].generated_tokens = 1;
  requests[st.running[1].request].generated_tokens = 1;

  h.step();
  CHECK(plan.decode_steps == 4);
  REQUIRE(plan.items.size() == 2);
  for (const auto& item : plan.items) {
    CHECK_FALSE(item.prefill);
    CHECK(item.new_tokens == 4);  // B runs the whole window although it needs one more token
    const Sequence& seq = st.running[item.running_index];
    CHECK(seq.kv_tokens == seq.computed_tokens + 4);  // 1 + num_lookahead_slots at the window's start
  }
  // A's 16 + 4 tokens need a second block; B's 30 + 4 a third.
  CHECK(st.kv.used_blocks() == 2 + 3);
  CHECK(plan.shape.decode_seqs == 2);
  CHECK(plan.shape.decode_kv_tokens == doctest::Approx(17 + 31));  // the window's first step

  // C arrives while the window runs: the engine calls schedule() only when the window ends.
  h.add(20, 5);
  for (const auto& item : plan.items) st.running[item.running_index].computed_tokens += item.new_tokens;
  requests[st.running[0].request].generated_tokens += 4;
  requests[st.running[1].request].generated_tokens = 2;
  st.release(st.running[1]);
  st.running.pop_back();
  h.step();
  REQUIRE(plan.items.size() == 1);
  CHECK(plan.items[0].prefill);  // C, prefill-prioritised, at the boundary
  CHECK(plan.decode_steps == 1);
}

TEST_CASE("multi-step: a window's tokens reach the client together at its end; finishers pay the whole window") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 1;
  doc["workload"]["output_tokens"]["value_tokens"] = 15;  // first token, a window of 10, 4 of the next
  const RunMetrics one = metrics_of(doc);
  doc["engine"]["num_scheduler_steps"] = 10;
  const RunMetrics ten = metrics_of(doc);
  CHECK(ten.ttft_s.mean() == doctest::Approx(one.ttft_s.mean()));  // an idle replica admits at once
  // 14 gaps per request: per window one gap of the window and nine of 0, then one gap of the
  // second window and three of 0 (its tokens arrive together).
  REQUIRE(ten.itl_s.count() == 14);
  CHECK(ten.itl_s.quantile(0.5) < 1e-6);
  CHECK(ten.iterations == 1 + 20);  // the second window runs all ten steps for four tokens
  const double decode_one = ten.e2e_s.mean() - ten.ttft_s.mean();
  const double decode_single = one.e2e_s.mean() - one.ttft_s.mean();  // 14 steps
  CHECK(decode_one == doctest::Approx(decode_single * 20.0 / 14.0).epsilon(0.05));
  CHECK(ten.tpot_s.mean() == doctest::Approx(decode_one / 14.0));
}

TEST_CASE("multi-step: at low load TTFT grows by about half a window") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 200;
  doc["workload"]["arrival"]["rate_per_s"] = 4.0;
  doc["workload"]["output_tokens"]["value_tokens"] = 200;  // a few requests always decoding
  const RunMetrics one = metrics_of(doc);
  doc["engine"]["num_scheduler_steps"] = 10;
  const RunMetrics ten = metrics_of(doc);
  const double step_s = one.tpot_s.mean();
  const double added_steps = (ten.ttft_s.mean() - one.ttft_s.mean()) / step_s;
  MESSAGE("TTFT ", one.ttft_s.mean() * 1e3, " -> ", ten.ttft_s.mean() * 1e3, " ms: ", added_steps, " decode steps added");
  CHECK(added_steps > 3.0);  // half a window is 5 steps, less the arrivals that find the replica idle
  CHECK(added_steps < 7.0);
}

TEST_CASE("multi-step: bad values and unsupported policies exit 2 naming engine.num_scheduler_steps") {
  auto doc = base_scenario();
  doc["engine"]["num_scheduler_steps"] = 0;
  CHECK(contains(parse_error(doc), "test.json: engine.num_scheduler_steps: must be >= 1, got 0"));
  doc["engine"]["num_scheduler_steps"] = "ten";
  CHECK(contains(parse_error(doc), "engine.num_scheduler_steps: must be an integer"));
  doc["engine"]["num_scheduler_steps"] = 2.5;
  CHECK(contains(parse_error(doc), "engine.num_scheduler_steps: must be an integer"));
  for (const char* impl : {"chunked-prefill", "inflight", "token-level", "static", "dynamic"}) {
    auto d = base_scenario();
    d["engine"]["num_scheduler_steps"] = 8;
    d["engine"]["scheduler"] = {{"impl", impl}};
    CHECK_MESSAGE(contains(parse_error(d), "engine.num_scheduler_steps: multi-step scheduling (> 1) needs engine.scheduler.impl continuous"),
                  impl);
  }
  auto d = base_scenario();
  d["engine"]["num_scheduler_steps"] = 8;
  d["engine"]["scheduler"] = {{"impl", "chunked-prefill"}};
  const auto r = run_cli("run " + write_temp("multi_step_chunked.json", d.dump()) + " --out /tmp/servesim_test_out --quiet --no-html");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "engine.num_scheduler_steps"));
}
