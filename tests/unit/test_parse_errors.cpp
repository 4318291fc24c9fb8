// Bad input: one line naming the file and the JSON path, exit code 2, never a crash.
#include <doctest/doctest.h>

#include <string>

#include "../support.hpp"
#include "sim/core/error.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("the base scenario parses") { CHECK(parse_error(base_scenario()) == ""); }

TEST_CASE("unknown key names its path") {
  auto doc = base_scenario();
  doc["engine"]["max_num_seq"] = 3;
  const auto msg = parse_error(doc);
  CHECK(contains(msg, "test.json: engine.max_num_seq: unknown key"));
}

TEST_CASE("wrong type names its path and the type") {
  auto doc = base_scenario();
  doc["engine"]["block_size"] = "sixteen";
  CHECK(contains(parse_error(doc), "engine.block_size: must be an integer, got a string"));
}

TEST_CASE("negative and zero rates are rejected") {
  auto doc = base_scenario();
  doc["workload"]["arrival"]["rate_per_s"] = -3;
  CHECK(contains(parse_error(doc), "workload.arrival.rate_per_s: must be > 0, got -3"));
  doc["workload"]["arrival"]["rate_per_s"] = 0;
  CHECK(contains(parse_error(doc), "workload.arrival.rate_per_s: must be > 0"));
}

TEST_CASE("unknown model and hardware names suggest close ones, else list the bundled ones") {
  auto doc = base_scenario();
  doc["model"] = "llama-9-1t";
  CHECK(contains(parse_error(doc), "test.json: model: unknown model 'llama-9-1t'; did you mean"));
  doc = base_scenario();
  doc["hardware"] = "tpu-v9";
  CHECK(contains(parse_error(doc), "hardware: unknown GPU 'tpu-v9' (bundled: a10, a100-40gb-pcie"));
  doc["hardware"] = "h100";
  CHECK(contains(parse_error(doc), "hardware: unknown GPU 'h100'; did you mean h100-pcie or h100-sxm?"));
  doc["hardware"] = "a100-80gb-smx";  // a typo
  CHECK(contains(parse_error(doc), "hardware: unknown GPU 'a100-80gb-smx'; did you mean a100-80gb-sxm?"));
  const auto r = run_cli("step --model llama-3-8b --hw h100 --batch 1 --context 128");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "servesim: error: servesim step: --hw: unknown GPU 'h100'; did you mean h100-pcie or h100-sxm?\n");
}

TEST_CASE("a model that does not fit in GPU memory is bad input") {
  auto doc = base_scenario();
  doc["model"] = "llama-2-70b";
  doc["hardware"] = "a10";
  const auto msg = parse_error(doc);
  CHECK(msg == "");  // parsing succeeds; the memory plan is where it fails
  const auto r = run_cli("run " + write_temp("70b_on_a10.json", doc.dump()) + " --out /tmp/servesim_test_out");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "model: model llama-2-70b does not fit on a10"));
}

TEST_CASE("CLI: missing file, bad JSON, bad --set: exit 2 with one line") {
  auto r = run_cli("run /nonexistent/scenario.json");
  CHECK(r.exit_code == 2);
  CHECK(r.output == "servesim: error: /nonexistent/scenario.json: file not found\n");

  r = run_cli("run " + write_temp("broken.json", "{\"name\": ") + " --out /tmp/servesim_test_out");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "invalid JSON"));

  r = run_cli("run " + write_temp("ok.json", base_scenario().dump()) + " --out /tmp/servesim_test_out --set workload.arrival.rate_per_s=-1");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "workload.arrival.rate_per_s: must be > 0, got -1"));

  r = run_cli("run " + write_temp("ok2.json", base_scenario().dump()) + " --out /tmp/servesim_test_out --set engine.bogus=1");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "engine.bogus: unknown key"));

  r = run_cli("step --model llama-2-7b --hw a100-80gb-sxm --batch -4");
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "--batch: must be in [1, 1048576]"));

  r = run_cli("frobnicate");
  CHECK(r.exit_code == 2);
}

TEST_CASE("--set overrides are validated like the file and change the run") {
  const auto path = write_temp("set.json", base_scenario().dump());
  const auto r = run_cli("run " + path + " --out /tmp/servesim_test_set --quiet --set workload.num_requests=5");
  REQUIRE(r.exit_code == 0);
  const auto report = load_json_file("/tmp/servesim_test_set/report.json");
  CHECK(report["requests"]["arrived"] == 5);
  CHECK(report["scenario"]["workload"]["num_requests"] == 5);
}

TEST_CASE("Hugging Face config.json files of each supported family parse") {
  const auto llama = nlohmann::json::parse(R"({"model_type":"llama","architectures":["LlamaForCausalLM"],
    "hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,
    "intermediate_size":14336,"vocab_size":128256,"max_position_embeddings":8192,"tie_word_embeddings":false,
    "rope_theta":500000.0,"torch_dtype":"bfloat16"})");
  const auto path = write_temp("config.json", llama.dump());
  auto r = run_cli("step --model " + path + " --hw h100-sxm --batch 1 --context 100 --json");
  REQUIRE(r.exit_code == 0);
  const auto hf = nlohmann::json::parse(r.output);
  r = run_cli("step --model llama-3-8b --hw h100-sxm --batch 1 --context 100 --json");
  REQUIRE(r.exit_code == 0);
  const auto card = nlohmann::json::parse(r.output);
  CHECK(hf["time_s"].get<double>() == doctest::Approx(card["time_s"].get<double>()).epsilon(1e-12));

  const auto glm = nlohmann::json::parse(R"({"model_type":"chatglm","num_layers":28,"hidden_size":4096,
    "num_attention_heads":32,"multi_query_attention":true,"multi_query_group_num":2,"kv_channels":128,
    "ffn_hidden_size":13696,"padded_vocab_size":65024,"seq_length":8192})");
  const ModelSpec m = parse_model(glm, "glm/config.json");
  CHECK(m.num_kv_heads == 2);
  CHECK(m.name == "glm");

  const auto unsupported = nlohmann::json::parse(R"({"model_type":"mamba"})");
  CHECK_THROWS_WITH_AS(parse_model(unsupported, "x/config.json"), doctest::Contains("unsupported model_type 'mamba'"), InputError);
}

TEST_CASE("policy keys: unknown policy lists the registered ones; a key of another policy is unknown") {
  auto doc = base_scenario();
  doc["engine"]["scheduler"] = {{"impl", "magic"}};
  CHECK(contains(parse_error(doc), "engine.scheduler.impl: unknown scheduler 'magic' (static, dynamic, continuous, chunked-prefill, inflight, token-level)"));
  doc["engine"]["scheduler"] = {{"impl", "continuous"}, {"batch_size", 8}};
  CHECK(contains(parse_error(doc), "engine.scheduler.batch_size: only read with impl static"));
  doc["engine"]["scheduler"] = {{"impl", "static"}, {"batch_size", 0}};
  CHECK(contains(parse_error(doc), "engine.scheduler.batch_size: must be"));
  doc["engine"]["scheduler"] = {{"impl", "static"}, {"batch_size", 65}};
  CHECK(contains(parse_error(doc), "engine.scheduler.batch_size: must be <= engine.max_num_seqs (64)"));
  doc["engine"]["scheduler"] = {{"impl", "dynamic"}, {"max_queue_delay_s", -1}};
  CHECK(contains(parse_error(doc), "engine.scheduler.max_queue_delay_s"));
  doc["engine"]["scheduler"] = {{"impl", "continuous"}, {"scheduling_policy", "lifo"}};
  CHECK(contains(parse_error(doc), "engine.scheduler.scheduling_policy: must be one of fcfs, priority, got 'lifo'"));
  doc["engine"]["scheduler"] = {{"impl", "continuous"}, {"max_waiting_time_s", 0}};
  CHECK(contains(parse_error(doc), "engine.scheduler.max_waiting_time_s: must be > 0"));
}

TEST_CASE("KV and workload keys of batching studies are checked") {
  auto doc = base_scenario();
  doc["engine"]["kv_reservation"] = "chunky";
  CHECK(contains(parse_error(doc), "engine.kv_reservation: must be one of paged, contiguous, token"));
  doc = base_scenario();
  doc["engine"]["kv_reservation"] = "contiguous";
  doc["engine"]["enable_prefix_caching"] = true;
  CHECK(contains(parse_error(doc), "engine.enable_prefix_caching: needs kv_reservation paged"));
  doc = base_scenario();
  doc["engine"]["preemption_mode"] = "drop";
  CHECK(contains(parse_error(doc), "engine.preemption_mode: must be one of recompute, swap"));
  doc = base_scenario();
  doc["engine"]["max_num_batched_tokens"] = 512;
  CHECK(contains(parse_error(doc), "engine.max_num_batched_tokens: must be >= max_model_len"));
  doc["engine"]["scheduler"] = {{"impl", "chunked-prefill"}, {"long_prefill_token_threshold", 256}};
  CHECK(parse_error(doc) == "");  // chunked prefill may split prompts
  doc = base_scenario();
  doc["workload"]["shared_prefix"] = {{"num_prefixes", 0}, {"prefix_tokens", 10}};
  CHECK(contains(parse_error(doc), "workload.shared_prefix.num_prefixes: must be"));
  doc = base_scenario();
  doc["workload"]["sessions"] = {{"turns", 3}, {"think_s", 1}};
  CHECK(contains(parse_error(doc), "workload.sessions.think_s: unknown key"));
  doc = base_scenario();
  doc["workload"]["priority_class_weights"] = {1, -2};
  CHECK(contains(parse_error(doc), "workload.priority_class_weights: must be an array of 1 to 16 numbers in (0, 1e+300], got -2"));
  doc["workload"]["priority_class_weights"] = {1e308, 1e308};  // summed to inf: NaN class frequencies
  CHECK(contains(parse_error(doc), "workload.priority_class_weights: must be an array of 1 to 16 numbers in (0, 1e+300], got 1e+308"));
}

TEST_CASE("--set takes JSON arrays and objects with commas as one value") {
  const std::string path = write_temp("commas.json", base_scenario().dump());
  const auto r = run_cli("run " + path + " --quiet --out /tmp/servesim_test_commas --set 'workload.priority_class_weights=[1,3]' "
                         "--set 'engine.scheduler={\"impl\":\"dynamic\",\"max_batch_size\":4}'");
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  const auto report = load_json_file("/tmp/servesim_test_commas/report.json");
  CHECK(report["scenario"]["workload"]["priority_class_weights"] == nlohmann::json::array({1.0, 3.0}));
  CHECK(report["scenario"]["engine"]["scheduler"]["max_batch_size"] == 4);
}

TEST_CASE("--set reads the value as its key's declared type") {
  nlohmann::json doc = base_scenario();
  apply_override(doc, "name=2024", "s.json");  // a string key takes the text as written
  CHECK(doc["name"] == "2024");
  apply_override(doc, "model=\"llama-2-7b\"", "s.json");  // a JSON string literal is unquoted
  CHECK(doc["model"] == "llama-2-7b");
  apply_override(doc, "workload.prompt_tokens.impl=fixed", "s.json");  // through the <length> schema
  CHECK(doc["workload"]["prompt_tokens"]["impl"] == "fixed");
  apply_override(doc, "workload.num_requests=12", "s.json");
  CHECK(doc["workload"]["num_requests"] == 12);
  apply_override(doc, "engine.enable_prefix_caching=true", "s.json");
  CHECK(doc["engine"]["enable_prefix_caching"] == true);
  CHECK(parse_error(doc) == "");
  CHECK_THROWS_WITH_AS(apply_override(doc, "workload.num_requests=twelve", "s.json"),
                       doctest::Contains("workload.num_requests: --set: expected an integer, got 'twelve'"), InputError);
  CHECK_THROWS_WITH_AS(apply_override(doc, "workload.prompt_tokens.mean_tokens=many", "s.json"),
                       doctest::Contains("--set: expected a number, got 'many'"), InputError);
  CHECK_THROWS_WITH_AS(apply_override(doc, "engine.scheduler=dynamic", "s.json"), doctest::Contains("--set: expected an object"),
                       InputError);
  // An undeclared key keeps the text for the parser, which names it with the close keys.
  apply_override(doc, "engine.max_num_seq=abc", "s.json");
  CHECK(doc["engine"]["max_num_seq"] == "abc");
  CHECK(contains(parse_error(doc), "engine.max_num_seq: unknown key"));
}

TEST_CASE("engine profile: fused_fp8_input_quant takes distinct GEMM-input names; bad values exit 2 naming file and key") {
  const auto base = nlohmann::json::parse(R"({"name":"x","kernels_per_layer":{"fused_fp8_input_quant":["o_proj","down"]},
      "cuda_graphs":{"decode":true},"host":{"overhead_per_step_s":0,"overhead_per_seq_s":0},
      "defaults":{"scheduler":"continuous","kv_cache":"paged","block_size":16}})");
  CHECK(parse_engine_profile(base, "x.json").kernels.fused_fp8_input_quant ==
        (static_cast<unsigned>(InputQuantSite::o_proj) | static_cast<unsigned>(InputQuantSite::down)));
  auto doc = base;
  doc["kernels_per_layer"].erase("fused_fp8_input_quant");
  CHECK(parse_engine_profile(doc, "x.json").kernels.fused_fp8_input_quant == 0);  // absent: four kernels
  const auto error_of = [&](const nlohmann::json& value, int act_kernels = 1) {
    auto d = base;
    d["kernels_per_layer"]["fused_fp8_input_quant"] = value;
    d["kernels_per_layer"]["act_kernels"] = act_kernels;
    try {
      parse_engine_profile(d, "x.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(contains(error_of("o_proj"), "x.json: kernels_per_layer.fused_fp8_input_quant: must be an array of distinct names"));
  CHECK(contains(error_of({"o_proj", "attn"}), "kernels_per_layer.fused_fp8_input_quant[1]: must be an array of distinct names from qkv, o_proj, gate_up, down, got 'attn'"));
  CHECK(contains(error_of({"down", "down"}), "kernels_per_layer.fused_fp8_input_quant[1]: 'down' is listed twice"));
  CHECK(contains(error_of({1}), "kernels_per_layer.fused_fp8_input_quant[0]: must be an array"));
  CHECK(contains(error_of({"down"}, 2), "kernels_per_layer.fused_fp8_input_quant: down needs act_kernels 1"));
  CHECK(error_of(nlohmann::json::array()) == "");
  // Through the CLI: exit code 2, one line naming the file and the key.
  auto bad = base;
  bad["kernels_per_layer"]["fused_fp8_input_quant"] = {"o_proj", "attn"};
  const std::string path = write_temp("engine_fused_quant.json", bad.dump());
  const auto r = run_cli("step --model llama-3.1-8b --hw h100-sxm --batch 1 --context 128 --quant fp8 --engine " + path);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, path + ": kernels_per_layer.fused_fp8_input_quant[1]: "));
}
