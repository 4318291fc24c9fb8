// `servesim validate --against FILE`: the bundled example result files (data/examples/, one or two
// per format) are read as their formats define them, the scenario built from each carries the
// file's load, request count and lengths, and the comparison puts the file's figures beside
// servesim's. Bad files exit 2 naming the file and the key.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/validate/against.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {

std::string example(const std::string& name) { return std::string(servesim::test::reference_dir()) + "/examples/" + name; }

AgainstOptions on_h100(std::vector<std::string> more = {}) {
  AgainstOptions o;
  o.overrides = {"hardware=h100-sxm"};
  o.overrides.insert(o.overrides.end(), more.begin(), more.end());
  return o;
}

// The InputError a (changed) result document raises when read, or "".
std::string read_error(const nlohmann::json& doc, const BenchReadOptions& o = {}) {
  try {
    read_bench_result(doc, "bad.json", o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("vllm bench serve result (max_concurrency 16, rate inf): read, replayed as a closed loop of 16 clients") {
  const AgainstCase c = against_case(example("vllm-bench-concurrency16.json"), on_h100());
  const BenchResult& b = c.bench;
  CHECK(b.format == BenchFormat::vllm_bench);
  CHECK(b.model == "meta-llama/Llama-3.1-8B-Instruct");
  CHECK(b.load.concurrency == 16);
  CHECK(b.load.rate_per_s == 0.0);
  CHECK(b.load.num_requests == 200);
  CHECK(b.completed == 200);
  CHECK(b.prompt.mean == doctest::Approx(512.0));  // total_input_tokens / completed
  CHECK(b.output.mean == doctest::Approx(128.0));
  CHECK(b.latency.at("ttft").at("p50") == doctest::Approx(0.0409));  // median_ttft_ms
  CHECK(b.latency.at("ttft").at("p99") == doctest::Approx(0.1183));
  CHECK(b.latency.at("tpot").at("mean") == doctest::Approx(0.00645));
  CHECK(b.latency.at("itl").at("p99") == doctest::Approx(0.0146));
  CHECK(b.latency.count("e2e") == 0);  // e2el only with --percentile-metrics naming it
  CHECK(*b.requests_per_s == doctest::Approx(18.30));
  CHECK(*b.output_tokens_per_s == doctest::Approx(2342.2));
  const Scenario& s = c.scenario;
  CHECK(s.model.name == "llama-3.1-8b");
  CHECK(s.hw.name == "h100-sxm");
  CHECK(s.engine.profile.name == "vllm");
  CHECK(c.scenario_doc["workload"]["arrival"] == nlohmann::json({{"impl", "concurrency"}, {"clients", 16}}));
  CHECK(s.workload.num_requests == 200);
  CHECK(c.scenario_doc["workload"]["prompt_tokens"] == nlohmann::json({{"impl", "fixed"}, {"value_tokens", 512}}));
  CHECK(c.scenario_doc["workload"]["output_tokens"] == nlohmann::json({{"impl", "fixed"}, {"value_tokens", 128}}));

  const SimResult res = simulate(c.scenario);
  CHECK(res.metrics.completed == 200);
  const std::vector<AgainstRow> rows = compare_against(c.bench, res);
  CHECK(rows.size() == 3 * 3 + 2);  // ttft, tpot, itl at mean, p50, p99; two throughputs
  for (const AgainstRow& r : rows) {
    CAPTURE(r.metric);
    CAPTURE(r.statistic);
    CHECK(r.predicted > 0.0);
    CHECK(r.error() == doctest::Approx(r.predicted / r.measured - 1.0));
  }
  const AgainstRow* tpot = find_row(rows, "tpot", "p50");
  REQUIRE(tpot);
  CHECK(tpot->measured == doctest::Approx(0.00641));
  CHECK(tpot->predicted == doctest::Approx(res.metrics.tpot_s.quantile(0.5)));
  const AgainstRow* rps = find_row(rows, "throughput", "requests_per_s");
  REQUIRE(rps);
  CHECK(rps->predicted == doctest::Approx(200.0 / ns_to_seconds(res.metrics.end_ns)));
}

TEST_CASE("vllm bench serve --save-detailed: per-request lengths, statistics from the lists, --metadata tp") {
  const std::string file = example("vllm-bench-rate2-detailed.json");
  const AgainstCase c = against_case(file, on_h100());
  const BenchResult& b = c.bench;
  CHECK(b.load.rate_per_s == 2.0);
  CHECK(b.load.arrival == "poisson");  // burstiness 1
  CHECK(b.tensor_parallel_size == 1);  // "tensor_parallel_size": "1", a --metadata string
  CHECK(b.prompt.per_request.size() == 10);
  CHECK(c.scenario_doc["workload"]["prompt_tokens"]["impl"] == "empirical");
  CHECK(c.scenario_doc["workload"]["arrival"] == nlohmann::json({{"impl", "poisson"}, {"rate_per_s", 2.0}}));
  CHECK(c.scenario.model.name == "qwen3-8b");
  // Without the summary's p90, the reader computes it from the lists as serve.py does (numpy's
  // linear percentile): the same value.
  nlohmann::json doc = load_json_file(file);
  for (const char* key : {"p90_ttft_ms", "p90_tpot_ms", "p90_itl_ms", "p90_e2el_ms"}) doc.erase(key);
  const BenchResult from_lists = read_bench_result(doc, file);
  for (const char* metric : {"ttft", "tpot", "itl", "e2e"}) {
    CAPTURE(metric);
    CHECK(from_lists.latency.at(metric).at("p90") == doctest::Approx(b.latency.at(metric).at("p90")).epsilon(1e-6));
  }
  // burstiness k: gamma gaps of cv 1 / sqrt(k).
  doc["burstiness"] = 4.0;
  const BenchResult bursty = read_bench_result(doc, file);
  CHECK(bursty.load.arrival == "gamma");
  CHECK(bursty.load.cv == doctest::Approx(0.5));
}

TEST_CASE("inference-perf lifecycle metrics: two stream events per token found and TPOT doubled; the summary's rate") {
  const std::string file = example("inference-perf-stage_0_lifecycle_metrics.json");
  const AgainstCase c = against_case(file, on_h100({"model=llama-2-7b"}));
  const BenchResult& b = c.bench;
  CHECK(b.format == BenchFormat::inference_perf);
  CHECK(b.load.rate_per_s == 5.0);  // load_summary.requested_rate
  CHECK(b.load.num_requests == 600);
  CHECK(c.scenario_doc["workload"]["arrival"]["impl"] == "poisson");
  // Its ITL median (27 us) is under a quarter of its TPOT median (3.46 ms): two events per token.
  CHECK(b.latency.at("tpot").at("p50") == doctest::Approx(2 * 0.00346));
  CHECK(b.latency.at("tpot").at("p90") == doctest::Approx(2 * 0.00373));
  CHECK(b.latency.count("itl") == 0);
  CHECK(b.latency.at("ttft").at("p50") == doctest::Approx(0.0251));  // seconds in the file
  CHECK(b.latency.at("e2e").at("p99") == doctest::Approx(2.071));
  CHECK(b.prompt.mean == doctest::Approx(577.8));
  CHECK(b.prompt.stddev == doctest::Approx((585.0 - 571.0) / 2.5631));  // p10 .. p90
  CHECK(c.scenario_doc["workload"]["prompt_tokens"]["impl"] == "normal");
  CHECK(c.scenario_doc["workload"]["prompt_tokens"]["min_tokens"] == 566);
  CHECK(c.scenario_doc["workload"]["prompt_tokens"]["max_tokens"] == 591);
  // Read as one event per token: the file's figures as they are.
  BenchReadOptions one;
  one.events_per_token = 1;
  const BenchResult as_is = read_bench_result(load_json_file(file), file, one);
  CHECK(as_is.latency.at("tpot").at("p50") == doctest::Approx(0.00346));
  CHECK(as_is.latency.at("itl").at("p50") == doctest::Approx(0.0000271));
  // A summary of every stage has no requested rate: the completed requests per second stand in.
  nlohmann::json summary = load_json_file(file);
  for (const char* key : {"send_duration", "requested_rate", "achieved_rate"}) summary["load_summary"].erase(key);
  CHECK(read_bench_result(summary, "summary_lifecycle_metrics.json").load.rate_per_s == doctest::Approx(4.981));
}

TEST_CASE("GenAI-Perf profile export: concurrency from the config tree or the older argument list") {
  const std::string file = example("genai-perf-profile_export_genai_perf.json");
  const AgainstCase c = against_case(file, on_h100());
  const BenchResult& b = c.bench;
  CHECK(b.format == BenchFormat::genai_perf);
  CHECK(b.load.concurrency == 8);  // input_config.perf_analyzer.stimulus
  CHECK(b.load.num_requests == 240);  // request_count
  CHECK(b.latency.at("ttft").at("p50") == doctest::Approx(0.0529));  // ms in the file
  CHECK(b.latency.at("tpot").at("p50") == doctest::Approx(0.00827));  // its inter_token_latency, per request
  CHECK(b.latency.at("e2e").at("mean") == doctest::Approx(1.7124));
  CHECK(*b.output_tokens_per_s == doctest::Approx(924.0));
  CHECK(c.scenario.model.name == "mistral-7b");
  CHECK(c.scenario_doc["workload"]["output_tokens"] == nlohmann::json({{"impl", "fixed"}, {"value_tokens", 200}}));  // std 0
  CHECK(c.scenario_doc["workload"]["arrival"] == nlohmann::json({{"impl", "concurrency"}, {"clients", 8}}));
  // Before March 2025 input_config was the argument list: model [...], concurrency, request_rate.
  nlohmann::json old = load_json_file(file);
  old["input_config"] = {{"model", {"mistralai/Mistral-7B-Instruct-v0.2"}}, {"concurrency", nullptr}, {"request_rate", 3.0}};
  const BenchResult o = read_bench_result(old, file);
  CHECK(o.model == "mistralai/Mistral-7B-Instruct-v0.2");
  CHECK(o.load.rate_per_s == 3.0);
  CHECK(o.load.arrival == "constant");
}

TEST_CASE("--scenario gives what the file does not, --set wins over both") {
  const std::string scenario = test::write_temp("against_base.json", R"({"name": "mine", "hardware": "a100-80gb-sxm",
    "engine": {"profile": "generic"}, "workload": {"duration_s": 5, "arrival": {"impl": "poisson", "rate_per_s": 1}}})");
  AgainstOptions o;
  o.scenario_path = scenario;
  o.overrides = {"parallel.tensor_parallel_size=2"};
  const AgainstCase c = against_case(example("vllm-bench-concurrency16.json"), o);
  CHECK(c.scenario.hw.name == "a100-80gb-sxm");
  CHECK(c.scenario.engine.profile.name == "generic");
  CHECK(c.scenario.parallel.tensor_parallel_size == 2);
  CHECK(c.scenario.model.name == "llama-3.1-8b");  // the file's
  CHECK(c.scenario_doc["workload"]["arrival"]["impl"] == "concurrency");  // the file's load, not the scenario's
  CHECK_FALSE(c.scenario_doc["workload"].contains("duration_s"));
  std::remove(scenario.c_str());
}

TEST_CASE("bad result files: one line naming the file and the key") {
  const nlohmann::json good = load_json_file(example("vllm-bench-concurrency16.json"));
  nlohmann::json missing = good;
  missing.erase("completed");
  CHECK(read_error(missing) == "bad.json: completed: missing required key");
  nlohmann::json wrong_type = good;
  wrong_type["request_rate"] = "fast";
  CHECK(read_error(wrong_type) == "bad.json: request_rate: must be a number > 0 or \"inf\"");
  nlohmann::json negative = good;
  negative["request_rate"] = -2.0;
  CHECK(read_error(negative) == "bad.json: request_rate: must be > 0, got -2");
  nlohmann::json none_done = good;
  none_done["completed"] = 0;
  CHECK(read_error(none_done).rfind("bad.json: completed: must be in [1, ", 0) == 0);
  CHECK(read_error(nlohmann::json{{"foo", 1}}).rfind("bad.json: (top level): not a result file servesim reads", 0) == 0);
  nlohmann::json genai = load_json_file(example("genai-perf-profile_export_genai_perf.json"));
  genai["time_to_first_token"]["unit"] = "s";
  CHECK(read_error(genai) == "bad.json: time_to_first_token.unit: must be \"ms\"");
  nlohmann::json ip = load_json_file(example("inference-perf-stage_0_lifecycle_metrics.json"));
  ip["successes"]["latency"]["time_to_first_token"]["median"] = "25 ms";
  CHECK(read_error(ip).rfind("bad.json: successes.latency.time_to_first_token.median: must be a number", 0) == 0);
  BenchReadOptions as_genai;
  as_genai.format = BenchFormat::genai_perf;
  CHECK(read_error(good, as_genai) == "bad.json: time_to_first_token: missing required key");
  // No card for the file's model and none given; no GPU given.
  AgainstOptions o = on_h100();
  nlohmann::json unknown = good;
  unknown["model_id"] = "acme/NotAModel-3B";
  const std::string path = test::write_temp("against_unknown.json", unknown.dump());
  try {
    against_case(path, o);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == path + ": model_id: no bundled card matches 'acme/NotAModel-3B' (servesim list models): give --set model=NAME");
  }
  o.overrides.push_back("model=llama-3-8b");
  CHECK(against_case(path, o).scenario.model.name == "llama-3-8b");
  try {
    against_case(example("vllm-bench-concurrency16.json"), AgainstOptions{});
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(": hardware: the file does not say which GPU served it") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("validate --against on the command line: the table, --json, exit 2 on a bad file") {
  const test::CommandResult text = test::run_cli("validate --against " + example("vllm-bench-concurrency16.json") + " --set hardware=h100-sxm");
  CHECK(text.exit_code == 0);
  CHECK(text.output.find("load: a closed loop of 16 clients") != std::string::npos);
  CHECK(text.output.find("tpot       p50") != std::string::npos);
  const test::CommandResult json =
      test::run_cli("validate --against " + example("genai-perf-profile_export_genai_perf.json") + " --set hardware=h100-sxm --json");
  REQUIRE(json.exit_code == 0);
  const nlohmann::json out = nlohmann::json::parse(json.output);
  CHECK(out["format"] == "genai-perf");
  CHECK(out["scenario"]["workload"]["arrival"]["clients"] == 8);
  CHECK(out["rows"].size() == 3 * 5 + 2);  // ttft, tpot, e2e at mean, p50, p90, p95, p99; two throughputs
  CHECK(out["servesim"]["completed"] == 240);
  const test::CommandResult bad = test::run_cli("validate --against " + example("README.md"));
  CHECK(bad.exit_code == 2);
  const test::CommandResult flag = test::run_cli("validate --against " + example("vllm-bench-concurrency16.json") + " --format vllm");
  CHECK(flag.exit_code == 2);
  CHECK(flag.output.find("--format: must be vllm-bench, inference-perf or genai-perf, got 'vllm'") != std::string::npos);
}
