// The step cost model seam (serve/step_cost.hpp): models chosen by name in the scenario, the
// teaching roofline is the sum of the datasheet floors, and CUDA-graph padding is one function.
#include <doctest/doctest.h>

#include "sim/config/engine_profile.hpp"
#include "sim/core/error.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/report_io.hpp"
#include "sim/serve/simulation.hpp"
#include "sim/serve/step_cost.hpp"
#include "tests/support.hpp"

using namespace servesim;

TEST_CASE("cost_model.impl picks the step cost model by name; unknown names name the key") {
  auto doc = test::base_scenario();
  CHECK(test::scenario_from(doc).cost_model.impl == "calibrated");
  doc["cost_model"] = {{"impl", "roofline"}};
  CHECK(test::scenario_from(doc).cost_model.impl == "roofline");
  doc["cost_model"] = {{"impl", "measured-table"}};
  const std::string err = test::parse_error(doc);
  CHECK(err.find("cost_model.impl") != std::string::npos);
  CHECK(err.find("calibrated, roofline") != std::string::npos);
  doc["cost_model"] = {{"impl", "roofline"}, {"peak_frac", 0.5}};
  CHECK(test::parse_error(doc).find("cost_model.peak_frac") != std::string::npos);
}

TEST_CASE("the roofline cost model is the sum of the ops' datasheet floors, below the calibrated model") {
  auto doc = test::base_scenario();
  doc["cost_model"] = {{"impl", "roofline"}};
  const Scenario s = test::scenario_from(doc);
  auto roofline = make_step_cost_model(s, s.parallel, false);
  auto calibrated_doc = test::base_scenario();
  const Scenario c = test::scenario_from(calibrated_doc);
  auto calibrated = make_step_cost_model(c, c.parallel, false);
  for (const std::int64_t batch : {1, 7, 64}) {
    BatchShape shape;
    for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(500);
    std::vector<Op> ops;
    build_iteration_ops(s.model, shape, s.precision, ops, s.engine.profile.kernels, 1);
    double floors_s = 0.0;
    for (const Op& op : ops) floors_s += static_cast<double>(op.count) * estimate(op, s.hw, s.precision.weights).roofline_s;
    const StepTime r = roofline->step_time(shape);
    CHECK(r.time_s == doctest::Approx(floors_s).epsilon(1e-12));
    CHECK(r.host_s == 0.0);
    const StepTime k = calibrated->step_time(shape);
    CHECK(k.roofline_s == doctest::Approx(floors_s).epsilon(1e-9));  // same floors, same ops
    CHECK(r.time_s < k.time_s);
  }
}

TEST_CASE("a run under the roofline model is faster than under the calibrated model, and says which it used") {
  auto doc = test::base_scenario();
  const SimResult base = simulate(test::scenario_from(doc));
  doc["cost_model"] = {{"impl", "roofline"}};
  const Scenario s = test::scenario_from(doc);
  const SimResult floor = simulate(s);
  CHECK(floor.metrics.completed == base.metrics.completed);
  CHECK(floor.metrics.busy_s < base.metrics.busy_s);
  CHECK(floor.metrics.e2e_s.mean() < base.metrics.e2e_s.mean());
  CHECK(make_report(s, floor)["scenario"]["cost_model"]["impl"] == "roofline");
  // The default is not echoed, so reports of scenarios that name no model keep their bytes.
  CHECK_FALSE(make_report(test::scenario_from(test::base_scenario()), base)["scenario"].contains("cost_model"));
}

TEST_CASE("CUDA-graph padding: the next captured size, eager above them, eager with a prefill") {
  const std::vector<std::int64_t> captured = {1, 2, 4, 8};
  LaunchConfig launch;
  BatchShape decode3;
  for (int i = 0; i < 3; ++i) decode3.add_decode(100);
  LaunchConfig l = launch;
  apply_cuda_graphs(l, captured, decode3);
  CHECK(l.cuda_graphs);
  CHECK(decode3.decode_seqs == 4);
  CHECK(decode3.decode_kv_tokens == doctest::Approx(3 * 101 + 1));  // the pad sequence has context 0
  BatchShape decode9;
  for (int i = 0; i < 9; ++i) decode9.add_decode(100);
  l = launch;
  apply_cuda_graphs(l, captured, decode9);
  CHECK_FALSE(l.cuda_graphs);
  CHECK(decode9.decode_seqs == 9);
  BatchShape mixed;
  mixed.add_decode(100);
  mixed.add_prefill(64, 0, true);
  l = launch;
  apply_cuda_graphs(l, captured, mixed);
  CHECK_FALSE(l.cuda_graphs);
  CHECK(mixed.decode_seqs == 1);
  BatchShape any;
  for (int i = 0; i < 5; ++i) any.add_decode(100);
  l = launch;
  apply_cuda_graphs(l, {}, any);  // no list: every size captured
  CHECK(l.cuda_graphs);
  CHECK(any.decode_seqs == 5);
}

TEST_CASE("tensor-parallel host term: per worker beyond the first, strict key, in the simulator's step") {
  auto doc = nlohmann::json::parse(R"({"name":"x","kernels_per_layer":{},"cuda_graphs":{"decode":false},
      "host":{"overhead_per_step_s":0.001,"overhead_per_seq_s":0,"overhead_per_step_per_tp_worker_s":0.0005},
      "defaults":{"scheduler":"continuous","kv_cache":"paged","block_size":16}})");
  const EngineProfile p = parse_engine_profile(doc, "x.json");
  CHECK(p.launch.host_overhead_per_step_per_tp_worker_s == doctest::Approx(0.0005));
  LaunchConfig l = p.launch;
  apply_tp_workers(l, 1);
  CHECK(l.host_overhead_per_step_s == doctest::Approx(0.001));  // TP1: no worker to feed
  l = p.launch;
  apply_tp_workers(l, 4);
  CHECK(l.host_overhead_per_step_s == doctest::Approx(0.001 + 3 * 0.0005));
  doc["host"]["overhead_per_step_per_tp_worker_s"] = "1 ms";
  std::string err;
  try {
    parse_engine_profile(doc, "x.json");
  } catch (const InputError& e) {
    err = e.what();
  }
  CHECK(err.find("x.json") != std::string::npos);
  CHECK(err.find("overhead_per_step_per_tp_worker_s") != std::string::npos);

  // The simulator's step pays it once per step, on top of everything else.
  auto sdoc = test::base_scenario();
  sdoc["engine"]["profile"] = "vllm-0.5";
  sdoc["parallel"] = {{"tensor_parallel_size", 2}};
  Scenario s = test::scenario_from(sdoc);
  REQUIRE(s.engine.launch.host_overhead_per_step_per_tp_worker_s > 0);
  BatchShape decode;
  for (int i = 0; i < 8; ++i) decode.add_decode(200);
  const double with_s = make_step_cost_model(s, s.parallel, false)->step_time(decode).time_s;
  const double term_s = s.engine.launch.host_overhead_per_step_per_tp_worker_s;
  s.engine.launch.host_overhead_per_step_per_tp_worker_s = 0.0;
  const double without_s = make_step_cost_model(s, s.parallel, false)->step_time(decode).time_s;
  CHECK(with_s - without_s == doctest::Approx(term_s).epsilon(1e-9));
}
