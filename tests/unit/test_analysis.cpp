// Analyses: sweep rows are deterministic and identical run in parallel or serially; replication
// intervals; compare's drift and its exit code; roofline's gap decomposition adds up.
#include <doctest/doctest.h>

#include <fstream>

#include "sim/analysis/compare.hpp"
#include "sim/analysis/roofline.hpp"
#include "sim/analysis/sweep.hpp"
#include "sim/config/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/table_io.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
ScenarioFactory factory(const nlohmann::json& base) {
  return [base](const std::vector<std::string>& overrides, long long seed) {
    nlohmann::json doc = base;
    for (const auto& o : overrides) apply_override(doc, o, "test.json");
    if (seed >= 0) doc["seed"] = seed;
    return test::scenario_from(doc);
  };
}
}  // namespace

TEST_CASE("sweep: one row per combination in grid order; parallel output equals serial output") {
  auto base = test::base_scenario();
  base["workload"]["num_requests"] = 60;
  const std::vector<GridAxis> grid = {parse_grid("engine.max_num_seqs=8,32"), parse_grid("workload.arrival.rate_per_s=1,4,16")};
  SweepOptions o;
  o.replications = 2;
  o.parallel = true;
  const Table par = run_sweep(factory(base), grid, o);
  o.parallel = false;
  const Table ser = run_sweep(factory(base), grid, o);
  CHECK(table_to_json(par).dump() == table_to_json(ser).dump());
  REQUIRE(par.rows.size() == 6);
  const auto rows = table_to_json(par);
  CHECK(rows[0]["engine.max_num_seqs"] == "8");
  CHECK(rows[2]["workload.arrival.rate_per_s"] == "16");
  CHECK(rows[3]["engine.max_num_seqs"] == "32");
  CHECK(rows[0].contains("latency.ttft_s.p99.ci95"));
  // Same seed => same row whatever the grid around it: row 1 equals a single run at rate 4.
  const Table single = run_sweep(factory(base), {parse_grid("engine.max_num_seqs=8"), parse_grid("workload.arrival.rate_per_s=4")}, o);
  CHECK(table_to_json(single)[0].dump() == rows[1].dump());
  CHECK_THROWS_AS(parse_grid("engine.max_num_seqs"), InputError);
  CHECK_THROWS_AS(parse_grid("engine.max_num_seqs=1,,2"), InputError);
}

TEST_CASE("replication intervals: Student t half-width") {
  const Interval iv = interval({1.0, 2.0, 3.0, 4.0});
  CHECK(iv.mean == 2.5);
  CHECK(iv.stddev == doctest::Approx(1.2909944));
  CHECK(iv.ci95_half == doctest::Approx(3.182 * 1.2909944 / 2.0));
}

TEST_CASE("compare: relative drift, per-metric thresholds, missing metrics cross") {
  const std::map<std::string, double> base = {{"latency.ttft_s.p99", 1.0}, {"throughput.requests_per_s", 10.0}, {"gone", 1.0}};
  const std::map<std::string, double> now = {{"latency.ttft_s.p99", 1.08}, {"throughput.requests_per_s", 10.1}, {"new", 2.0}};
  CompareOptions o;
  o.threshold = 0.05;
  o.per_metric["latency."] = 0.1;
  const auto d = compare_metrics(base, now, o);
  REQUIRE(d.size() == 4);
  for (const auto& x : d) {
    if (x.metric == "latency.ttft_s.p99") {
      CHECK(x.drift == doctest::Approx(0.08));
      CHECK(x.threshold == 0.1);
      CHECK_FALSE(x.crossed);
    }
    if (x.metric == "throughput.requests_per_s") CHECK_FALSE(x.crossed);
    if (x.metric == "gone" || x.metric == "new") CHECK(x.crossed);
  }
}

TEST_CASE("compare CLI: exit 0 within thresholds, 3 when crossed, 2 on bad input") {
  const std::string dir = "/tmp/servesim_test_cmp_" + std::to_string(::getpid());
  const std::string scen = test::write_temp("cmp.json", test::base_scenario().dump());
  REQUIRE(test::run_cli("run " + scen + " --out " + dir + "/a -q").exit_code == 0);
  REQUIRE(test::run_cli("run " + scen + " --out " + dir + "/b -q --set workload.arrival.rate_per_s=4").exit_code == 0);
  CHECK(test::run_cli("compare " + dir + "/a/report.json " + dir + "/a/report.json").exit_code == 0);
  const auto crossed = test::run_cli("compare " + dir + "/a/report.json " + dir + "/b/report.json --threshold 0.01");
  CHECK(crossed.exit_code == 3);
  CHECK(crossed.output.find("throughput.requests_per_s") != std::string::npos);
  CHECK(test::run_cli("compare " + dir + "/a/report.json " + dir + "/b/report.json --threshold 1000").exit_code == 0);
  CHECK(test::run_cli("compare " + dir + "/a/report.json " + scen).exit_code == 2);
  CHECK(test::run_cli("compare " + dir + "/a/report.json " + dir + "/a/report.json --threshold x").exit_code == 2);
}

TEST_CASE("roofline: per-op gap = launch + small-shape + bandwidth; peak_frac <= 1") {
  const Scenario s = test::scenario_from(test::base_scenario());
  for (int batch : {1, 64}) {
    BatchShape shape;
    for (int i = 0; i < batch; ++i) shape.add_decode(2048);
    std::vector<Op> ops;
    build_iteration_ops(s.model, shape, s.precision, ops);
    const StepTime step = estimate_step(ops, s.hw, s.precision.weights, s.engine.launch, batch);
    const RooflineResult r = roofline(ops, step, s.hw, s.precision.weights);
    double sum = 0, launch = 0, small = 0, bandwidth = 0;
    for (const auto& o : r.ops) {
      CHECK(o.peak_frac <= 1.0 + 1e-12);
      CHECK(o.predicted_time_s == doctest::Approx(o.roofline_time_s + o.gap_launch_s + o.gap_small_shape_s + o.gap_bandwidth_s));
      sum += o.predicted_time_s;
      launch += o.gap_launch_s;
      small += o.gap_small_shape_s;
      bandwidth += o.gap_bandwidth_s;
    }
    CHECK(sum == doctest::Approx(r.gpu_s));
    // The totals are the sums of the per-op parts, and with the roofline they make up GPU time.
    CHECK(r.gap_launch_s == doctest::Approx(launch));
    CHECK(r.gap_small_shape_s == doctest::Approx(small));
    CHECK(r.gap_bandwidth_s == doctest::Approx(bandwidth));
    CHECK(r.roofline_s + r.gap_launch_s + r.gap_small_shape_s + r.gap_bandwidth_s == doctest::Approx(r.gpu_s));
    CHECK(r.ridge_point_flops_per_byte == doctest::Approx(s.hw.peak_flops(s.precision.weights) / s.hw.hbm_bandwidth_bytes_per_s));
  }
}

TEST_CASE("sweep/saturate/roofline/plan CLIs: --json parses, bad flags exit 2") {
  const std::string scen = test::write_temp("cli.json", test::base_scenario().dump());
  const auto sweep = test::run_cli("sweep " + scen + " --grid engine.max_num_seqs=8,16 --json");
  REQUIRE(sweep.exit_code == 0);
  CHECK(nlohmann::json::parse(sweep.output).size() == 2);
  const auto roof = test::run_cli("roofline --model llama-2-7b --hw a100-80gb-sxm --batch 8 --context 2048 --json");
  REQUIRE(roof.exit_code == 0);
  const auto rj = nlohmann::json::parse(roof.output);
  for (const char* k : {"name", "flops", "bytes", "arithmetic_intensity", "bound", "roofline_time_s", "predicted_time_s", "peak_frac"}) {
    CHECK(rj["ops"][0].contains(k));
  }
  CHECK(rj.contains("gap_totals"));

  // step and roofline time the same step the same way (host overhead included in both).
  const auto step = test::run_cli("step --model llama-2-7b --hw a100-80gb-sxm --batch 8 --context 2048 --json");
  REQUIRE(step.exit_code == 0);
  const auto sj = nlohmann::json::parse(step.output);
  CHECK(sj["time_s"].get<double>() == rj["step_time_s"].get<double>());
  CHECK(sj["host_s"].get<double>() > 0.0);
  // Without --engine both price the step with the default engine, as `run` does (the flag's
  // default once went unread and steps were priced with no engine profile at all).
  CHECK(sj["engine"] == EngineConfig::kDefaultProfile);
  CHECK(rj["engine"] == EngineConfig::kDefaultProfile);
  const auto named = nlohmann::json::parse(
      test::run_cli(std::string("step --model llama-2-7b --hw a100-80gb-sxm --batch 8 --context 2048 --json --engine ") +
                    EngineConfig::kDefaultProfile).output);
  CHECK(named["time_s"].get<double>() == sj["time_s"].get<double>());
  const auto generic = nlohmann::json::parse(
      test::run_cli("step --model llama-2-7b --hw a100-80gb-sxm --batch 8 --context 2048 --json --engine generic").output);
  CHECK(generic["engine"] == "generic");
  CHECK(generic["host_overhead_per_step_s"].get<double>() != sj["host_overhead_per_step_s"].get<double>());
  // No silent context 0 for a decode step; a model that does not fit is refused, naming the flag.
  const auto no_context = test::run_cli("roofline --model llama-2-7b --hw a100-80gb-sxm --batch 8");
  CHECK(no_context.exit_code == 2);
  CHECK(no_context.output.find("--context: required for a decode step") != std::string::npos);
  const auto too_big = test::run_cli("step --model llama-2-70b --hw a10 --batch 1 --context 100");
  CHECK(too_big.exit_code == 2);
  CHECK(too_big.output.find("servesim step: --hw: llama-2-70b on a10 does not fit: 138 GB of weights") != std::string::npos);
  const auto kv = test::run_cli("roofline --model llama-3-8b --hw a10 --batch 256 --context 8000");
  CHECK(kv.exit_code == 2);
  CHECK(kv.output.find("servesim roofline: --batch: 256 sequences of 8001 tokens need") != std::string::npos);

  CHECK(test::run_cli("sweep " + scen + " --grid nokey").exit_code == 2);
  CHECK(test::run_cli("sweep " + scen + " --grid engine.max_num_seqs=-1").exit_code == 2);
  CHECK(test::run_cli("saturate " + scen).exit_code == 2);  // no latency target, timeout or queue limit
  CHECK(test::run_cli("saturate " + scen + " --slo ttft=abc").exit_code == 2);
  CHECK(test::run_cli("plan --model llama-2-7b --rate 1").exit_code == 2);  // no --slo
  CHECK(test::run_cli("run " + scen + " --out /tmp/x --load-profile 'rps=0'").exit_code == 2);
}

TEST_CASE("sweep --replications says when the seeds cannot differ (a trace), so a ci95 of 0 is not read as precision") {
  std::string rows;
  for (int i = 0; i < 30; ++i) rows += "{\"arrival_s\": " + std::to_string(0.3 * i) + ", \"prompt_tokens\": 200, \"output_tokens\": 20}\n";
  auto doc = test::base_scenario();
  doc["workload"] = {{"trace", {{"path", test::write_temp("sweep_reps_trace.jsonl", rows)}, {"format", "jsonl"}}},
                     {"arrival", {{"impl", "trace"}}},
                     {"prompt_tokens", {{"impl", "trace"}}},
                     {"output_tokens", {{"impl", "trace"}}}};
  const std::string trace = test::write_temp("sweep_reps_trace.json", doc.dump());
  const auto text = test::run_cli("sweep " + trace + " --grid engine.max_num_seqs=4,16 --replications 3 2>/dev/null");
  REQUIRE(text.exit_code == 0);
  CHECK(text.output.find("identical_replications: in 2 of 2 rows the 3 seeds gave identical runs") != std::string::npos);
  const auto json = test::run_cli("sweep " + trace + " --grid engine.max_num_seqs=4 --replications 3 --json 2>/dev/null");
  const auto rows_json = nlohmann::json::parse(json.output);
  CHECK(rows_json[0]["identical_replications"] == true);
  CHECK(rows_json[0]["latency.ttft_s.p99.ci95"] == 0.0);
  // Poisson arrivals draw from the seed: the runs differ and nothing is said.
  const std::string poisson = test::write_temp("sweep_reps_poisson.json", test::base_scenario().dump());
  const auto random = test::run_cli("sweep " + poisson + " --grid engine.max_num_seqs=16 --replications 3 2>/dev/null");
  CHECK(random.output.find("identical_replications:") == std::string::npos);
  const auto random_json = nlohmann::json::parse(test::run_cli("sweep " + poisson + " --grid engine.max_num_seqs=16 --replications 3 --json 2>/dev/null").output);
  CHECK(random_json[0]["identical_replications"] == false);
}
