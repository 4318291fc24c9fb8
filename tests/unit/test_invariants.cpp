// Run invariants and extreme scenarios: every arrived request ends completed, rejected or timed
// out, no KV block is left allocated, tokens generated == tokens asked, the request table holds
// only requests in flight; zero and one request, 1e6 req/s, a 128K context, a GPU too small,
// client timeouts and sessions on several replicas.
#include <doctest/doctest.h>

#include <cstdio>

#include "../support.hpp"
#include "sim/core/error.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

// The accounting every run must satisfy (simulate() also checks it and throws; this states it).
void check_accounting(const SimResult& r, std::int64_t num_requests) {
  const RunMetrics& m = r.metrics;
  CHECK(m.arrived == num_requests);
  CHECK(m.completed + m.rejected + m.timed_out == m.arrived);
  CHECK(r.accounting.requests_in_flight_at_end == 0);
  CHECK(r.accounting.kv_blocks_in_use_at_end == 0);
  CHECK(r.accounting.output_tokens_generated == r.accounting.output_tokens_asked);
  CHECK(m.output_tokens == r.accounting.output_tokens_asked);
}

nlohmann::json workload(std::int64_t n, const char* arrival, int prompt, int output) {
  return {{"num_requests", n},
          {"arrival", nlohmann::json::parse(arrival)},
          {"prompt_tokens", {{"impl", "fixed"}, {"value_tokens", prompt}}},
          {"output_tokens", {{"impl", "fixed"}, {"value_tokens", output}}}};
}

}  // namespace

TEST_CASE("invariants hold after every event on a contended run (check_every_iteration)") {
  auto doc = base_scenario();
  doc["engine"]["gpu_memory_utilization"] = 0.3;
  doc["engine"]["max_num_seqs"] = 128;
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 150, "arrival": {"impl": "poisson", "rate_per_s": 50},
      "prompt_tokens": {"impl": "uniform", "min_tokens": 200, "max_tokens": 1800},
      "output_tokens": {"impl": "uniform", "min_tokens": 1, "max_tokens": 700}})");
  const Scenario s = scenario_from(doc);
  SimHooks opts;
  opts.check_every_iteration = true;
  const SimResult r = simulate(s, opts);
  CHECK(r.metrics.preemptions > 0);
  check_accounting(r, 150);
}

TEST_CASE("invariants hold on a contended multi-step run (num_scheduler_steps 8, recompute and swap)") {
  for (const char* mode : {"recompute", "swap"}) {
    auto doc = base_scenario();
    doc["engine"]["gpu_memory_utilization"] = 0.3;
    doc["engine"]["max_num_seqs"] = 128;
    doc["engine"]["num_scheduler_steps"] = 8;
    doc["engine"]["preemption_mode"] = mode;
    doc["workload"] = nlohmann::json::parse(R"({"num_requests": 150, "arrival": {"impl": "poisson", "rate_per_s": 50},
        "prompt_tokens": {"impl": "uniform", "min_tokens": 200, "max_tokens": 1800},
        "output_tokens": {"impl": "uniform", "min_tokens": 1, "max_tokens": 700}})");
    SimHooks opts;
    opts.check_every_iteration = true;
    const SimResult r = simulate(scenario_from(doc), opts);
    CHECK_MESSAGE(r.metrics.preemptions > 0, mode);
    check_accounting(r, 150);
  }
}

TEST_CASE("the request table holds requests in flight, not every request") {
  auto doc = base_scenario();
  doc["workload"] = workload(3000, R"({"impl": "poisson", "rate_per_s": 5})", 64, 16);
  const SimResult r = simulate(scenario_from(doc));
  check_accounting(r, 3000);
  std::printf("request table high water: %lld rows for 3000 requests\n", static_cast<long long>(r.accounting.request_table_high_water));
  CHECK(r.accounting.request_table_high_water < 100);
}

TEST_CASE("extreme: zero requests") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 0;
  const SimResult r = simulate(scenario_from(doc));
  check_accounting(r, 0);
  CHECK(r.metrics.end_ns == 0);
  CHECK(r.events == 0);
}

TEST_CASE("extreme: one request, one output token") {
  auto doc = base_scenario();
  doc["workload"] = workload(1, R"({"impl": "all_at_once"})", 1, 1);
  const SimResult r = simulate(scenario_from(doc));
  check_accounting(r, 1);
  CHECK(r.metrics.completed == 1);
  CHECK(r.metrics.itl_s.count() == 0);
  CHECK(r.metrics.tpot_s.count() == 0);
}

TEST_CASE("extreme: 1e6 requests per second (arrivals far faster than service)") {
  auto doc = base_scenario();
  doc["workload"] = workload(2000, R"({"impl": "poisson", "rate_per_s": 1e6})", 32, 8);
  const SimResult r = simulate(scenario_from(doc));
  check_accounting(r, 2000);
  CHECK(r.metrics.completed == 2000);
}

TEST_CASE("extreme: a 128K context from a Hugging Face config") {
  const auto cfg = nlohmann::json::parse(R"({"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,
    "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256,
    "max_position_embeddings":131072,"rope_scaling":{"factor":8.0}})");
  const auto path = write_temp("llama31_config.json", cfg.dump());
  auto doc = base_scenario();
  doc["model"] = path;
  doc["hardware"] = "h100-sxm";
  doc["dtype"] = "bf16";
  doc["workload"] = workload(3, R"({"impl": "all_at_once"})", 120000, 64);
  const Scenario s = scenario_from(doc);
  CHECK(s.engine.max_model_len == 131072);
  const SimResult r = simulate(s);
  check_accounting(r, 3);
  std::printf("128K context: %lld completed, %lld rejected, TTFT mean %.3f s\n", static_cast<long long>(r.metrics.completed),
              static_cast<long long>(r.metrics.rejected), r.metrics.ttft_s.mean());
  CHECK(r.metrics.completed + r.metrics.rejected == 3);
  CHECK(r.metrics.completed >= 1);  // one 120K-token sequence fits in an H100's KV cache
}

TEST_CASE("extreme: a GPU with too little memory is bad input, not a crash") {
  auto doc = base_scenario();
  doc["model"] = "llama-3-70b";
  doc["hardware"] = "l40s";
  const Scenario s = scenario_from(doc);
  CHECK_THROWS_WITH_AS(simulate(s), doctest::Contains("does not fit on l40s"), InputError);
}

TEST_CASE("extreme: 20,000 requests at t = 0 (the 1M variant is in bench/)") {
  auto doc = base_scenario();
  doc["workload"] = workload(20000, R"({"impl": "all_at_once"})", 64, 8);
  const SimResult r = simulate(scenario_from(doc));
  check_accounting(r, 20000);
  CHECK(r.metrics.completed == 20000);
}

TEST_CASE("invariants hold with client timeouts, priorities, sessions and prefix caching on two replicas") {
  auto doc = base_scenario();
  doc["engine"]["gpu_memory_utilization"] = 0.3;
  doc["engine"]["enable_prefix_caching"] = true;
  doc["engine"]["scheduler"] = {{"impl", "continuous"}, {"scheduling_policy", "priority"}, {"max_queue_size", 60}};
  doc["parallel"] = {{"data_parallel_size", 2}};
  doc["router"] = {{"impl", "prefix_affinity"}};
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 400, "arrival": {"impl": "poisson", "rate_per_s": 60},
      "request_timeout_s": 3.0,
      "prompt_tokens": {"impl": "uniform", "min_tokens": 100, "max_tokens": 1500},
      "output_tokens": {"impl": "uniform", "min_tokens": 1, "max_tokens": 400},
      "shared_prefix": {"num_prefixes": 4, "prefix_tokens": 256},
      "sessions": {"turns": 3, "think_time_s": 0.5},
      "priority_class_weights": [1, 2]})");
  SimHooks opts;
  opts.check_every_iteration = true;
  const SimResult r = simulate(scenario_from(doc), opts);
  std::printf("timeouts run: %lld completed, %lld rejected, %lld timed out, %lld preemptions\n",
              static_cast<long long>(r.metrics.completed), static_cast<long long>(r.metrics.rejected),
              static_cast<long long>(r.metrics.timed_out), static_cast<long long>(r.metrics.preemptions));
  CHECK(r.metrics.timed_out > 0);  // the case this test is for
  check_accounting(r, r.metrics.arrived);
}
