// The fast path (memoised kernel times, cached log-table and histogram lookups) against the exact
// reference path (every kernel timed by estimate()): the reports must be identical, on scenarios
// that exercise idle gaps, simultaneous arrivals, saturation and preemption.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "../support.hpp"
#include "sim/io/report_io.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

nlohmann::json report_without_events(const Scenario& s, const SimResult& r) {
  auto j = make_report(s, r);
  j["sim"].erase("events");
  return j;
}

void compare_paths(const nlohmann::json& doc, const char* label) {
  const Scenario s = scenario_from(doc);
  SimHooks fast, exact;
  exact.reference_path = true;
  const SimResult a = simulate(s, fast);
  const SimResult b = simulate(s, exact);
  std::printf("fast vs exact path, %s: %llu vs %llu events, %lld completed, %lld preemptions\n", label,
              static_cast<unsigned long long>(a.events), static_cast<unsigned long long>(b.events),
              static_cast<long long>(a.metrics.completed), static_cast<long long>(a.metrics.preemptions));
  CHECK(report_without_events(s, a).dump() == report_without_events(s, b).dump());
  CHECK(a.events == b.events);
}

}  // namespace

TEST_CASE("fast and exact paths agree: light Poisson load (idle gaps)") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 60;
  doc["workload"]["arrival"]["rate_per_s"] = 0.5;
  compare_paths(doc, "light load");
}

TEST_CASE("fast and exact paths agree: saturated, lognormal lengths") {
  auto doc = base_scenario();
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 300, "arrival": {"impl": "poisson", "rate_per_s": 40},
      "prompt_tokens": {"impl": "lognormal", "mean_tokens": 400, "sigma": 0.8, "min_tokens": 8, "max_tokens": 2048},
      "output_tokens": {"impl": "lognormal", "mean_tokens": 120, "sigma": 0.7, "min_tokens": 2, "max_tokens": 1024}})");
  compare_paths(doc, "saturated");
}

TEST_CASE("fast and exact paths agree: all at once with KV pressure and preemption") {
  auto doc = base_scenario();
  doc["engine"]["gpu_memory_utilization"] = 0.3;  // a small KV cache: preemption by recompute
  doc["engine"]["max_num_seqs"] = 256;
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 200, "arrival": {"impl": "all_at_once"},
      "prompt_tokens": {"impl": "uniform", "min_tokens": 500, "max_tokens": 1500},
      "output_tokens": {"impl": "uniform", "min_tokens": 200, "max_tokens": 900}})");
  const Scenario s = scenario_from(doc);
  REQUIRE(simulate(s).metrics.preemptions > 0);  // the case this test is for
  compare_paths(doc, "preemption");
}

// The decode window (a sequence's Request written only when it enters the window, leaves or is
// planned by item) must settle every sequence that leaves mid-window: preempted to host memory,
// timed out while running, or read by the token-level admission test.
TEST_CASE("fast and exact paths agree: swap preemption and timeouts inside decode windows") {
  auto doc = base_scenario();
  doc["engine"]["gpu_memory_utilization"] = 0.3;
  doc["engine"]["max_num_seqs"] = 256;
  doc["engine"]["preemption_mode"] = "swap";
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 300, "request_timeout_s": 60,
      "arrival": {"impl": "poisson", "rate_per_s": 30},
      "prompt_tokens": {"impl": "uniform", "min_tokens": 300, "max_tokens": 1200},
      "output_tokens": {"impl": "uniform", "min_tokens": 100, "max_tokens": 900}})");
  const Scenario s = scenario_from(doc);
  const SimResult r = simulate(s);
  REQUIRE(r.metrics.swap_outs > 0);  // the cases this test is for
  REQUIRE(r.metrics.timed_out > 0);
  compare_paths(doc, "swap and timeouts");
}

TEST_CASE("fast and exact paths agree: token-level admission") {
  auto doc = base_scenario();
  doc["engine"]["scheduler"] = nlohmann::json::parse(R"({"impl": "token-level"})");
  doc["engine"]["gpu_memory_utilization"] = 0.3;  // admission limited by the KV capacity it forecasts
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 200, "arrival": {"impl": "poisson", "rate_per_s": 60},
      "prompt_tokens": {"impl": "uniform", "min_tokens": 100, "max_tokens": 800},
      "output_tokens": {"impl": "uniform", "min_tokens": 20, "max_tokens": 400}})");
  compare_paths(doc, "token-level");
}

// Chunked prefill plans every sequence by item (decodes next to prompt chunks), so its steps
// take the memos of mixed shapes, and no sequence enters the decode window.
TEST_CASE("fast and exact paths agree: chunked prefill (decodes planned by item)") {
  auto doc = base_scenario();
  doc["engine"]["scheduler"] = nlohmann::json::parse(R"({"impl": "chunked-prefill"})");
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 300, "arrival": {"impl": "poisson", "rate_per_s": 30},
      "prompt_tokens": {"impl": "lognormal", "mean_tokens": 600, "sigma": 0.8, "min_tokens": 16, "max_tokens": 4096},
      "output_tokens": {"impl": "lognormal", "mean_tokens": 150, "sigma": 0.7, "min_tokens": 2, "max_tokens": 1024}})");
  compare_paths(doc, "chunked prefill");
}

// Static batches read the running sequences' progress (padding, prefill planning), so their
// window keeps computed_tokens written per step and only the KV tokens lazy.
TEST_CASE("fast and exact paths agree: static batches (lazy KV tokens only)") {
  auto doc = base_scenario();
  doc["engine"]["scheduler"] = nlohmann::json::parse(R"({"impl": "static"})");
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 200, "arrival": {"impl": "poisson", "rate_per_s": 20},
      "prompt_tokens": {"impl": "uniform", "min_tokens": 50, "max_tokens": 900},
      "output_tokens": {"impl": "uniform", "min_tokens": 5, "max_tokens": 300}})");
  compare_paths(doc, "static");
}

TEST_CASE("the kernel-time cache returns exactly what estimate() computes") {
  const Scenario s = scenario_from(base_scenario());
  KernelTimeCache cache(s.hw, s.precision.weights);
  std::vector<Op> ops;
  std::uint64_t round_hits[2] = {0, 0}, round_lookups[2] = {0, 0};
  for (int round = 0; round < 2; ++round) {
    const std::uint64_t hits_before = cache.hits();
    for (std::int64_t batch : {1, 7, 64, 256}) {
      BatchShape shape;
      for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(100 + 13 * i);
      build_iteration_ops(s.model, shape, s.precision, ops, s.engine.profile.kernels);
      for (const Op& op : ops) {
        const KernelTime a = cache.get(op), b = estimate(op, s.hw, s.precision.weights);
        CHECK(a.time_s == b.time_s);
        CHECK(a.roofline_s == b.roofline_s);
        CHECK(a.bound == b.bound);
        ++round_lookups[round];
      }
    }
    round_hits[round] = cache.hits() - hits_before;
  }
  // The second round finds most of the first round's kernels. The table starts at 64 slots and
  // doubles as it is written (direct-mapped: a key sharing its slot with another evicts it, about
  // one in eight at the quarter load where it doubles), so not all.
  std::printf("kernel-time cache: second round %llu hits of %llu lookups\n", static_cast<unsigned long long>(round_hits[1]),
              static_cast<unsigned long long>(round_lookups[1]));
  CHECK(static_cast<double>(round_hits[1]) >= 0.7 * static_cast<double>(round_lookups[1]));
}

// Prefix caching (on by default in vLLM V1). The fast path registers the blocks nobody else can
// look up while their sequence runs only when it leaves (ReplicaState::shared_blocks), keeps
// blocks that only departed requests could ask for out of the hash index, and decodes in the
// lazy window with eviction; the exact path registers every block as it fills. Each case
// requires what it is for (evictions, hits, preemptions, swaps, timeouts) before comparing.
namespace {

struct CachingCase {
  std::string label;
  const char* scheduler;
  const char* preemption_mode;
  const char* workload;
  bool needs_preemption;
};

void compare_with_caching(const CachingCase& c) {
  auto doc = base_scenario();
  doc["engine"]["enable_prefix_caching"] = true;
  doc["engine"]["gpu_memory_utilization"] = 0.3;  // a small KV cache: evictions and preemption
  doc["engine"]["max_num_seqs"] = 256;
  doc["engine"]["scheduler"] = {{"impl", c.scheduler}};
  doc["engine"]["preemption_mode"] = c.preemption_mode;
  doc["workload"] = nlohmann::json::parse(c.workload);
  const SimResult r = simulate(scenario_from(doc));
  INFO(c.label);
  REQUIRE(r.metrics.prefix_evictions > 0);
  REQUIRE(r.metrics.prefix_hit_tokens > 0);  // with no shared prefix: recomputed sequences find their own blocks
  if (c.needs_preemption) REQUIRE(r.metrics.preemptions > 0);
  if (std::string(c.preemption_mode) == "swap") REQUIRE(r.metrics.swap_outs > 0);
  if (doc["workload"].contains("request_timeout_s")) REQUIRE(r.metrics.timed_out > 0);
  compare_paths(doc, c.label.c_str());
}

}  // namespace

TEST_CASE("fast and exact paths agree with prefix caching on") {
  const CachingCase cases[] = {
      {"prefix caching, recompute", "continuous", "recompute",
       R"({"num_requests": 300, "arrival": {"impl": "poisson", "rate_per_s": 40},
           "prompt_tokens": {"impl": "lognormal", "mean_tokens": 600, "sigma": 0.8, "min_tokens": 16, "max_tokens": 2048},
           "output_tokens": {"impl": "lognormal", "mean_tokens": 300, "sigma": 0.7, "min_tokens": 2, "max_tokens": 1024}})",
       true},
      {"prefix caching, swap and timeouts", "continuous", "swap",
       R"({"num_requests": 300, "request_timeout_s": 60, "arrival": {"impl": "poisson", "rate_per_s": 30},
           "prompt_tokens": {"impl": "uniform", "min_tokens": 300, "max_tokens": 1200},
           "output_tokens": {"impl": "uniform", "min_tokens": 100, "max_tokens": 900},
           "shared_prefix": {"num_prefixes": 2, "prefix_tokens": 100}})",
       true},
      // Later turns look up their earlier turns' prompts and answers (blocks filled while decoding).
      {"prefix caching, sessions", "continuous", "recompute",
       R"({"num_requests": 400, "arrival": {"impl": "poisson", "rate_per_s": 20},
           "prompt_tokens": {"impl": "uniform", "min_tokens": 50, "max_tokens": 400},
           "output_tokens": {"impl": "uniform", "min_tokens": 20, "max_tokens": 300},
           "shared_prefix": {"num_prefixes": 3, "prefix_tokens": 200}, "sessions": {"turns": 4, "think_time_s": 0.2}})",
       true},
      // Copies of one prompt run side by side and fill blocks with the same hashes: the first to
      // fill one registers it, so these register as they fill in the fast path too. (Registering
      // their output blocks when they leave changes this report: 2456 events instead of 2454.)
      {"prefix caching, prompt pool", "continuous", "recompute",
       R"({"num_requests": 400, "arrival": {"impl": "poisson", "rate_per_s": 40},
           "prompt_tokens": {"impl": "uniform", "min_tokens": 100, "max_tokens": 900},
           "output_tokens": {"impl": "uniform", "min_tokens": 50, "max_tokens": 600},
           "shared_prefix": {"num_prefixes": 2, "prefix_tokens": 300, "prompts_per_prefix": 5}})",
       true},
  };
  for (const CachingCase& c : cases) compare_with_caching(c);
  const char* policy_workload = R"({"num_requests": 250, "arrival": {"impl": "poisson", "rate_per_s": 40},
      "prompt_tokens": {"impl": "uniform", "min_tokens": 100, "max_tokens": 1500},
      "output_tokens": {"impl": "uniform", "min_tokens": 20, "max_tokens": 600},
      "shared_prefix": {"num_prefixes": 2, "prefix_tokens": 160}})";
  for (const char* impl : {"chunked-prefill", "token-level", "static"}) {
    compare_with_caching({std::string("prefix caching, ") + impl, impl, "recompute", policy_workload,
                          std::string(impl) == "chunked-prefill"});
  }
}
