// cost_model.interpolate_decode (InterpolatedDecodeCost, serve/step_cost.cpp): decode-only steps
// priced by linear interpolation in KV tokens between exact prices at grid points 2^-8..2^-7 of
// KV apart. Its stated tolerance, checked here on every bundled scenario: a step's time within
// kStepTolerance of the exact model's, and a run's report within kCentralTolerance of the exact
// run's for throughput and latency means and medians, kTailTolerance for p95 and p99. The
// report bounds are wider than the step bound because a few-ns shift in a step can flip a later
// scheduling decision (whether an arrival makes this step or the next, which sequence a full
// cache preempts); those flips, not the interpolation, make most of the differences printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "../support.hpp"
#include "sim/io/report_io.hpp"
#include "sim/serve/simulation.hpp"
#include "sim/serve/step_cost.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

constexpr double kStepTolerance = 2e-4;
constexpr double kCentralTolerance = 0.01;
constexpr double kTailTolerance = 0.05;

const std::filesystem::path kRepo = std::filesystem::path(servesim::test::test_data_dir()).parent_path();

std::vector<std::filesystem::path> scenarios_to_check() {
  std::vector<std::filesystem::path> paths = {kRepo / "bench" / "vidur.json", kRepo / "bench" / "million.json"};
  for (const auto* dir : {"scenarios", "scenarios/studies"}) {
    for (const auto& e : std::filesystem::directory_iterator(kRepo / dir)) {
      if (e.path().extension() == ".json") paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

double relative(double exact, double approx) {
  return exact == approx ? 0.0 : std::fabs(approx - exact) / std::max(std::fabs(exact), 1e-300);
}

}  // namespace

TEST_CASE("interpolated decode steps are within the stated tolerance of the exact model's, on every bundled scenario") {
  double worst = 0.0;
  std::string worst_at;
  for (const auto& p : scenarios_to_check()) {
    const Scenario exact_s = load_scenario(p.string(), {});
    const Scenario interp_s = load_scenario(p.string(), {"cost_model.interpolate_decode=true"});
    REQUIRE(interp_s.cost_model.interpolate_decode);
    auto exact = make_step_cost_model(exact_s, exact_s.parallel, false);
    auto interp = make_step_cost_model(interp_s, interp_s.parallel, false);
    double scenario_worst = 0.0;
    std::int64_t checked = 0;
    for (std::int64_t seqs = 1; seqs <= exact_s.engine.max_num_seqs; seqs = seqs * 3 / 2 + 1) {
      // Mean contexts from 16 tokens to 32k, off the grid (a factor of 1.0137 apart: every
      // offset within a cell comes up), through step_time and through a decode run's steps.
      BatchShape run;
      run.decode_seqs = seqs;
      run.decode_kv_tokens = 16.0 * static_cast<double>(seqs);
      interp->begin_decode_run(run);
      for (double context = 16.0; context <= 32768.0; context *= 1.0137) {
        BatchShape shape;
        shape.decode_seqs = seqs;
        shape.decode_kv_tokens = std::round(context * static_cast<double>(seqs));
        const StepTime e = exact->step_time(shape);
        for (const StepTime& i : {interp->step_time(shape), interp->decode_run_step(shape.decode_kv_tokens)}) {
          const double err = std::max({relative(e.time_s, i.time_s), relative(e.gpu_s, i.gpu_s), relative(e.bytes, i.bytes)});
          CHECK(i.kernels == e.kernels);
          if (err > scenario_worst) scenario_worst = err;
          if (err > worst) {
            worst = err;
            worst_at = p.filename().string() + " at " + std::to_string(seqs) + " sequences, " +
                       std::to_string(static_cast<long long>(shape.decode_kv_tokens)) + " KV tokens";
          }
          ++checked;
        }
      }
    }
    std::printf("interpolated decode steps, %s: %lld steps, worst relative error %.2e\n", p.filename().string().c_str(),
                static_cast<long long>(checked), scenario_worst);
  }
  std::printf("interpolated decode steps: worst relative error %.2e (%s), bound %.0e\n", worst, worst_at.c_str(), kStepTolerance);
  CHECK(worst <= kStepTolerance);
  CHECK(worst > 0.0);  // it does interpolate
}

TEST_CASE("a run with interpolated decode steps reports within the stated tolerance of the exact run") {
  // Central figures (throughput, completions, latency means and medians) and tails (p95, p99:
  // the 20-100 slowest of 2,000 requests, where one request admitted a step later shows).
  struct Worst {
    double err = 0.0;
    std::string at;
  } central, tail;
  for (const auto& p : scenarios_to_check()) {
    // A trace-driven scenario ends with its trace; the rest are cut to 2000 requests.
    std::vector<std::string> cut;
    if (load_scenario(p.string(), {}).workload.num_requests > 2000) cut.push_back("workload.num_requests=2000");
    const Scenario exact_s = load_scenario(p.string(), cut);
    cut.push_back("cost_model.interpolate_decode=true");
    const Scenario interp_s = load_scenario(p.string(), cut);
    const nlohmann::json a = make_report(exact_s, simulate(exact_s)), b = make_report(interp_s, simulate(interp_s));
    CHECK(b["scenario"]["cost_model"]["interpolate_decode"] == true);  // the report says which it used
    Worst scenario_central, scenario_tail;
    const auto compare = [&](Worst& w, const nlohmann::json& x, const nlohmann::json& y, const std::string& what) {
      if (!x.is_number() || !y.is_number()) return;
      const double err = relative(x.get<double>(), y.get<double>());
      if (err > w.err) w = {err, p.filename().string() + ": " + what};
    };
    compare(scenario_central, a["throughput"]["output_tokens_per_s"], b["throughput"]["output_tokens_per_s"], "output tokens/s");
    compare(scenario_central, a["requests"]["completed"], b["requests"]["completed"], "completed");
    for (const char* metric : {"ttft_s", "tpot_s", "e2e_s", "itl_s"}) {
      for (const char* stat : {"mean", "p50"}) {
        compare(scenario_central, a["latency"][metric][stat], b["latency"][metric][stat], std::string(metric) + " " + stat);
      }
      for (const char* stat : {"p95", "p99"}) {
        compare(scenario_tail, a["latency"][metric][stat], b["latency"][metric][stat], std::string(metric) + " " + stat);
      }
    }
    std::printf("interpolated vs exact run, %s: central %.2e (%s), tail %.2e (%s)\n", p.filename().string().c_str(),
                scenario_central.err, scenario_central.at.c_str(), scenario_tail.err, scenario_tail.at.c_str());
    if (scenario_central.err > central.err) central = scenario_central;
    if (scenario_tail.err > tail.err) tail = scenario_tail;
  }
  std::printf("interpolated vs exact runs: central figures worst %.2e (%s), bound %.0e; tails worst %.2e (%s), bound %.0e\n",
              central.err, central.at.c_str(), kCentralTolerance, tail.err, tail.at.c_str(), kTailTolerance);
  CHECK(central.err <= kCentralTolerance);
  CHECK(tail.err <= kTailTolerance);
}

TEST_CASE("cost_model.interpolate_decode: off by default, a boolean, errors name the key") {
  auto doc = base_scenario();
  CHECK_FALSE(scenario_from(doc).cost_model.interpolate_decode);
  doc["cost_model"] = {{"interpolate_decode", true}};  // impl may be left out: calibrated
  const Scenario s = scenario_from(doc);
  CHECK(s.cost_model.interpolate_decode);
  CHECK(s.cost_model.impl == "calibrated");
  doc["cost_model"] = {{"interpolate_decode", "yes"}};
  CHECK(parse_error(doc).find("cost_model.interpolate_decode") != std::string::npos);
  doc["cost_model"] = {{"interpolate_decode", 1}};
  CHECK(parse_error(doc).find("cost_model.interpolate_decode") != std::string::npos);
}
