// Overload: a run whose arrivals outpace the configuration says so (report.json
// requests.overloaded, the summary's overload line) and estimates what it serves; one that keeps
// up does not.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

#include "sim/io/report_io.hpp"
#include "sim/serve/simulation.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
nlohmann::json report_at(double rate_per_s) {
  auto doc = test::base_scenario();
  doc["workload"]["num_requests"] = 600;
  doc["workload"]["arrival"]["rate_per_s"] = rate_per_s;
  const Scenario s = test::scenario_from(doc);
  return make_report(s, simulate(s));
}
}  // namespace

TEST_CASE("a run whose arrivals outpace the configuration is flagged, with the rate it serves; one that keeps up is not") {
  // All 600 requests at once: the rate the configuration serves when it always has work.
  auto doc = test::base_scenario();
  doc["workload"]["num_requests"] = 600;
  doc["workload"]["arrival"] = {{"impl", "all_at_once"}};
  const Scenario burst = test::scenario_from(doc);
  const nlohmann::json b = make_report(burst, simulate(burst));
  CHECK_FALSE(b["requests"]["overloaded"].get<bool>());  // no arrival process to outpace: a batch benchmark
  const double capacity = b["throughput"]["requests_per_s"].get<double>();

  for (const double load : {0.5, 0.8}) {
    const auto r = report_at(load * capacity);
    std::printf("load %.1f of %.3g req/s: queue growth %.4f\n", load, capacity, r["requests"]["queue_growth_frac"].get<double>());
    CHECK_FALSE(r["requests"]["overloaded"].get<bool>());
    CHECK(r["requests"]["queue_growth_frac"].get<double>() < 0.05);
  }
  for (const double load : {2.0, 10.0}) {
    const auto r = report_at(load * capacity);
    const auto& q = r["requests"];
    const double served = q["offered_rate_per_s"].get<double>() / (1.0 + q["queue_growth_frac"].get<double>());
    std::printf("load %.0f of %.3g req/s: offered %.4g, queue growth %.3f, so serves about %.4g req/s (%+.1f%%)\n", load, capacity,
                q["offered_rate_per_s"].get<double>(), q["queue_growth_frac"].get<double>(), served, 100.0 * (served / capacity - 1.0));
    CHECK(q["overloaded"].get<bool>());
    // The queue's growth gives back the rate served within 15%.
    CHECK(served == doctest::Approx(capacity).epsilon(0.15));
    // TTFT is then mostly queueing.
    CHECK(r["latency"]["queue_s"]["p50"].get<double>() > 0.5 * r["latency"]["ttft_s"]["p50"].get<double>());
    std::ostringstream summary;
    print_summary(summary, r, 0.0);
    CHECK(summary.str().find("  overload   arrivals (") != std::string::npos);
    CHECK(summary.str().find("  bursts ") == std::string::npos);  // the overload line says it
  }
  std::ostringstream calm;
  print_summary(calm, report_at(0.5 * capacity), 0.0);
  CHECK(calm.str().find("overload") == std::string::npos);
  CHECK(calm.str().find("bursts") == std::string::npos);
  CHECK(calm.str().find("GPU busy") != std::string::npos);
}

TEST_CASE("a bursty trace that keeps up on average but queues in its peaks says its tail TTFT is waiting") {
  // The README's Azure 2023 conversation trace on one A100: 5.5 req/s over an hour, TTFT p50
  // 0.22 s and p99 32 s, the queue's p99 nearly all of it; not overloaded (the queue drains).
  const auto r = test::run_cli(
      "run " + std::string(servesim::test::test_data_dir()) + "/../scenarios/trace-replay.json --set workload.trace.path=" +
      std::string(servesim::test::test_data_dir()) + "/../data/traces/splitwise_conv_lengths.csv --set workload.trace.format=splitwise "
      "--no-html --no-csv --no-trace -o /tmp/servesim_test_bursts_" + std::to_string(::getpid()));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("  overload ") == std::string::npos);
  CHECK(r.output.find("  bursts     TTFT p99 ") != std::string::npos);
  CHECK(r.output.find("is mostly waiting to start (queue p99 ") != std::string::npos);
}

