// Issue 40 item 3 / issue 38: quantization.scope experts quantizes the routed experts alone
// (GPT-OSS's MXFP4 checkpoints, ModelOpt's DeepSeek-R1 FP4 export): attention, router, shared
// experts, dense MLP layers, embedding and LM head stay in the base dtype, in the ops the cost
// model prices and in the weights the memory plan holds.
#include <doctest/doctest.h>

#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/model/ops.hpp"
#include "sim/serve/memory_plan.hpp"
#include "tests/op_lookup.hpp"
#include "tests/support.hpp"

using namespace servesim;
using servesim::test::find_op;

namespace {
ModelSpec card(const std::string& name) { return load_model(resolve_data_ref("models", name, "", "")); }

Precision scheme(QuantScheme q, QuantScope scope) {
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  p.quant = q;
  p.quant_scope = scope;
  return p;
}

std::vector<Op> decode_ops(const ModelSpec& m, const Precision& p, int batch, const KernelPlan& plan = KernelPlan{}) {
  BatchShape b;
  for (int i = 0; i < batch; ++i) b.add_decode(2048);
  std::vector<Op> ops;
  build_iteration_ops(m, b, p, ops, plan);
  return ops;
}

}  // namespace

TEST_CASE("scope experts: the routed experts' grouped GEMMs take the scheme, every other GEMM stays bf16") {
  const ModelSpec m = card("qwen3-30b-a3b");
  const HwProfile h = load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "", ""));
  const auto bf16 = decode_ops(m, scheme(QuantScheme::none, QuantScope::all), 8);
  const auto all = decode_ops(m, scheme(QuantScheme::w4a16_gptq, QuantScope::all), 8);
  const auto experts = decode_ops(m, scheme(QuantScheme::w4a16_gptq, QuantScope::experts), 8);
  REQUIRE(experts.size() == all.size());
  for (const char* name : {"qkv_proj", "o_proj", "moe_router", "lm_head"}) {
    INFO(name);
    const Op& e = find_op(experts, name);
    const Op& b = find_op(bf16, name);
    CHECK(e.quant == QuantScheme::none);
    CHECK(e.bytes == b.bytes);
    CHECK(estimate(e, h, Dtype::bf16).time_s == estimate(b, h, Dtype::bf16).time_s);
  }
  // Scope all quantizes the attention projections (the router and LM head never).
  CHECK(find_op(all, "qkv_proj").quant == QuantScheme::w4a16_gptq);
  CHECK(find_op(all, "o_proj").quant == QuantScheme::w4a16_gptq);
  CHECK(find_op(all, "qkv_proj").bytes < 0.5 * find_op(bf16, "qkv_proj").bytes);
  for (const char* name : {"experts_gate_up", "experts_down"}) {
    INFO(name);
    const Op& e = find_op(experts, name);
    const Op& a = find_op(all, name);
    CHECK(e.kind == OpKind::grouped_gemm);
    CHECK(e.quant == QuantScheme::w4a16_gptq);
    CHECK(e.bytes == a.bytes);
    CHECK(e.bytes < 0.5 * find_op(bf16, name).bytes);
    CHECK(estimate(e, h, Dtype::bf16).time_s == estimate(a, h, Dtype::bf16).time_s);
  }
}

TEST_CASE("scope experts with a w8a8 scheme: only the experts' inputs are quantized; shared experts and dense layers stay bf16") {
  // Generic plan: one quantize kernel per quantized GEMM input. Scope all: QKV, O, gate/up, down;
  // scope experts: gate/up and down (the experts'), each as wide as under scope all.
  const ModelSpec q3 = card("qwen3-30b-a3b");
  const auto all = decode_ops(q3, scheme(QuantScheme::fp8, QuantScope::all), 8);
  const auto experts = decode_ops(q3, scheme(QuantScheme::fp8, QuantScope::experts), 8);
  CHECK(find_op(all, "act_quant").per_layer == 4);
  CHECK(find_op(experts, "act_quant").per_layer == 2);
  const double t = 8.0, h = static_cast<double>(q3.hidden_size), ffn = static_cast<double>(q3.ffn_size);
  CHECK(find_op(experts, "act_quant").bytes == doctest::Approx(t * (h + ffn) / 2.0 * (2.0 + 1.0)));
  CHECK(find_op(experts, "experts_gate_up").quant == QuantScheme::fp8);
  // DeepSeek-V3: shared experts, 3 dense layers and MLA projections stay bf16 under scope experts.
  const ModelSpec ds = card("deepseek-v3");
  const auto ds_ops = decode_ops(ds, scheme(QuantScheme::fp8, QuantScope::experts), 8);
  for (const Op& op : ds_ops) {
    if (op.kind != OpKind::gemm && op.kind != OpKind::grouped_gemm) continue;
    INFO(op.name);
    CHECK(op.quant == (op.kind == OpKind::grouped_gemm ? QuantScheme::fp8 : QuantScheme::none));
  }
  CHECK(find_op(ds_ops, "shared_experts_gate_up").quant == QuantScheme::none);
  CHECK(find_op(ds_ops, "dense_mlp_gate_up_proj").quant == QuantScheme::none);
  CHECK(find_op(ds_ops, "mla_down_proj").quant == QuantScheme::none);
}

TEST_CASE("scope experts: weights are the routed experts at the scheme's bytes plus the rest in bf16") {
  // GPT-OSS-120B: 36 layers x 128 experts x (2880 x 2 x 2880 gate/up + 2880 x 2880 down).
  const ModelSpec oss = card("gpt-oss-120b");
  const double experts = 36.0 * 128.0 * 2880.0 * (3.0 * 2880.0);
  CHECK(experts == 114661785600.0);
  CHECK(oss.routed_expert_params() == experts);
  const double mxfp4 = 0.5 + 1.0 / 32.0;  // E2M1 and one E8M0 scale per 32
  const double want = (oss.total_params() - experts) * 2.0 + experts * mxfp4;
  CHECK(oss.weight_bytes(Dtype::bf16, QuantScheme::mxfp4, 128, QuantScope::experts) == doctest::Approx(want).epsilon(1e-12));
  CHECK(want / 1e9 == doctest::Approx(65.20).epsilon(0.001));  // the released checkpoint: 60.8 GiB = 65.3 GB
  // Scope all (unchanged): the attention projections at 4.25 bits too.
  CHECK(oss.weight_bytes(Dtype::bf16, QuantScheme::mxfp4, 128) == oss.weight_bytes(Dtype::bf16, QuantScheme::mxfp4, 128, QuantScope::all));
  CHECK(oss.weight_bytes(Dtype::bf16, QuantScheme::mxfp4, 128) < want);

  // Expert parallelism over 4 GPUs of tp 4: each holds 32 experts whole.
  const ModelSpec shard = oss.sharded(4, 4);
  CHECK(shard.routed_expert_params() == experts / 4.0);
  // tp 4 without EP: every GPU holds all 128 experts, each a quarter of its columns.
  CHECK(oss.sharded(4, 1).routed_expert_params() == experts / 4.0);

  // Qwen3-30B-A3B in w4a16 (GPTQ, groups of 128: 4 bits + a 16-bit scale and zero per group).
  const ModelSpec q3 = card("qwen3-30b-a3b");
  const double q3_experts = 48.0 * 128.0 * 2048.0 * (3.0 * 768.0);
  CHECK(q3.routed_expert_params() == q3_experts);
  const double w4 = quant_weight_bytes(QuantScheme::w4a16_gptq, Dtype::bf16, 128);
  CHECK(q3.weight_bytes(Dtype::bf16, QuantScheme::w4a16_gptq, 128, QuantScope::experts) ==
        doctest::Approx((q3.total_params() - q3_experts) * 2.0 + q3_experts * w4).epsilon(1e-12));

  // The memory plan holds that much.
  auto s = test::base_scenario();
  s["model"] = "gpt-oss-120b";
  s["hardware"] = "h100-sxm";
  s["dtype"] = "bf16";
  s["engine"]["max_model_len"] = 32768;  // 65.2 GB of weights leave KV for 117872 tokens, not the card's 131072
  s["quantization"] = {{"method", "mxfp4"}, {"scope", "experts"}};
  CHECK(test::parse_error(s) == "");
  const Scenario sc = test::scenario_from(s);
  CHECK(sc.precision.quant_scope == QuantScope::experts);
  const MemoryPlan plan = plan_memory(sc);
  CHECK(plan.weight_bytes == doctest::Approx(want).epsilon(1e-12));
  CHECK(plan.kv_blocks > 0);
}

TEST_CASE("quantization.scope refusals exit 2 naming the file and the key") {
  auto s = test::base_scenario();
  s["model"] = "qwen3-30b-a3b";
  s["hardware"] = "h100-sxm";
  s["quantization"] = {{"method", "fp8"}, {"scope", "attention"}};
  CHECK(test::parse_error(s).find("quantization.scope") != std::string::npos);
  s["quantization"]["scope"] = 3;
  CHECK(test::parse_error(s).find("quantization.scope") != std::string::npos);
  s["quantization"]["scope"] = "all";
  CHECK(test::parse_error(s) == "");
  s["model"] = "llama-3.1-8b";
  s["quantization"]["scope"] = "experts";
  const std::string dense = test::parse_error(s);
  CHECK(dense.find("quantization.scope") != std::string::npos);
  CHECK(dense.find("dense model") != std::string::npos);
  const std::string path = test::write_temp("scope_dense.json", s.dump());
  const auto refused = test::run_cli("run " + path + " --out " + path + ".out --quiet --no-html");
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("scope_dense.json") != std::string::npos);
  CHECK(refused.output.find("quantization.scope") != std::string::npos);

  const auto step_dense = test::run_cli("step --model llama-3.1-8b --hw h100-sxm --quant fp8 --quant-scope experts --batch 1 --context 128");
  CHECK(step_dense.exit_code == 2);
  CHECK(step_dense.output.find("--quant-scope") != std::string::npos);
  const auto step_bad = test::run_cli("step --model qwen3-30b-a3b --hw h100-sxm --quant fp8 --quant-scope router --batch 1 --context 128");
  CHECK(step_bad.exit_code == 2);
  CHECK(step_bad.output.find("--quant-scope") != std::string::npos);
}

TEST_CASE("servesim step --quant-scope experts says which ops are quantized; the report names the scope") {
  const auto step = test::run_cli("step --model gpt-oss-120b --hw h100-sxm --quant w4a16-gptq --quant-scope experts --batch 1 --context 2048");
  INFO(step.output);
  REQUIRE(step.exit_code == 0);
  CHECK(step.output.find("w4a16-gptq experts, bf16 elsewhere") != std::string::npos);
  CHECK(step.output.find("quantization scope experts: experts_gate_up, experts_down in w4a16-gptq") != std::string::npos);
  const auto all = test::run_cli("step --model gpt-oss-120b --hw h100-sxm --quant w4a16-gptq --batch 1 --context 2048");
  CHECK(all.exit_code == 0);
  CHECK(all.output.find("quantization scope") == std::string::npos);
  const auto json = test::run_cli("step --model gpt-oss-120b --hw h100-sxm --quant w4a16-gptq --quant-scope experts --batch 1 --context 2048 --json");
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.output.substr(json.output.find('{')));
  CHECK(j["quantization"]["scope"] == "experts");
  CHECK(j["quantization"]["quantized_ops"] == nlohmann::json::array({"experts_gate_up", "experts_down"}));
  const std::string all_json = test::run_cli("step --model gpt-oss-120b --hw h100-sxm --quant w4a16-gptq --batch 1 --context 2048 --json").output;
  const auto j_all = nlohmann::json::parse(all_json.substr(all_json.find('{')));
  CHECK(!j_all["quantization"].contains("scope"));
  // Attention stays bf16: the experts-only step reads more bytes and takes longer than scope all.
  CHECK(j["time_s"].get<double>() > j_all["time_s"].get<double>());
  CHECK(j["quantization"]["weight_bytes"].get<double>() > j_all["quantization"]["weight_bytes"].get<double>());

  // quant-table: every scheme's row on the experts alone, its weight bytes likewise.
  const auto table = test::run_cli("quant-table --model gpt-oss-120b --hw h100-sxm --quant-scope experts --context 2048 --json");
  REQUIRE(table.exit_code == 0);
  const auto t = nlohmann::json::parse(table.output.substr(table.output.find('{')));
  CHECK(t["quant_scope"] == "experts");
  for (const auto& row : t["schemes"]) {
    if (row["scheme"] == "w4a16-gptq") CHECK(row["weight_bytes"].get<double>() == j["quantization"]["weight_bytes"].get<double>());
  }

  auto s = test::base_scenario();
  s["model"] = "qwen3-30b-a3b";
  s["hardware"] = "h100-sxm";
  s["dtype"] = "bf16";
  s["quantization"] = {{"method", "fp8"}, {"scope", "experts"}};
  const std::string path = test::write_temp("scope_experts.json", s.dump());
  const auto run = test::run_cli("run " + path + " --out " + path + ".out --no-html --no-trace --no-csv");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("fp8 experts (bf16 elsewhere)") != std::string::npos);
  const auto report = load_json_file(path + ".out/report.json");
  CHECK(report["quantization"]["scope"] == "experts");
  CHECK(report["scenario"]["quantization"]["scope"] == "experts");
}
