// Unit checks of issue 5's models: quantized weight bytes and GEMM kernel choice, the launch-queue
// recursion against an unrolled one, processor sharing, engine profiles and cold start.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/analysis/error_bands.hpp"
#include "sim/analysis/step_query.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/contention.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/serve/cold_start.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {
HwProfile hw(const std::string& n) { return load_hw_profile(resolve_data_ref("hwprofiles", n, "", "")); }
ModelSpec model(const std::string& n) { return load_model(resolve_data_ref("models", n, "", "")); }
Op gemm(std::int64_t m, std::int64_t n, std::int64_t k, QuantScheme q, std::int64_t group = 128) {
  Op op{"g", OpKind::gemm};
  op.quant = q;
  op.m = m;
  op.n = n;
  op.k = k;
  op.flops = 2.0 * m * n * k;
  op.bytes = m * k * (w8a8_dtype(q) ? 1.0 : 2.0) + double(k) * n * quant_weight_bytes(q, Dtype::bf16, group) + m * n * 2.0;
  return op;
}
}  // namespace

TEST_CASE("quantized weight bytes: projections shrink, embeddings stay 16-bit") {
  CHECK(quant_weight_bytes(QuantScheme::w4a16_awq, Dtype::bf16, 128) == doctest::Approx(0.5 + 2.5 / 128));
  CHECK(quant_weight_bytes(QuantScheme::fp8, Dtype::bf16, 128) == 1.0);
  const ModelSpec m = model("llama-2-7b");
  const double bf16 = m.weight_bytes(Dtype::bf16, QuantScheme::none, 128);
  CHECK(bf16 == doctest::Approx(m.weight_bytes(Dtype::bf16)));
  const double w4 = m.weight_bytes(Dtype::bf16, QuantScheme::w4a16_gptq, 128);
  const double emb = 2.0 * m.embedding_params() * 2.0;
  CHECK(w4 - emb == doctest::Approx((bf16 - emb) * (0.5 + 2.5 / 128) / 2.0).epsilon(0.001));
}

TEST_CASE("weight-only GEMM: faster than 16-bit at M=1, slower at large M (dequant-then-GEMM)") {
  const HwProfile h = hw("h100-sxm");
  for (QuantScheme q : {QuantScheme::w4a16_gptq, QuantScheme::w4a16_awq, QuantScheme::w8a16}) {
    const KernelTime dense1 = estimate(gemm(1, 4096, 4096, QuantScheme::none), h, Dtype::bf16);
    const KernelTime q1 = estimate(gemm(1, 4096, 4096, q), h, Dtype::bf16);
    CHECK(q1.gemm == GemmKernel::weight_only_fused);
    CHECK(q1.time_s < dense1.time_s);
    const KernelTime dense_big = estimate(gemm(4096, 4096, 4096, QuantScheme::none), h, Dtype::bf16);
    const KernelTime q_big = estimate(gemm(4096, 4096, 4096, q), h, Dtype::bf16);
    CHECK(q_big.gemm == GemmKernel::dequant_gemm);
    CHECK(q_big.launches == 2);
    CHECK(q_big.time_s > dense_big.time_s);
  }
  // fp8 on Ampere is emulated: never faster than the 16-bit GEMM.
  const HwProfile a100 = hw("a100-80gb-sxm");
  const KernelTime e = estimate(gemm(1, 4096, 4096, QuantScheme::fp8), a100, Dtype::bf16);
  CHECK(e.gemm == GemmKernel::w8a8_emulated);
  CHECK(e.time_s >= estimate(gemm(1, 4096, 4096, QuantScheme::none), a100, Dtype::bf16).time_s);
  CHECK(estimate(gemm(1, 4096, 4096, QuantScheme::fp8), h, Dtype::bf16).gemm == GemmKernel::w8a8);
}

TEST_CASE("prefill attention with an engine plateau: the table's plateau raised to it, short prompts and lower plateaus as the table") {
  const HwProfile h = hw("h200-sxm");
  Op op{"attention_prefill", OpKind::attention_prefill};
  op.attn_seqs = 1;
  op.attn_kv_tokens = 20000;
  op.attn_kv_heads = 8;
  op.attn_head_dim = 128;
  op.flops = 4.0 * 32 * 128 * (20000.0 * 20001.0 / 2.0);
  op.bytes = 20000.0 * 2 * 1024 * 2;
  const KernelTime table = estimate(op, h, Dtype::bf16);
  CHECK(table.bound == Bound::compute);
  const double curve_max = h.attention_prefill_compute_frac_by_tokens.max_value();
  const double f = h.attention_prefill_compute_frac_by_tokens.at(20000);
  op.compute_plateau_frac = 0.55;
  const KernelTime engine = estimate(op, h, Dtype::bf16);
  CHECK(engine.compute_s == doctest::Approx(table.compute_s / (1.0 + (0.55 / curve_max - 1.0) * f / curve_max)));
  CHECK(engine.compute_s < table.compute_s * curve_max / (0.9 * 0.55));  // near the plateau: within 10% of it
  op.compute_plateau_frac = curve_max / 2;  // a plateau below the table's: the table holds
  CHECK(estimate(op, h, Dtype::bf16).time_s == doctest::Approx(table.time_s));
  // The engine's plan sets it on prefill attention only.
  KernelPlan plan;
  plan.prefill_attention_peak_frac = 0.55;
  BatchShape b;
  b.add_prefill(512, 0, true);
  b.add_decode(100);
  std::vector<Op> ops;
  build_iteration_ops(model("llama-3.1-8b"), b, Precision{}, ops, plan);
  int prefill_ops = 0;
  for (const Op& o : ops) {
    if (o.kind == OpKind::attention_prefill) ++prefill_ops;
    CHECK(o.compute_plateau_frac == (o.kind == OpKind::attention_prefill ? 0.55 : 0.0));
  }
  CHECK(prefill_ops == 1);
}

TEST_CASE("launch queue: the folded max-plus recursion equals the unrolled one; one instance of the sharing sim too") {
  const HwProfile h = hw("h200-sxm");
  const ModelSpec m = model("llama-3-8b");
  for (const char* engine : {"torch-eager", "hf-transformers", "vllm-0.6", "tensorrt-llm"}) {
    const EngineProfile e = load_engine_profile(engine, "", "");
    for (std::int64_t batch : {1, 64}) {
      BatchShape b;
      for (int i = 0; i < batch; ++i) b.add_decode(300);
      std::vector<Op> ops;
      build_iteration_ops(m, b, Precision{}, ops, e.kernels);
      LaunchConfig l = e.launch;
      l.overlap_host = false;
      const StepTime s = estimate_step(ops, h, Dtype::bf16, l, batch);
      // Unrolled: f = max(f, issue_j) + d_j over every kernel.
      double f = 0.0;
      for (const KernelWork& k : kernel_stream(ops, h, Dtype::bf16, l)) f = std::max(f, k.issue_s) + k.alone_s;
      CHECK(s.time_s == doctest::Approx(s.host_s + f).epsilon(1e-9));
      CHECK(s.time_s >= s.gpu_s);
      CHECK(s.time_s >= s.launch_s);
      LaunchConfig folded = l;
      folded.host_overhead_per_step_s += batch * l.host_overhead_per_seq_s;
      const auto one = simulate_shared_gpu({kernel_stream(ops, h, Dtype::bf16, l)}, {folded}, 3);
      CHECK(one[0].mean_step_s == doctest::Approx(s.time_s).epsilon(1e-6));
    }
  }
}

TEST_CASE("processor sharing: two bandwidth-bound kernels take twice as long, two tiny ones overlap") {
  KernelWork big{1e-3, 1.0, 0.1, 0.0}, tiny{1e-5, 0.1, 0.05, 0.0};
  LaunchConfig l;
  l.host_overhead_per_step_s = 0.0;
  const auto two_big = simulate_shared_gpu({{big}, {big}}, {l, l}, 1);
  CHECK(two_big[0].mean_step_s == doctest::Approx(2e-3));
  const auto two_tiny = simulate_shared_gpu({{tiny}, {tiny}}, {l, l}, 1);
  CHECK(two_tiny[0].mean_step_s == doctest::Approx(1e-5));
}

TEST_CASE("engine profiles: all bundled ones parse; strict keys; CUDA-graph padding") {
  for (const auto& name : bundled_names("scenarios/engines")) {
    const EngineProfile e = load_engine_profile(name, "", "");
    CHECK(e.name == name);
  }
  CHECK(bundled_names("scenarios/engines").size() >= 8);
  auto doc = nlohmann::json::parse(R"({"name":"x","kernels_per_layer":{"bogus":1},"cuda_graphs":{"decode":true},
      "host":{"overhead_per_step_s":0,"overhead_per_seq_s":0},"defaults":{"scheduler":"continuous","kv_cache":"paged","block_size":16}})");
  CHECK_THROWS_AS(parse_engine_profile(doc, "x.json"), InputError);
  doc["kernels_per_layer"] = {{"norm_kernels", 1.5}};
  CHECK_THROWS_AS(parse_engine_profile(doc, "x.json"), InputError);
  CHECK(graph_batch_size({1, 2, 4, 8}, 3) == 4);
  CHECK(graph_batch_size({1, 2, 4, 8}, 9) == 0);
  CHECK(graph_batch_size({}, 9) == 9);
}

TEST_CASE("scenario: engine.profile, quantization and cold start reach the report") {
  auto doc = test::base_scenario();
  doc["engine"]["profile"] = "vllm-0.6";
  doc["quantization"] = {{"method", "fp8"}, {"kv_cache_dtype", "fp8"}};
  const Scenario s = test::scenario_from(doc);
  CHECK(s.quant_emulated);  // a100: no fp8 tensor cores
  CHECK(s.precision.kv_cache == Dtype::fp8);
  CHECK(s.engine.profile.name == "vllm-0.6");
  const ColdStart c = estimate_cold_start(s, 13.5e9);
  CHECK(c.weights_s == doctest::Approx(13.5e9 / std::min(2e9, s.hw.host_link_bytes_per_s)));
  CHECK(c.captured_batch_sizes == 11);  // vLLM sizes <= max_num_seqs 64: 1, 2, 4, 8, 16, ..., 64
  doc["quantization"] = {{"method", "int3"}};
  CHECK_THROWS_AS(test::scenario_from(doc), InputError);
  doc["quantization"] = {{"method", "fp8"}, {"kv_cache_dtype", "int4"}};  // vLLM 0.6 runs no int4 KV cache
  CHECK_THROWS_WITH_AS(test::scenario_from(doc), doctest::Contains("kv_cache_dtypes"), InputError);
  doc["quantization"] = {{"method", "fp8"}, {"kv_cache_dtype", "int5"}};
  CHECK_THROWS_AS(test::scenario_from(doc), InputError);
  doc = test::base_scenario();
  doc["engine"]["profile"] = "no-such-engine";
  CHECK_THROWS_AS(test::scenario_from(doc), InputError);
}

TEST_CASE("op gemm in fp8 on a GPU without fp8 units is emulated and flagged, as run and plan do") {
  const auto fp8 = test::run_cli("op gemm --m 64 --n 4096 --k 4096 --dtype fp8 --hw a100-80gb-sxm --json");
  REQUIRE(fp8.exit_code == 0);
  const auto j = nlohmann::json::parse(fp8.output);
  CHECK(j["emulated"] == true);
  CHECK(j["kernel"] == "w8a8_emulated");
  const auto bf16 = nlohmann::json::parse(test::run_cli("op gemm --m 64 --n 4096 --k 4096 --dtype bf16 --hw a100-80gb-sxm --json").output);
  CHECK(bf16["emulated"] == false);
  // The conversion pass comes on top of the 16-bit GEMM.
  CHECK(j["time_s"].get<double>() > bf16["time_s"].get<double>());
  const auto text = test::run_cli("op gemm --m 64 --n 4096 --k 4096 --dtype fp8 --hw a100-80gb-sxm");
  CHECK(text.output.find("emulated: a100-80gb-sxm has no fp8 units") != std::string::npos);
  // On an H100 fp8 runs natively.
  CHECK(nlohmann::json::parse(test::run_cli("op gemm --m 64 --n 4096 --k 4096 --dtype fp8 --hw h100-sxm --json").output)["emulated"] == false);
}

TEST_CASE("field origins: a calibrated profile says what was measured, a derived one that nothing was") {
  const HwProfile h200 = load_hw_profile(resolve_data_ref("hwprofiles", "h200-sxm", "test", "hw"));
  const HwProfile b200 = load_hw_profile(resolve_data_ref("hwprofiles", "b200", "test", "hw"));
  const auto origin_of = [](const HwProfile& hw, const std::string& field) {
    for (const FieldOrigin& f : field_origins(hw)) {
      if (f.field == field) return f.origin;
    }
    return std::string("absent");
  };
  CHECK(origin_of(h200, "GEMM efficiency") == "measured");
  CHECK(origin_of(h200, "PyTorch SDPA attention") == "measured");
  CHECK(origin_of(h200, "dependent-kernel gap") == "measured");
  CHECK(origin_of(h200, "peak FLOP/s") == "datasheet");
  CHECK(origin_of(b200, "GEMM efficiency") == "derived");
  CHECK(origin_of(b200, "launch costs") == "derived");
  CHECK(origin_of(b200, "PyTorch SDPA attention") == "not measured");
  const std::string line = field_origins_line(b200);
  CHECK(line.rfind("measured:", 0) != 0);  // no "measured:" group, only "not measured:"
  CHECK(line.find("derived: GEMM efficiency") != std::string::npos);
  // The report's JSON round-trips to the same line (summary reads reports back).
  CHECK(field_origins_line(field_origins_from_json(field_origins_json(h200))) == field_origins_line(h200));
}

TEST_CASE("error bands: a malformed file names the file and key") {
  const std::string path = test::write_temp("bands_bad.json", R"({"schema": "servesim-error-bands/1", "generated_by": "x", "bands": [{"hw": "h200-sxm", "engine": "e",
    "phase": "decode", "n": 3, "median_abs": 0.5, "worst_abs": 0.1, "source": "s"}]})");
  CHECK_THROWS_WITH_AS(load_error_bands(path), doctest::Contains("bands[0].worst_abs"), InputError);
  CHECK_THROWS_WITH_AS(load_error_bands("/nonexistent/bands.json"), doctest::Contains("bands.json"), InputError);
}

TEST_CASE("decode attention through a cursor: estimate() bit for bit as the context walks the grid and jumps") {
  // The cursor keeps the grid and its last cell between calls (IterationTimer re-times decode
  // attention every step through one); each call must give what estimate() gives, wherever the
  // context goes: step by step, back, past either end of the grid, onto another head dimension.
  for (const char* gpu : {"a100-80gb-sxm", "h200-sxm", "h100-sxm"}) {
    const HwProfile h = hw(gpu);
    for (const AttentionKernel k : {AttentionKernel::standard, AttentionKernel::sdpa}) {  // sdpa_packed: no decode op
      KernelPlan plan;
      plan.attention_kernel = k;
      DecodeAttentionCursor cursor;
      for (const char* name : {"llama-2-70b", "phi-3-mini"}) {
        const ModelSpec m = model(name);
        for (const std::int64_t seqs : {1, 7, 64}) {
          BatchShape b;
          for (std::int64_t i = 0; i < seqs; ++i) b.add_decode(100);
          std::vector<Op> ops;
          build_iteration_ops(m, b, Precision{}, ops, plan);
          Op* attn = nullptr;
          for (Op& op : ops) {
            if (op.kind == OpKind::attention_decode) attn = &op;
          }
          REQUIRE(attn != nullptr);
          std::vector<double> contexts;
          for (double c = 1; c < 40000; c = c * 1.07 + 1) contexts.push_back(c);
          for (double c = 3000; c > 1; c = c * 0.8) contexts.push_back(c);
          for (double c : {1e6, 2.0, 1e6, 513.0, 514.0, 515.0}) contexts.push_back(c);
          for (const double context : contexts) {
            b.decode_kv_tokens = context * static_cast<double>(seqs);
            refresh_context_op(m, b, Precision{}, *attn, plan);
            const KernelTime want = estimate(*attn, h, Dtype::bf16);
            const KernelTime got = estimate_decode_attention(*attn, h, Dtype::bf16, cursor);
            CAPTURE(gpu);
            CAPTURE(static_cast<int>(k));
            CAPTURE(name);
            CAPTURE(context);
            CHECK(got.time_s == want.time_s);
            CHECK(got.compute_s == want.compute_s);
            CHECK(got.memory_s == want.memory_s);
            CHECK(got.roofline_s == want.roofline_s);
            CHECK(got.bytes == want.bytes);
            CHECK(got.bound == want.bound);
          }
        }
      }
    }
  }
}

TEST_CASE("GEMM table: the blend kept per (n, k) gives the nearest-shapes formula, and a table replaced in place its own") {
  // frac() keeps what depends on (n, k) alone (neighbours, weights) per thread, keyed by the
  // table; the reference here is the formula in full (3 nearest in log n, log k, weights
  // 1 / (distance + 0.05)^2).
  const HwProfile h = hw("h200-sxm");
  GemmTable t = h.gemm_tables[static_cast<std::size_t>(Dtype::bf16)];
  REQUIRE(!t.empty());
  const auto reference = [](const GemmTable& table, double m, double n, double k) {
    std::vector<std::pair<double, std::size_t>> d;
    for (std::size_t i = 0; i < table.shapes().size(); ++i) {
      const auto& s = table.shapes()[i];
      const double dn = std::log(n) - std::log(s.n), dk = std::log(k) - std::log(s.k);
      if (dn * dn + dk * dk == 0.0) return s.frac_by_m.at(m);
      d.emplace_back(dn * dn + dk * dk, i);
    }
    std::sort(d.begin(), d.end());
    double sum_w = 0.0, sum = 0.0;
    for (std::size_t j = 0; j < 3 && j < d.size(); ++j) {
      const double w = 1.0 / ((std::sqrt(d[j].first) + 0.05) * (std::sqrt(d[j].first) + 0.05));
      sum_w += w;
      sum += w * table.shapes()[d[j].second].frac_by_m.at(m);
    }
    return sum / sum_w;
  };
  const double n0 = t.shapes().front().n, k0 = t.shapes().front().k;
  const std::vector<std::pair<double, double>> nks = {{n0, k0}, {5120, 8192}, {4096, 4096}, {n0, k0}, {1e5, 512}, {5120, 8192}};
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& nk : nks) {
      const double n = nk.first, k = nk.second;  // not a structured binding: clang 14's CAPTURE cannot take those
      for (const double m : {1.0, 7.0, 64.0, 300.0, 4096.0}) {
        CAPTURE(pass);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(m);
        CHECK(t.frac(m, n, k) == doctest::Approx(reference(t, m, n, k)).epsilon(1e-12));
      }
    }
    // Replaced in place without its first shape (as calibration's leave-one-out does): the
    // blend kept for the old table must not be found for the new one.
    t = GemmTable(std::vector<GemmShapeCurve>(t.shapes().begin() + 1, t.shapes().end()));
  }
}
