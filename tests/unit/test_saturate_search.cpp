// The search's economies (SaturateOptions::decide_early, decide_far_ratio, floor_first_below_per_s,
// start_near_per_s, stop_settled_misses) give the
// same answer as the plain search with fewer simulations: the same stable rate, bracket, figures at
// the stable rate and probed rates; and the same one-line reason when no rate meets the SLO.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "sim/analysis/saturation_rate.hpp"
#include "sim/metrics/slo_settled.hpp"
#include "sim/serve/simulation.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
// A small chat-like workload on the test scenario's replica, with the given SLO.
struct Counted {
  nlohmann::json doc;
  SloConfig slo;
  int* simulations;
  Scenario operator()(double rate, std::uint64_t seed) const {
    nlohmann::json d = doc;
    d["workload"]["arrival"]["rate_per_s"] = rate;
    d["seed"] = seed;
    Scenario s = test::scenario_from(d);
    for (auto& c : s.workload.classes) c.slo = slo;
    ++*simulations;  // each built scenario is one replication's run
    return s;
  }
};

nlohmann::json workload(int n) {
  auto doc = test::base_scenario();
  doc["workload"]["num_requests"] = n;
  doc["workload"]["arrival"] = {{"impl", "poisson"}, {"rate_per_s", 1.0}};
  doc["workload"]["prompt_tokens"] = {{"impl", "lognormal"}, {"mean_tokens", 300}, {"sigma", 0.8}, {"min_tokens", 16}, {"max_tokens", 1500}};
  doc["workload"]["output_tokens"] = {{"impl", "lognormal"}, {"mean_tokens", 60}, {"sigma", 0.7}, {"min_tokens", 4}, {"max_tokens", 400}};
  return doc;
}

// TTFT 500 ms and TPOT 30 ms at p90: met at low rates, missed past a few tens of req/s.
SloConfig chat_slo() {
  SloConfig slo;
  slo.ttft_s = 0.5;
  slo.tpot_s = 0.03;
  slo.percentile = 0.9;
  return slo;
}

// Three seeds a probe, to 5%, from 1 req/s.
SaturateOptions three_seeds_from_1() {
  SaturateOptions o;
  o.replications = 3;
  o.rel_tolerance = 0.05;
  o.start_rate_per_s = 1.0;
  return o;
}

// The rates a search probed off the grid 2^k that its bracketing walks from 1 req/s: its bisection's.
std::vector<double> bisection_rates(const SaturateResult& r) {
  std::vector<double> out;
  for (const SaturateProbe& p : r.probes) {
    int exponent = 0;
    if (std::frexp(p.rate_per_s, &exponent) != 0.5) out.push_back(p.rate_per_s);
  }
  return out;
}

SaturateResult search(const nlohmann::json& doc, const SloConfig& slo, SaturateOptions o, int& simulations) {
  simulations = 0;
  o.parallel = false;
  const Counted make{doc, slo, &simulations};
  // saturate builds one more scenario for the saturation batch; counted like the runs, on both sides.
  return saturate(make, 11, o);
}
// The search's answer and the figures at its stable rate: the same in both.
void check_same_figures(const SaturateResult& got, const SaturateResult& want) {
  CHECK(got.stable_qps == want.stable_qps);
  CHECK(got.first_failing_qps == want.first_failing_qps);
  CHECK(got.batch_at_stable_qps == want.batch_at_stable_qps);
  CHECK(got.goodput_at_stable_qps == want.goodput_at_stable_qps);
  CHECK(got.mean_output_tokens_at_stable_qps == want.mean_output_tokens_at_stable_qps);
  CHECK(got.saturation_batch_size == want.saturation_batch_size);
}

// A probe's verdict: a majority of its runs met the SLO.
bool probe_passes(const SaturateProbe& p) { return 2 * p.passed > p.runs; }

}  // namespace

TEST_CASE("decide_early: the same search and figures as every replication at every probe, fewer runs") {
  const auto doc = workload(150);
  const SloConfig slo = chat_slo();
  SaturateOptions o = three_seeds_from_1();
  int plain_runs = 0, early_runs = 0;
  const SaturateResult plain = search(doc, slo, o, plain_runs);
  o.decide_early = true;
  const SaturateResult early = search(doc, slo, o, early_runs);
  std::printf("decide_early: stable %.4g req/s in %zu probes; %d runs -> %d\n", early.stable_qps, early.probes.size(), plain_runs,
              early_runs);
  REQUIRE(plain.stable_qps > 0.0);
  check_same_figures(early, plain);
  REQUIRE(early.probes.size() == plain.probes.size());
  for (std::size_t i = 0; i < plain.probes.size(); ++i) {
    CHECK(early.probes[i].rate_per_s == plain.probes[i].rate_per_s);
    CHECK(early.probes[i].runs <= 3);
    CHECK(early.probes[i].runs >= 2);
  }
  CHECK(early_runs < plain_runs);
  CHECK(expected_runs(o) < expected_probes(o) * o.replications);
}

TEST_CASE("floor_first_below: an SLO no rate meets is found at the halving's lowest rate in one probe, same reason") {
  auto doc = workload(40);
  SloConfig slo;
  slo.ttft_s = 1e-4;  // below one prefill alone
  slo.percentile = 0.9;
  SaturateOptions o;
  o.replications = 1;
  o.start_rate_per_s = 4.0;
  o.min_rate_per_s = 0.01;
  int plain_runs = 0, floor_runs = 0;
  const SaturateResult plain = search(doc, slo, o, plain_runs);
  o.floor_first_below_per_s = 2.5;  // the first halving (to 2 req/s) already goes below it
  const SaturateResult floor = search(doc, slo, o, floor_runs);
  std::printf("floor_first: %zu probes -> %zu: %s\n", plain.probes.size(), floor.probes.size(), floor.unmet.c_str());
  CHECK(plain.stable_qps == 0.0);
  CHECK(floor.stable_qps == 0.0);
  CHECK_FALSE(plain.unmet.empty());
  CHECK(floor.unmet == plain.unmet);  // the same lowest rate, the same miss
  CHECK(floor.probes.size() == 2);
  CHECK(floor.probes.back().rate_per_s == plain.probes.back().rate_per_s);
  CHECK(floor_runs < plain_runs);
}

TEST_CASE("floor_first_below: a rate that passes below the threshold is found as without it") {
  const auto doc = workload(150);
  const SloConfig slo = chat_slo();
  SaturateOptions o;
  o.replications = 1;
  o.rel_tolerance = 0.05;
  o.start_rate_per_s = 4096.0;  // far above: the halving goes below the threshold before passing
  int plain_runs = 0, floor_runs = 0;
  const SaturateResult plain = search(doc, slo, o, plain_runs);
  REQUIRE(plain.stable_qps > 0.0);
  REQUIRE(plain.stable_qps < 2048.0);
  o.floor_first_below_per_s = 2048.0;
  const SaturateResult floor = search(doc, slo, o, floor_runs);
  std::printf("floor_first (passing floor): stable %.4g req/s; %zu probes -> %zu\n", floor.stable_qps, plain.probes.size(),
              floor.probes.size());
  CHECK(floor.stable_qps == plain.stable_qps);
  CHECK(floor.first_failing_qps == plain.first_failing_qps);
  CHECK(floor.batch_at_stable_qps == plain.batch_at_stable_qps);
  CHECK(floor.probes.size() == plain.probes.size() + 1);  // the floor's probe, once
}

TEST_CASE("decide_far_ratio: probes far from the SLO decided by their first seed; the same search, fewer runs") {
  const auto doc = workload(150);
  const SloConfig slo = chat_slo();
  SaturateOptions o = three_seeds_from_1();  // 1 req/s, far below the stable rate: the first probes meet the SLO by far
  o.decide_early = true;
  int early_runs = 0, far_runs = 0;
  const SaturateResult early = search(doc, slo, o, early_runs);
  o.decide_far_ratio = 2.0;
  const SaturateResult far = search(doc, slo, o, far_runs);
  std::size_t alone = 0;
  for (const SaturateProbe& p : far.probes) alone += p.runs == 1 ? 1 : 0;
  std::printf("decide_far_ratio 2: stable %.4g req/s; %d runs -> %d, %zu of %zu probes decided by one seed\n", far.stable_qps,
              early_runs, far_runs, alone, far.probes.size());
  REQUIRE(early.stable_qps > 0.0);
  CHECK(far.stable_qps == early.stable_qps);
  CHECK(far.first_failing_qps == early.first_failing_qps);
  CHECK(far.batch_at_stable_qps == early.batch_at_stable_qps);  // the stable probe still runs every seed
  REQUIRE(far.probes.size() == early.probes.size());
  for (std::size_t i = 0; i < far.probes.size(); ++i) {
    CHECK(far.probes[i].rate_per_s == early.probes[i].rate_per_s);
    CHECK(probe_passes(far.probes[i]) == probe_passes(early.probes[i]));
  }
  CHECK(alone > 0);
  CHECK(far_runs <= early_runs - static_cast<int>(alone));  // each saves one run at least
  // The first probe, at 1 req/s, meets the SLO with its latency under half the target: one seed.
  CHECK(far.probes.front().runs == 1);
}

TEST_CASE("start_near_per_s: starting at the grid rate nearest a guess finds the same bracket and stable rate in fewer probes") {
  const auto doc = workload(150);
  const SloConfig slo = chat_slo();
  SaturateOptions o = three_seeds_from_1();
  o.decide_early = true;
  int plain_runs = 0, near_runs = 0;
  const SaturateResult plain = search(doc, slo, o, plain_runs);
  REQUIRE(plain.stable_qps > 4.0);  // a few doublings from 1 req/s
  // The guess from the cost model, on the scenario as the search builds it.
  int built = 0;
  const Counted make{doc, slo, &built};
  const double guess = stable_rate_guess(make(1.0, 11));
  std::printf("start_near_per_s: stable %.4g req/s, guess %.4g (%.2fx)\n", plain.stable_qps, guess, guess / plain.stable_qps);
  CHECK(guess > 0.25 * plain.stable_qps);  // a start, not an answer: a factor of 4 either way still saves probes
  CHECK(guess < 4.0 * plain.stable_qps);
  for (const double start_near : {guess, plain.stable_qps, plain.first_failing_qps, 0.01}) {
    o.start_near_per_s = start_near;
    const SaturateResult near = search(doc, slo, o, near_runs);
    INFO("start near " << start_near);
    CHECK(near.stable_qps == plain.stable_qps);
    CHECK(near.first_failing_qps == plain.first_failing_qps);
    CHECK(near.batch_at_stable_qps == plain.batch_at_stable_qps);
    CHECK(near.goodput_at_stable_qps == plain.goodput_at_stable_qps);
    // The bisection's probes (the rates off the doubling grid) are the same ones, in the same order.
    CHECK(bisection_rates(near) == bisection_rates(plain));
    if (start_near != 0.01) {
      CHECK(near.probes.size() < plain.probes.size());
      CHECK(near_runs < plain_runs);
    }
  }
  // None below the halving's lowest rate.
  o.start_near_per_s = 1e-9;
  o.min_rate_per_s = 0.01;
  const SaturateResult low = search(doc, slo, o, near_runs);
  CHECK(low.probes.front().rate_per_s >= 0.01);
  CHECK(low.probes.front().rate_per_s < 0.02);
  CHECK(low.stable_qps == plain.stable_qps);
}

TEST_CASE("stable_rate_guess: none where even one sequence alone misses the TPOT target") {
  int built = 0;
  SloConfig slo = chat_slo();
  slo.tpot_s = 1e-5;
  const Counted make{workload(50), slo, &built};
  CHECK(stable_rate_guess(make(1.0, 11)) == 0.0);
}

TEST_CASE("SloMissWatch: a run it settles misses its SLO by the factor when run to the end") {
  const auto doc = workload(150);
  int built = 0, settled = 0, checked = 0;
  for (const double factor : {1.0, 2.0}) {
    for (const double rate : {5.0, 15.0, 25.0, 40.0, 80.0}) {
      for (const std::uint64_t seed : {11, 12, 13}) {
        for (const bool tpot_only : {false, true}) {
          SloConfig slo = chat_slo();
          if (tpot_only) slo.ttft_s = 0.0;
          const Counted make{doc, slo, &built};
          const Scenario s = make(rate, seed);
          SloMissWatch watch(s, factor, false);  // watches the whole run without stopping it
          SimHooks hooks;
          hooks.observer = &watch;
          const SimResult r = simulate(s, hooks);
          const SloResult full = evaluate_slo(s.workload, r.metrics);
          ++checked;
          if (!watch.settled()) continue;
          ++settled;
          const SettledMiss& m = *watch.settled();
          INFO("rate " << rate << " seed " << seed << " factor " << factor << " " << m.metric);
          CHECK_FALSE(full.met);
          CHECK(m.at_least_s == factor * (m.metric == "ttft_s" ? slo.ttft_s : slo.tpot_s));
          bool past = false;
          for (const SloTarget& t : full.classes.front().targets) past = past || (t.metric == m.metric && t.value_s > m.at_least_s);
          CHECK(past);
        }
      }
    }
  }
  std::printf("SloMissWatch: %d of %d runs settled before their end, each a miss by its factor\n", settled, checked);
  CHECK(settled > checked / 4);  // not vacuous: the high rates overload the replica
  CHECK(settled < checked);      // and the low ones meet the SLO
}

TEST_CASE("stop_settled_misses: the same search, verdicts, stable rate and figures at it") {
  const auto doc = workload(150);
  const SloConfig slo = chat_slo();
  SaturateOptions o = three_seeds_from_1();
  o.decide_early = true;
  o.decide_far_ratio = 2.0;
  int runs = 0;
  const SaturateResult plain = search(doc, slo, o, runs);
  o.stop_settled_misses = true;
  const SaturateResult stopped = search(doc, slo, o, runs);
  REQUIRE(plain.stable_qps > 0.0);
  check_same_figures(stopped, plain);
  REQUIRE(stopped.probes.size() == plain.probes.size());
  for (std::size_t i = 0; i < plain.probes.size(); ++i) {
    CHECK(stopped.probes[i].rate_per_s == plain.probes[i].rate_per_s);
    // The same verdict; a first seed stopped early may have had the next seed run (runs).
    CHECK(probe_passes(stopped.probes[i]) == probe_passes(plain.probes[i]));
  }
  // No rate meets it: the same one-line reason and saturation batch, from runs to their end.
  SloConfig impossible;
  impossible.ttft_s = 1e-4;
  impossible.percentile = 0.9;
  SaturateOptions none;
  none.replications = 3;
  none.decide_early = true;
  none.decide_far_ratio = 2.0;
  none.start_rate_per_s = 4.0;
  none.min_rate_per_s = 0.01;
  none.floor_first_below_per_s = 2.5;
  const SaturateResult unmet_plain = search(workload(40), impossible, none, runs);
  none.stop_settled_misses = true;
  const SaturateResult unmet = search(workload(40), impossible, none, runs);
  std::printf("stop_settled_misses, no rate meets: %s\n", unmet.unmet.c_str());
  CHECK_FALSE(unmet_plain.unmet.empty());
  CHECK(unmet.unmet == unmet_plain.unmet);
  CHECK(unmet.saturation_batch_size == unmet_plain.saturation_batch_size);
  CHECK(unmet.mean_context_tokens == unmet_plain.mean_context_tokens);
}
