// Closed-form validation of the KV and queueing metrics: internal fragmentation for fixed
// lengths, contiguous pre-allocation waste, prefix-cache hit ratios of workloads with a known
// shared prefix and of multi-turn sessions, and Little's law for every policy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../support.hpp"
#include "sim/io/report_io.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

nlohmann::json run(const nlohmann::json& doc) {
  const Scenario s = scenario_from(doc);
  return make_report(s, simulate(s));
}

nlohmann::json fixed_workload(int n, double rate, int prompt, int output) {
  return {{"num_requests", n},
          {"arrival", {{"impl", "poisson"}, {"rate_per_s", rate}}},
          {"prompt_tokens", {{"impl", "fixed"}, {"value_tokens", prompt}}},
          {"output_tokens", {{"impl", "fixed"}, {"value_tokens", output}}}};
}

std::int64_t round_up(std::int64_t n, std::int64_t b) { return (n + b - 1) / b * b; }

}  // namespace

TEST_CASE("internal fragmentation with fixed lengths equals the block-size closed form") {
  // Prefill-only requests (one output token): every sequence holds exactly p tokens in
  // ceil(p/B) blocks, so at every instant the unused fraction is (ceil(p/B)B - p) / (ceil(p/B)B).
  for (const int block : {8, 16, 32}) {
    auto doc = base_scenario();
    doc["engine"]["block_size"] = block;
    doc["workload"] = fixed_workload(200, 20.0, 100, 1);
    const auto r = run(doc);
    const double analytic = static_cast<double>(round_up(100, block) - 100) / static_cast<double>(round_up(100, block));
    const double sim = r["kv_cache"]["internal_fragmentation_frac"];
    const double peak = r["kv_cache"]["internal_fragmentation_peak_frac"];
    std::printf("closed form, fragmentation, prefill only, B=%d: sim %.6f (peak %.6f) vs analytic %.6f\n", block, sim, peak,
                analytic);
    CHECK(std::fabs(sim - analytic) < 1e-9);
    CHECK(std::fabs(peak - analytic) < 1e-9);
  }
  // One sequence decoding alone: it holds n = p .. p+o-1 tokens, one iteration each. With
  // equally long iterations the time-weighted fraction is sum_n (ceil(n/B)B - n) / sum_n ceil(n/B)B.
  // A 5 s host overhead per step makes every iteration equally long to within the GPU time's
  // variation (~20 ms of 5 s: prefill is longer, attention grows with n), hence the 0.1% bound.
  const int p = 100, o = 1500, block = 16;
  auto doc = base_scenario();
  doc["engine"]["host_overhead_per_step_s"] = 5.0;
  doc["workload"] = fixed_workload(1, 1.0, p, o);
  const auto r = run(doc);
  double unused = 0.0, held = 0.0;
  for (int n = p; n <= p + o - 1; ++n) {
    unused += static_cast<double>(round_up(n, block) - n);
    held += static_cast<double>(round_up(n, block));
  }
  const double analytic = unused / held;
  const double sim = r["kv_cache"]["internal_fragmentation_frac"];
  const double err = std::fabs(sim - analytic) / analytic;
  double worst = 0.0;  // the peak: the worst fill among the n held
  for (int n = p; n <= p + o - 1; ++n) {
    worst = std::max(worst, static_cast<double>(round_up(n, block) - n) / static_cast<double>(round_up(n, block)));
  }
  const double peak = r["kv_cache"]["internal_fragmentation_peak_frac"];
  std::printf("closed form, fragmentation, one decoding sequence (p=%d, o=%d, B=%d): sim %.6f vs analytic %.6f (%.3f%%); peak %.6f vs %.6f\n",
              p, o, block, sim, analytic, 100 * err, peak, worst);
  CHECK(err < 0.001);
  CHECK(std::fabs(peak - worst) < 1e-12);
}

TEST_CASE("contiguous pre-allocation waste equals (max_model_len - used) / max_model_len") {
  const int p = 300, o = 100, max_len = 2048;
  const int used = p + o - 1;  // the last sampled token's KV is never written
  for (const char* reservation : {"contiguous", "paged"}) {
    auto doc = base_scenario();
    doc["engine"]["max_model_len"] = max_len;
    doc["engine"]["kv_reservation"] = reservation;
    doc["workload"] = fixed_workload(100, 5.0, p, o);
    const auto r = run(doc);
    const bool contiguous = std::string(reservation) == "contiguous";
    const double analytic = contiguous ? static_cast<double>(max_len - used) / max_len
                                       : static_cast<double>(round_up(used, 16) - used) / static_cast<double>(round_up(used, 16));
    const double sim = r["kv_cache"]["reservation_waste_frac"];
    std::printf("closed form, reservation waste, %s: sim %.6f vs analytic %.6f\n", reservation, sim, analytic);
    CHECK(r["requests"]["completed"] == 100);
    CHECK(std::fabs(sim - analytic) < 1e-12);
  }
}

TEST_CASE("prefix hit ratio of a workload with known shared prefixes equals its closed form") {
  // K prefixes of P tokens, unique parts of U tokens: the first request of each prefix misses,
  // every later one hits floor(P/B) full blocks. Ratio = (N - K) * floor(P/B) * B / (N * (P + U)).
  const int n = 300, k = 4, prefix = 500, unique = 100, block = 16;
  auto doc = base_scenario();
  doc["engine"]["enable_prefix_caching"] = true;
  doc["workload"] = fixed_workload(n, 10.0, unique, 20);
  doc["workload"]["shared_prefix"] = {{"num_prefixes", k}, {"prefix_tokens", prefix}};
  const auto r = run(doc);
  const double analytic = static_cast<double>(n - k) * (prefix / block * block) / (static_cast<double>(n) * (prefix + unique));
  const double sim = r["kv_cache"]["prefix_hit_ratio"];
  std::printf("closed form, prefix hit ratio, %d prefixes x %d tokens: sim %.6f vs analytic %.6f (evicted blocks %lld)\n", k,
              prefix, sim, analytic, r["kv_cache"]["prefix_evicted_blocks"].get<long long>());
  CHECK(r["requests"]["preemptions"] == 0);
  CHECK(std::fabs(sim - analytic) < 1e-12);

  // The same workload without caching computes every prompt token.
  doc["engine"]["enable_prefix_caching"] = false;
  CHECK(run(doc)["kv_cache"]["prefix_hit_ratio"] == 0.0);
}

TEST_CASE("prefix hit ratio of multi-turn sessions equals its closed form") {
  // Turn j's prompt is the conversation so far: P_0 = U, P_j = P_{j-1} + O + U. The previous turn
  // wrote P_{j-1} + O - 1 tokens of KV (the last answer token is never fed back), of which the
  // full blocks are cached: turn j hits floor((P_{j-1} + O - 1) / B) * B tokens.
  const int turns = 4, unique = 100, output = 50, block = 16, sessions = 40;
  auto doc = base_scenario();
  doc["engine"]["enable_prefix_caching"] = true;
  doc["workload"] = fixed_workload(sessions * turns, 2.0, unique, output);
  doc["workload"]["sessions"] = {{"turns", turns}, {"think_time_s", 1.0}};
  const auto r = run(doc);
  double hits = 0.0, prompts = 0.0;
  int prompt = unique;
  for (int j = 0; j < turns; ++j) {
    if (j > 0) {
      hits += static_cast<double>((prompt + output - 1) / block * block);
      prompt += output + unique;
    }
    prompts += prompt;
  }
  const double analytic = hits / prompts;
  const double sim = r["kv_cache"]["prefix_hit_ratio"];
  std::printf("closed form, prefix hit ratio, %d sessions x %d turns: sim %.6f vs analytic %.6f\n", sessions, turns, sim, analytic);
  CHECK(r["requests"]["completed"] == sessions * turns);
  CHECK(std::fabs(sim - analytic) < 1e-12);
}

TEST_CASE("Little's law: time-averaged queue length = arrival rate x mean queueing delay, for every policy") {
  for (const char* policy : {"static", "dynamic", "continuous", "chunked-prefill", "inflight", "token-level"}) {
    auto doc = base_scenario();
    doc["engine"]["scheduler"] = {{"impl", policy}};
    doc["workload"]["num_requests"] = 2000;
    doc["workload"]["arrival"]["rate_per_s"] = 8.0;
    doc["workload"]["prompt_tokens"] = {{"impl", "uniform"}, {"min_tokens", 50}, {"max_tokens", 1500}};
    doc["workload"]["output_tokens"] = {{"impl", "uniform"}, {"min_tokens", 10}, {"max_tokens", 300}};
    const auto r = run(doc);
    const double duration = r["sim"]["simulated_s"];
    const double l = r["requests"]["mean_waiting"];
    const double w = r["latency"]["queue_s"]["mean"];
    const double n = r["requests"]["arrived"];
    // Over [0, T] with every request started by T, the area under the queue-length curve is the
    // sum of the waits exactly: L = (N / T) W. Against the nominal rate the drain time at the end
    // (no arrivals) makes N / T smaller than the rate, and much smaller for a policy that cannot
    // keep up (static batching here): that comparison is printed, not bounded.
    const double lambda = n / duration;
    const double err = std::fabs(l - lambda * w) / (lambda * w);
    const double err_nominal = std::fabs(l - 8.0 * w) / (8.0 * w);
    std::printf("Little's law, %-15s L %.4f vs lambda*W %.4f (lambda %.3f/s, W %.4f s): error %.2e; with the nominal rate %.2f%%\n",
                policy, l, lambda * w, lambda, w, err, 100 * err_nominal);
    CHECK(r["requests"]["completed"] == 2000);
    CHECK(w > 0.0);
    CHECK(err < 1e-9);
  }
}
