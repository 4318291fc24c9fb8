// Decode attention of chunked-attention layers by a kernel of one program per query head
// (TensorRT-LLM's masked multi-head attention, which Llama 4's chunked layers run on Hopper because
// XQA refuses chunked attention): the engine key that names the GPUs, the converter from the
// calibrator's attention_decode_mmha section to calibration.attention_decode_per_query_head, and
// the pricing. Every table here is SYNTHETIC (tests/synthetic/), not a measurement.
#include <doctest/doctest.h>

#include "../paths.hpp"
#include "../support.hpp"
#include "sim/calib/decode_per_query_head_fit.hpp"
#include "sim/config/engine_profile.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

const std::string kSynthetic = std::string(test_data_dir()) + "/synthetic/attention_decode_mmha_synthetic.json";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

DecodePerQueryHeadFit synthetic_fit(const std::string& form = "per_head") {
  return fit_decode_per_query_head(load_json_file(kSynthetic), kSynthetic, form, "2026-12-07", "synthetic", "test");
}

// h100-sxm with `table` as its calibration.attention_decode_per_query_head (null: as bundled).
HwProfile h100_with(const nlohmann::json& table) {
  const std::string path = resolve_data_ref("hwprofiles", "h100-sxm", "", "");
  nlohmann::json doc = load_json_file(path);
  inline_hw_tables(doc, path);
  if (!table.is_null()) doc["tables"]["calibration"]["attention_decode_per_query_head"] = table;
  return parse_hw_profile(doc, path);
}

// The table with every ratio set to `r`.
nlohmann::json flat(nlohmann::json table, double r) {
  for (auto& [format, groups] : table["time_over_grouped"].items()) {
    for (auto& [group, grid] : groups.items()) {
      for (auto& row : grid["ratio"]) {
        for (auto& v : row) v = r;
      }
    }
  }
  return table;
}

ModelSpec maverick() { return load_model(resolve_data_ref("models", "llama-4-maverick-17b-128e", "", "")); }

// One attention-DP rank's decode step of Maverick (every head on the rank: tp 1 for attention),
// FP8 weights and KV cache, the TensorRT-LLM 1.x profile's plan resolved for `hw`.
std::vector<Op> maverick_decode(const HwProfile& hw, std::int64_t batch, std::int64_t context) {
  EngineProfile e = load_engine_profile("tensorrt-llm-pytorch", "t", "--engine");
  resolve_quant_kernels(e, hw);
  Precision p;
  p.quant = QuantScheme::fp8;
  p.kv_cache = Dtype::fp8;
  BatchShape b;
  for (std::int64_t i = 0; i < batch; ++i) b.add_decode(context);
  std::vector<Op> ops;
  build_iteration_ops(maverick(), b, p, ops, e.kernels);
  return ops;
}

}  // namespace

TEST_CASE("decode per query head: the engine key names GPU architectures; chunked layers only; bad values refused") {
  const ModelSpec m = maverick();
  CHECK(chunked_attention_layers(m) == 36);
  CHECK(chunked_attention_layers(load_model(resolve_data_ref("models", "gemma-3-27b", "", ""))) == 0);  // windows slide
  CHECK(chunked_attention_layers(load_model(resolve_data_ref("models", "llama-3.1-8b", "", ""))) == 0);
  EngineProfile e = load_engine_profile("tensorrt-llm-pytorch", "t", "--engine");
  resolve_quant_kernels(e, load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "", "")));
  CHECK(e.kernels.chunked_decode_attention_per_query_head);
  resolve_quant_kernels(e, load_hw_profile(resolve_data_ref("hwprofiles", "b200", "", "")));
  CHECK_FALSE(e.kernels.chunked_decode_attention_per_query_head);  // trtllm-gen: not established
  EngineProfile v = load_engine_profile("vllm", "t", "--engine");
  resolve_quant_kernels(v, load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "", "")));
  CHECK_FALSE(v.kernels.chunked_decode_attention_per_query_head);
  // Hopper's ops: decode attention carries the group and the chunked layers' share; Blackwell's none.
  const HwProfile h100 = h100_with(nullptr);
  for (const Op& op : maverick_decode(h100, 64, 2048)) {
    if (op.kind != OpKind::attention_decode) continue;
    CHECK(op.attn_pqh_group == 5);
    CHECK(op.attn_pqh_share == doctest::Approx(36.0 / 48.0));  // within the chunk every layer reads as much
    CHECK(op.attn_pqh_context == doctest::Approx(2049.0));
  }
  for (const Op& op : maverick_decode(h100, 64, 16383)) {
    if (op.kind != OpKind::attention_decode) continue;
    // Past the chunk the chunked layers read 8192 tokens, the global ones the whole context.
    CHECK(op.attn_pqh_share == doctest::Approx(36.0 * 8192.0 / (36.0 * 8192.0 + 12.0 * 16384.0)));
    CHECK(op.attn_pqh_context == doctest::Approx(8192.0));
  }
  const auto key_error = [](const std::string& value) {
    auto doc = nlohmann::json::parse(R"({"name":"x","kernels_per_layer":{},
        "cuda_graphs":{"decode":true},"host":{"overhead_per_step_s":0,"overhead_per_seq_s":0},
        "defaults":{"scheduler":"continuous","kv_cache":"paged","block_size":16}})");
    doc["kernels_per_layer"]["chunked_attention_decode_per_query_head"] = nlohmann::json::parse(value);
    return error_of([&] { parse_engine_profile(doc, "x.json"); });
  };
  CHECK(key_error(R"(["hopper"])").empty());
  CHECK(contains(key_error(R"(["sm90"])"), "x.json: kernels_per_layer.chunked_attention_decode_per_query_head[0]: must be an array of distinct "
                                          "GPU architectures: ampere, ada, hopper or blackwell, got 'sm90'"));
  CHECK(contains(key_error(R"("hopper")"), "x.json: kernels_per_layer.chunked_attention_decode_per_query_head: must be an array"));
  CHECK(contains(key_error(R"(["hopper", "hopper"])"), "chunked_attention_decode_per_query_head[1]: 'hopper' is listed twice"));
}

TEST_CASE("calibrate decode-per-query-head: the synthetic section becomes ratio grids per format and group") {
  const DecodePerQueryHeadFit fit = synthetic_fit();
  const nlohmann::json& t = fit.table;
  CHECK(t["form"] == "per_head");
  CHECK(t["kv_heads"] == 8);
  CHECK(t["date"] == "2026-12-07");  // the file has none: the option's
  CHECK(t["command"] == "synthetic");
  CHECK(t["fitted_by"] == "test");
  CHECK(contains(t["file"].get<std::string>(), "attention_decode_mmha_synthetic.json"));
  const nlohmann::json& fp8_5 = t["time_over_grouped"]["fp8"]["5"];
  CHECK(fp8_5["batch"] == nlohmann::json({64, 128, 256, 512}));
  CHECK(fp8_5["context"] == nlohmann::json({512, 2048}));
  for (const auto& row : fp8_5["ratio"]) {
    for (const auto& v : row) CHECK(v.get<double>() == doctest::Approx(2.0));
  }
  CHECK(t["time_over_grouped"]["bf16"]["5"]["ratio"][0][0].get<double>() == doctest::Approx(1.5));
  // Group 8 lost batch 512 (one context missing); group 16 has no grouped form: not written.
  CHECK(t["time_over_grouped"]["fp8"]["8"]["batch"] == nlohmann::json({64, 128, 256}));
  CHECK_FALSE(t["time_over_grouped"]["fp8"].contains("16"));
  CHECK_FALSE(t["time_over_grouped"]["fp8"].contains("1"));
  CHECK(t["points"] == 2 * (8 + 6));
  // The far form is another table.
  CHECK(synthetic_fit("per_head_far").table["time_over_grouped"]["fp8"]["5"]["ratio"][1][1].get<double>() == doctest::Approx(4.0));
  CHECK(contains(error_of([] { synthetic_fit("per_query_head"); }), "no group of 2 or more with both the grouped and the per_query_head form"));
  // The profile reads it back: exact groups, linear between them, nothing outside.
  const HwProfile h = h100_with(t);
  const auto& d = h.decode_per_query_head;
  CHECK(d.ratio(Dtype::fp8, 5, 64 * 8, 1000) == doctest::Approx(2.0));
  CHECK(d.ratio(Dtype::bf16, 5, 4096 * 8, 100000) == doctest::Approx(1.5));  // clamped at the edges
  CHECK(d.ratio(Dtype::fp8, 6, 128 * 8, 2048) == doctest::Approx(2.0 + (3.0 - 2.0) / 3.0));
  CHECK(d.ratio(Dtype::fp8, 4, 128 * 8, 2048) == 0.0);
  CHECK(d.ratio(Dtype::fp8, 16, 128 * 8, 2048) == 0.0);
  CHECK(d.ratio(Dtype::int8, 5, 128 * 8, 2048) == 0.0);
  CHECK(h100_with(nullptr).decode_per_query_head.empty());  // no table is shipped
}

TEST_CASE("calibrate decode-per-query-head: refusals name the file and key") {
  nlohmann::json doc = load_json_file(kSynthetic);
  doc["attention_decode_mmha"]["checks"][0]["pass"] = false;
  CHECK(contains(error_of([&] { fit_decode_per_query_head(doc, "m.json", "per_head", "", "", "t"); }),
                 "m.json: attention_decode_mmha.checks[0]: a correctness check failed"));
  CHECK(contains(error_of([] { fit_decode_per_query_head(nlohmann::json::object(), "m.json", "per_head", "", "", "t"); }),
                 "m.json: attention_decode_mmha: missing"));
  doc = load_json_file(kSynthetic);
  doc["attention_decode_mmha"]["gpu"] = 90;  // a descriptive field of another type: not recorded, no error
  doc["date"] = 2026;
  CHECK(fit_decode_per_query_head(doc, "m.json", "per_head", "", "", "t").table["date"] == "not recorded");
  doc["attention_decode_mmha"]["records"][3]["kv_dtype"] = "int4";
  CHECK(contains(error_of([&] { fit_decode_per_query_head(doc, "m.json", "per_head", "", "", "t"); }),
                 "m.json: attention_decode_mmha.records[3].kv_dtype: must be bf16 or fp8_e4m3"));
  // The profile's reader: ratios in [0.1, 20], groups 2-128, formats bf16 and fp8.
  nlohmann::json t = synthetic_fit().table;
  t["time_over_grouped"]["fp8"]["5"]["ratio"][0][0] = 25.0;
  CHECK(contains(error_of([&] { h100_with(t); }), "calibration.attention_decode_per_query_head.time_over_grouped.fp8.5.ratio: values must be in [0.1, 20]"));
  t = synthetic_fit().table;
  t["time_over_grouped"]["int8"] = t["time_over_grouped"]["fp8"];
  CHECK(contains(error_of([&] { h100_with(t); }), "time_over_grouped.int8: must be a KV cache format: bf16 (16-bit) or fp8"));
  t = synthetic_fit().table;
  t["time_over_grouped"]["fp8"]["1"] = t["time_over_grouped"]["fp8"]["5"];
  CHECK(contains(error_of([&] { h100_with(t); }), "time_over_grouped.fp8.1: must be a group size"));
}

TEST_CASE("decode per query head: no table or ratio 1 keeps every op's time; ratio 2 raises only the chunked layers' attention") {
  const nlohmann::json table = synthetic_fit().table;
  const HwProfile none = h100_with(nullptr), one = h100_with(flat(table, 1.0)), two = h100_with(flat(table, 2.0));
  // The plan without the key: the op list as before it existed.
  EngineProfile e = load_engine_profile("tensorrt-llm-pytorch", "t", "--engine");
  resolve_quant_kernels(e, none);
  e.kernels.chunked_decode_attention_per_query_head = false;
  Precision p;
  p.quant = QuantScheme::fp8;
  p.kv_cache = Dtype::fp8;
  for (const std::int64_t context : {2048, 16383}) {
    CAPTURE(context);
    const std::vector<Op> ops = maverick_decode(none, 256, context);
    BatchShape b;
    for (int i = 0; i < 256; ++i) b.add_decode(context);
    std::vector<Op> before;
    build_iteration_ops(maverick(), b, p, before, e.kernels);
    REQUIRE(ops.size() == before.size());
    const double share = context < 8192 ? 36.0 / 48.0 : 36.0 * 8192.0 / (36.0 * 8192.0 + 12.0 * (context + 1.0));
    bool seen = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      CAPTURE(ops[i].name);
      const KernelTime t0 = estimate(before[i], none, Dtype::bf16);
      CHECK(estimate(ops[i], none, Dtype::bf16).time_s == t0.time_s);  // no table: today's price
      CHECK(estimate(ops[i], one, Dtype::bf16).time_s == t0.time_s);   // ratio 1: identical
      const KernelTime t2 = estimate(ops[i], two, Dtype::bf16);
      if (ops[i].kind != OpKind::attention_decode) {
        CHECK(t2.time_s == t0.time_s);
        continue;
      }
      seen = true;
      // The busy part x (1 + share x (2 - 1)), the launch kept; the cursor path agrees.
      CHECK(t2.time_s - t2.overhead_s == doctest::Approx((1.0 + share) * (t0.time_s - t0.overhead_s)));
      CHECK(t2.overhead_s == t0.overhead_s);
      DecodeAttentionCursor cursor;
      CHECK(estimate_decode_attention(ops[i], two, Dtype::bf16, cursor).time_s == t2.time_s);
      DecodeAttentionCursor cursor1;
      CHECK(estimate_decode_attention(ops[i], one, Dtype::bf16, cursor1).time_s == t0.time_s);
    }
    CHECK(seen);
  }
  // Blackwell keeps the grouped kernel whatever a table says (the engine key names Hopper only).
  for (const Op& op : maverick_decode(load_hw_profile(resolve_data_ref("hwprofiles", "b200", "", "")), 64, 2048)) {
    CHECK(op.attn_pqh_group == 0);
  }
}

TEST_CASE("servesim step says how the chunked layers are priced") {
  const std::string q = "step --model llama-4-maverick-17b-128e --quant fp8 --kv-cache-dtype fp8 --engine tensorrt-llm-pytorch "
                        "--tp 8 --ep 8 --attention-dp --batch 32 --context 1024";
  const CommandResult h100 = run_cli(q + " --hw h100-sxm");
  CHECK(h100.exit_code == 0);
  CHECK(contains(h100.output, "attention_decode: 36 of 48 layers (chunked attention) run one program per query head (5 query heads per KV head"));
  CHECK(contains(h100.output, "h100-sxm has no calibration.attention_decode_per_query_head for them, so they are priced as the grouped kernel"));
  const CommandResult b200 = run_cli(q + " --hw b200");
  CHECK(b200.exit_code == 0);
  CHECK_FALSE(contains(b200.output, "one program per query head"));
}
