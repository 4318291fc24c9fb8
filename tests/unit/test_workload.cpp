// Workload generation: each arrival process and length distribution against its known moments
// (bounds of several standard errors, so a correct sampler fails with negligible probability),
// request classes, load profiles and duration limits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/io/load_profile.hpp"
#include "sim/workload/workload.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
struct Moments {
  double mean = 0.0, var = 0.0;
};
Moments moments(const std::vector<double>& xs) {
  Moments m;
  for (double x : xs) m.mean += x;
  m.mean /= static_cast<double>(xs.size());
  for (double x : xs) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(xs.size() - 1);
  return m;
}
std::vector<double> gaps(const ArrivalConfig& a, int n, std::uint64_t seed = 5) {
  ArrivalProcess p(a, seed);
  std::vector<double> out;
  double last = 0.0;
  for (int i = 0; i < n; ++i) {
    const double t = p.next_s();
    out.push_back(t - last);
    last = t;
  }
  return out;
}
std::vector<double> lengths(const LengthDist& d, int n) {
  LengthSampler s(d, 9, "test");
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<double>(s.next()));
  return out;
}
}  // namespace

TEST_CASE("poisson and gamma gaps have mean 1/rate and the requested coefficient of variation") {
  const int n = 200000;
  for (double cv : {0.5, 1.0, 2.0, 4.0}) {
    ArrivalConfig a;
    a.kind = cv == 1.0 ? ArrivalConfig::Kind::poisson : ArrivalConfig::Kind::gamma;
    a.rate_per_s = 8.0;
    a.cv = cv;
    const Moments m = moments(gaps(a, n));
    const double got_cv = std::sqrt(m.var) / m.mean;
    // Standard error of the mean is cv/(rate sqrt(n)); allow 5 of them. The CV's sampling error
    // grows with the fourth moment; 3% relative is > 5 standard errors for cv <= 4 at n = 2e5.
    std::printf("arrival cv %.1f: mean gap %.6f (expect %.6f), cv %.4f\n", cv, m.mean, 1.0 / 8.0, got_cv);
    CHECK(std::abs(m.mean - 0.125) < 5.0 * cv * 0.125 / std::sqrt(n));
    CHECK(std::abs(got_cv - cv) / cv < 0.03);
  }
}

TEST_CASE("constant arrivals are evenly spaced from t = 0") {
  ArrivalConfig a;
  a.kind = ArrivalConfig::Kind::constant;
  a.rate_per_s = 4.0;
  ArrivalProcess p(a, 1);
  for (int i = 0; i < 10; ++i) CHECK(p.next_s() == doctest::Approx(0.25 * i));
}

TEST_CASE("on/off bursts: arrivals only in on windows, mean rate = rate * on / (on + off)") {
  ArrivalConfig a;
  a.kind = ArrivalConfig::Kind::on_off;
  a.rate_per_s = 100.0;
  a.on_s = 2.0;
  a.off_s = 3.0;
  ArrivalProcess p(a, 3);
  const int n = 100000;
  double t = 0.0;
  for (int i = 0; i < n; ++i) {
    t = p.next_s();
    REQUIRE(std::fmod(t, 5.0) <= 2.0 + 1e-9);
  }
  const double rate = n / t, expect = 100.0 * 2.0 / 5.0;
  std::printf("on/off mean rate %.3f (expect %.3f)\n", rate, expect);
  CHECK(std::abs(rate - expect) / expect < 0.02);
}

TEST_CASE("ramp: arrival counts follow the integral of the linear rate") {
  ArrivalConfig a;
  a.kind = ArrivalConfig::Kind::ramp;
  a.start_rate_per_s = 10.0;
  a.end_rate_per_s = 110.0;
  a.ramp_s = 100.0;
  ArrivalProcess p(a, 4);
  int first_half = 0, second_half = 0, after = 0;
  for (;;) {
    const double t = p.next_s();
    if (t > 150.0) break;
    (t < 50.0 ? first_half : t < 100.0 ? second_half : after) += 1;
  }
  // Expected: integral of 10 + t over [0,50] = 1750, over [50,100] = 4250, then 110/s for 50 s = 5500.
  std::printf("ramp counts %d %d %d (expect 1750 4250 5500)\n", first_half, second_half, after);
  CHECK(std::abs(first_half - 1750) < 5 * std::sqrt(1750.0));
  CHECK(std::abs(second_half - 4250) < 5 * std::sqrt(4250.0));
  CHECK(std::abs(after - 5500) < 5 * std::sqrt(5500.0));
}

TEST_CASE("length distributions match their moments") {
  const int n = 100000;
  LengthDist d;
  SUBCASE("uniform") {
    d.kind = LengthDist::Kind::uniform;
    d.min_tokens = 10;
    d.max_tokens = 109;
    const Moments m = moments(lengths(d, n));
    const double sd = std::sqrt((100.0 * 100.0 - 1) / 12.0);
    CHECK(std::abs(m.mean - 59.5) < 5 * sd / std::sqrt(n));
    CHECK(std::sqrt(m.var) == doctest::Approx(sd).epsilon(0.02));
  }
  SUBCASE("normal (clamp far away)") {
    d.kind = LengthDist::Kind::normal;
    d.mean_tokens = 500;
    d.stddev_tokens = 50;
    d.min_tokens = 1;
    d.max_tokens = 100000;
    const Moments m = moments(lengths(d, n));
    std::printf("normal mean %.2f sd %.2f\n", m.mean, std::sqrt(m.var));
    CHECK(std::abs(m.mean - 500) < 5 * 50 / std::sqrt(n) + 0.01);
    CHECK(std::sqrt(m.var) == doctest::Approx(50).epsilon(0.02));
  }
  SUBCASE("lognormal mean") {
    d.kind = LengthDist::Kind::lognormal;
    d.mean_tokens = 300;
    d.sigma = 0.5;
    d.min_tokens = 1;
    d.max_tokens = 1000000;
    const Moments m = moments(lengths(d, n));
    const double sd = 300 * std::sqrt(std::exp(0.25) - 1);
    std::printf("lognormal mean %.2f (expect 300, rounding adds < 0.5)\n", m.mean);
    CHECK(std::abs(m.mean - 300) < 5 * sd / std::sqrt(n) + 0.5);
  }
  SUBCASE("zipf probabilities") {
    d.kind = LengthDist::Kind::zipf;
    d.zipf_s = 1.2;
    d.min_tokens = 1;
    d.max_tokens = 50;
    double h = 0;
    for (int k = 1; k <= 50; ++k) h += std::pow(k, -1.2);
    const auto xs = lengths(d, n);
    for (int k : {1, 2, 10}) {
      double c = 0;
      for (double x : xs) c += x == k ? 1 : 0;
      const double p = std::pow(k, -1.2) / h;
      CHECK(std::abs(c / n - p) < 5 * std::sqrt(p * (1 - p) / n));
    }
  }
  SUBCASE("empirical histogram") {
    d.kind = LengthDist::Kind::empirical;
    d.tokens = {100, 1000, 4000};
    d.weights = {6, 3, 1};
    d.min_tokens = 100;
    d.max_tokens = 4000;
    const auto xs = lengths(d, n);
    double c100 = 0;
    for (double x : xs) c100 += x == 100 ? 1 : 0;
    CHECK(std::abs(c100 / n - 0.6) < 5 * std::sqrt(0.24 / n));
    const Moments m = moments(xs);
    CHECK(m.mean == doctest::Approx(0.6 * 100 + 0.3 * 1000 + 0.1 * 4000).epsilon(0.02));
  }
}

TEST_CASE("request classes are drawn by weight with their own lengths") {
  auto doc = test::base_scenario();
  doc["workload"].erase("prompt_tokens");
  doc["workload"].erase("output_tokens");
  doc["workload"]["num_requests"] = 20000;
  doc["workload"]["classes"] = nlohmann::json::parse(R"([
    {"name": "chat", "weight": 3, "prompt_tokens": {"impl": "fixed", "value_tokens": 100}, "output_tokens": {"impl": "fixed", "value_tokens": 10}},
    {"name": "docs", "weight": 1, "prompt_tokens": {"impl": "fixed", "value_tokens": 3000}, "output_tokens": {"impl": "fixed", "value_tokens": 20}}])");
  const Scenario s = test::scenario_from(doc);
  WorkloadGenerator g(s.workload, s.seed);
  int docs = 0, n = 0;
  while (auto r = g.next()) {
    ++n;
    if (r->cls == 1) {
      ++docs;
      CHECK(r->prompt_tokens == 3000);
    } else {
      CHECK(r->prompt_tokens == 100);
    }
  }
  CHECK(n == 20000);
  CHECK(std::abs(docs / 20000.0 - 0.25) < 5 * std::sqrt(0.25 * 0.75 / 20000));
}

TEST_CASE("load profile: rps and duration replace the arrival and end the workload") {
  auto doc = test::base_scenario();
  apply_load_profile(doc, "rps=50, duration=30s");
  const Scenario s = test::scenario_from(doc);
  CHECK(s.workload.arrival.rate_per_s == 50.0);
  CHECK(s.workload.duration_s == 30.0);
  CHECK(s.workload.num_requests == -1);
  WorkloadGenerator g(s.workload, s.seed);
  int n = 0;
  double last = 0;
  while (auto r = g.next()) {
    ++n;
    last = ns_to_seconds(r->arrival_ns);
  }
  CHECK(last <= 30.0);
  CHECK(std::abs(n - 1500) < 5 * std::sqrt(1500.0));
  CHECK(parse_duration_s("250ms", "--f", "d") == doctest::Approx(0.25));
  CHECK(parse_duration_s("2m", "--f", "d") == 120.0);
  CHECK(parse_duration_s("800us", "--f", "d") == doctest::Approx(8e-4));
  // A unit it does not know names the flag the text came from, not another one.
  try {
    parse_duration_s("1ns", "--slo", "ttft");
    FAIL("1ns accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind("--slo: ttft: ", 0) == 0);
  }
  CHECK_THROWS_AS(apply_load_profile(doc, "rps=-1"), InputError);
  CHECK_THROWS_AS(apply_load_profile(doc, "qps=3"), InputError);
  CHECK_THROWS_AS(apply_load_profile(doc, "rps=3, duration=abc"), InputError);
}

TEST_CASE("existing workload keys keep their meaning and draws") {
  // A legacy scenario (top-level prompt/output_tokens) is one "default" class drawing from the
  // same streams as before classes existed.
  const Scenario s = test::scenario_from(test::base_scenario());
  REQUIRE(s.workload.classes.size() == 1);
  CHECK(s.workload.classes[0].name == "default");
  CHECK(s.workload.num_requests == 50);
  RngStream arrivals(s.seed, "arrivals");
  WorkloadGenerator g(s.workload, s.seed);
  double clock = 0;
  for (int i = 0; i < 5; ++i) {
    clock += arrivals.exponential(2.0);
    CHECK(g.next()->arrival_ns == seconds_to_ns(clock));
  }
}
