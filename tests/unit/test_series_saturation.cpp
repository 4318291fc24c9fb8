// The KV usage series (bounded, on a regular grid) and the saturation batch size (its definition
// checked against the cost model directly).
#include <doctest/doctest.h>

#include "../support.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/metrics/sampled_series.hpp"
#include "sim/serve/saturation_batch.hpp"

using namespace servesim;
using namespace servesim::test;

TEST_CASE("sampled series: at most max_points samples on a doubling grid, each the value in effect") {
  SampledSeries s(8, 10);
  // The signal is t / 100 from each step on; steps every 7 ns up to 1000 ns.
  for (TimeNs t = 0; t <= 1000; t += 7) s.set(t, static_cast<double>(t) / 100.0);
  s.finish(1000);
  const auto& p = s.points();
  CHECK(p.size() <= 8);
  CHECK(p.size() >= 4);
  CHECK(p.front().first == 0);
  for (std::size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].first % s.step_ns() == 0);
    if (i > 0) CHECK(p[i].first - p[i - 1].first == s.step_ns());
    // The value set at the last step at or before the sample time.
    const TimeNs last_set = p[i].first / 7 * 7;
    CHECK(p[i].second == doctest::Approx(static_cast<double>(last_set) / 100.0));
  }
}

TEST_CASE("saturation batch size: the first power of two whose doubling gains < 5% decode throughput") {
  const Scenario s = scenario_from(base_scenario());
  const Saturation sat = decode_saturation(s);
  CHECK(sat.context_tokens == doctest::Approx(128 + 16));  // fixed 128-token prompts, half of 32 outputs
  std::vector<Op> ops;
  const auto tput = [&](std::int64_t b) {
    BatchShape shape;
    for (std::int64_t i = 0; i < b; ++i) shape.add_decode(144);
    build_iteration_ops(s.model, shape, s.precision, ops);
    return static_cast<double>(b) / estimate_step(ops, s.hw, s.precision.weights, s.engine.launch, b).time_s;
  };
  const std::int64_t b = sat.batch_size;
  MESSAGE("saturation batch size " << b << ": throughput " << tput(b) << " tok/s, x2 -> " << tput(2 * b));
  CHECK(b > 1);
  CHECK(tput(2 * b) < 1.05 * tput(b));
  CHECK(tput(b) >= 1.05 * tput(b / 2));
}
