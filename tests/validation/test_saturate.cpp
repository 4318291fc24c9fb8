// saturate against queues with known answers. One sequence at a time and one output token make
// the replica a single deterministic server (service time S = one prefill iteration):
//  - D/D/1 (constant arrivals): no queue below rate 1/S, a growing one above, so with an E2E
//    target of 1.5 S the stable rate is 1/S.
//  - M/D/1 (Poisson arrivals): the waiting time's distribution is Erlang's
//    P(Wq <= t) = (1 - rho) sum_{k=0}^{floor(t/S)} (lambda (k S - t))^k / k! e^{-lambda (k S - t)};
//    at t = S it is (1 - rho) e^rho, so a median-E2E target of 2 S is met up to rho* with
//    (1 - rho*) e^rho* = 1/2, rho* = 0.7680.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "sim/analysis/saturation_rate.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/serve/saturation_batch.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
nlohmann::json server(const char* arrival, int n) {
  auto doc = test::base_scenario();
  doc["engine"]["max_num_seqs"] = 1;
  doc["workload"]["num_requests"] = n;
  doc["workload"]["arrival"] = {{"impl", arrival}, {"rate_per_s", 1.0}};
  doc["workload"]["prompt_tokens"] = {{"impl", "fixed"}, {"value_tokens", 512}};
  doc["workload"]["output_tokens"] = {{"impl", "fixed"}, {"value_tokens", 1}};
  return doc;
}
double service_time_s(nlohmann::json doc) {
  doc["workload"]["num_requests"] = 1;
  return simulate(test::scenario_from(doc)).metrics.e2e_s.max();
}
RateScenarioFactory at_rate(const nlohmann::json& doc, const SloConfig& slo) {
  return [doc, slo](double rate, std::uint64_t seed) {
    nlohmann::json d = doc;
    d["workload"]["arrival"]["rate_per_s"] = rate;
    d["seed"] = seed;
    Scenario s = test::scenario_from(d);
    for (auto& c : s.workload.classes) c.slo = slo;
    return s;
  };
}
}  // namespace

TEST_CASE("saturate finds 1/S for a D/D/1 server") {
  const auto doc = server("constant", 300);
  const double S = service_time_s(doc);
  SloConfig slo;
  slo.e2e_s = 1.5 * S;
  slo.percentile = 0.99;
  SaturateOptions o;
  o.replications = 1;
  o.rel_tolerance = 0.002;
  const SaturateResult r = saturate(at_rate(doc, slo), 7, o);
  const double expect = 1.0 / S;
  std::printf("D/D/1: S = %.6f s, stable_qps %.4f vs 1/S = %.4f (%.2f%%), %zu probes\n", S, r.stable_qps, expect,
              100.0 * (r.stable_qps / expect - 1.0), r.probes.size());
  // Above 1/S the backlog after n arrivals is n (S - 1/rate); the 99th-percentile request stays
  // within 0.5 S of service only while rate < 1/(S (1 - 0.5/(0.99 n))), 0.17% above 1/S at n = 300.
  CHECK(r.stable_qps <= expect * 1.002);
  CHECK(r.stable_qps >= expect * 0.99);
  // The engine holds one sequence; the saturation batch size is the cost model's knee, the same
  // definition as the run report's batch.saturation_size, at the probes' mean context.
  CHECK(r.max_batch_size == 1);
  CHECK(r.saturation_batch_size == decode_saturation(at_rate(doc, slo)(r.stable_qps, 7), r.mean_context_tokens).batch_size);
  CHECK(r.saturation_batch_size > 1);
}

TEST_CASE("saturate finds rho* = 0.768 for an M/D/1 server with a median E2E target of 2 S") {
  const auto doc = server("poisson", 4000);
  const double S = service_time_s(doc);
  double lo = 0.5, hi = 0.99;  // solve (1 - rho) e^rho = 0.5
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    ((1 - mid) * std::exp(mid) > 0.5 ? lo : hi) = mid;
  }
  const double rho_star = lo;
  SloConfig slo;
  slo.e2e_s = 2.0 * S;
  slo.percentile = 0.5;
  SaturateOptions o;
  o.replications = 5;
  o.rel_tolerance = 0.005;
  const SaturateResult r = saturate(at_rate(doc, slo), 11, o);
  const double rho = r.stable_qps * S;
  std::printf("M/D/1: S = %.6f s, stable rho %.4f vs analytic %.4f (%.2f%%), %zu probes\n", S, rho, rho_star,
              100.0 * (rho / rho_star - 1.0), r.probes.size());
  // 4000 requests x 5 seeds from an empty queue: a few percent of sampling and warm-up error.
  CHECK(std::abs(rho / rho_star - 1.0) < 0.04);
}
