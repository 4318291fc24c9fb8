// Validation of issue 5's GPU-level models: quantized decode/prefill against published cases
// (public_cases.json V18a-c gpt-fast on A100, V6a/V6b/V7c/V7d TensorRT-LLM fp8 on L40S/H100) and
// engine launch behaviour, HF transformers, two streams / two processes sharing the GPU and PyTorch
// GEMMs against our own H200 measurements (calibrate/results/h200/engines_decode.json and
// engines_decode_2.json). Prints predicted vs measured and bounds the error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdio>
#include <map>
#include <string>

#include "sim/analysis/public_cases.hpp"
#include "sim/calib/fit.hpp"
#include "sim/analysis/step_query.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/hw/contention.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/validate/bounds.hpp"
#include "../paths.hpp"

using namespace servesim;
using servesim::StepQuery;

namespace {

StepQuery query(const std::string& model, const std::string& hw, const std::string& quant, std::int64_t group,
                const std::string& engine) {
  StepQuery q;
  q.model = load_model(resolve_data_ref("models", model, "", ""));
  q.hw = load_hw_profile(resolve_data_ref("hwprofiles", hw, "", ""));
  q.precision = Precision{Dtype::fp16, Dtype::fp16, Dtype::fp16};
  apply_quant_name(quant, q.precision, "test", "quant");
  q.precision.group_size = group;
  if (auto d8 = w8a8_dtype(q.precision.quant)) q.emulated = !q.hw.supports(*d8);
  if (!engine.empty()) q.engine = load_engine_profile(engine, "", "");
  return q;
}

double rel_err(double predicted, double measured) { return (predicted - measured) / measured; }

}  // namespace

TEST_CASE("published quantized cases: gpt-fast on A100 (V18), TensorRT-LLM fp8 on L40S/H100 (V6, V7)") {
  // The mapping is `servesim validate`'s (sim/analysis/public_cases.cpp: the step model with the
  // case's quantization and engine; each case's bound and its reason are stated there).
  const std::string file = std::string(servesim::test::reference_dir()) + "/validation/public_cases.json";
  std::map<std::string, CaseResult> by_id;
  for (const auto& r : run_public_cases(load_json_file(file), file)) by_id[r.id] = r;
  std::printf("\n%-6s %-22s %-14s %12s %12s %8s %7s\n", "case", "metric", "gpu", "published", "servesim", "error", "bound");
  for (const char* id : {"V18a", "V18b", "V18c", "V6a", "V6b", "V7c", "V7d"}) {
    REQUIRE(by_id.count(id));
    const CaseResult& r = by_id[id];
    REQUIRE(!r.skipped);
    std::printf("%-6s %-22s %-14s %12.4g %12.4g %+7.1f%% %6.0f%%\n", id, r.metric.c_str(), r.hw.c_str(), r.published, r.predicted,
                100 * r.error(), 100 * r.bound);
    CHECK(std::fabs(r.error()) <= r.bound);
  }
  // The ordering the published numbers show: int4 > int8 > bf16 at batch 1.
  CHECK(by_id["V18c"].predicted > by_id["V18b"].predicted);
  CHECK(by_id["V18b"].predicted > by_id["V18a"].predicted);
}

TEST_CASE("H200 measurements: eager vs CUDA-graph decode and two processes sharing the GPU") {
  const auto doc = load_json_file(std::string(servesim::test::test_data_dir()) + "/../calibrate/results/h200/engines_decode.json");
  // engines_decode.json timed calibrate/results/h200/bench_engines_decode.py's Model, whose kernel
  // set differs from the decoder the torch-* profiles now describe (calibrate/independent's):
  // RoPE in 7 ops per tensor and one reshape copy per layer (44 kernels per layer, the profiler's
  // 1422 per step), and no elementwise ceiling fitted to it.
  StepQuery eager = query("llama-3-8b", "h200-sxm", "bf16", 128, "torch-eager");
  StepQuery graph = query("llama-3-8b", "h200-sxm", "bf16", 128, "torch-cudagraph");
  for (StepQuery* q : {&eager, &graph}) {
    q->engine->kernels.rope_kernels = 14;
    q->engine->kernels.extra_kernels_per_layer = 1;
    q->engine->kernels.elementwise_bw_frac = 1.0;
  }
  const std::int64_t context = doc["model"]["context_tokens"].get<std::int64_t>();
  std::printf("\nLlama-3-8B-shaped decode on H200, context %lld: step time (ms), measured vs servesim\n",
              static_cast<long long>(context));
  std::printf("%6s %10s %10s %8s %6s | %10s %10s %8s\n", "batch", "eager", "servesim", "error", "launch", "graph", "servesim", "error");
  double worst_eager = 0.0, worst_graph = 0.0;
  std::vector<std::int64_t> batches;
  for (const auto& [b, m] : doc["torch_eager"].items()) batches.push_back(std::stoll(b));
  std::sort(batches.begin(), batches.end());
  for (std::int64_t batch : batches) {
    const std::string b = std::to_string(batch);
    const auto& m = doc["torch_eager"][b];
    const auto pe = time_decode(eager, batch, context, false);
    const auto pg = time_decode(graph, batch, context, false);
    const double me = m["step_s"].get<double>(), mg = doc["torch_cudagraph"][b]["step_s"].get<double>();
    const double ee = rel_err(pe.step.time_s, me), eg = rel_err(pg.step.time_s, mg);
    worst_eager = std::max(worst_eager, std::fabs(ee));
    worst_graph = std::max(worst_graph, std::fabs(eg));
    std::printf("%6lld %10.3f %10.3f %+7.1f%% %6s | %10.3f %10.3f %+7.1f%%\n", static_cast<long long>(batch), me * 1e3,
                pe.step.time_s * 1e3, 100 * ee, pe.step.launch_bound ? "yes" : "no", mg * 1e3, pg.step.time_s * 1e3, 100 * eg);
    // Eager is launch-bound where the measured eager step is flat in batch and far above the graph.
    if (me > 1.5 * mg) CHECK(pe.step.launch_bound);
  }
  const double eager_bound = validation_bound("gpu-physics/h200-eager-decode-worst");
  const double graph_bound = validation_bound("gpu-physics/h200-graph-decode-worst");
  std::printf("worst |error|: eager %.1f%% (bound %.0f%%), CUDA graph %.1f%% (bound %.0f%%)\n", 100 * worst_eager, 100 * eager_bound,
              100 * worst_graph, 100 * graph_bound);
  CHECK(worst_eager <= eager_bound);
  CHECK(worst_graph <= graph_bound);
  const double kernels_measured = doc["torch_eager_kernels_per_step"].get<double>();
  const double kernels_predicted = static_cast<double>(time_decode(eager, 1, context, false).step.kernels);
  const double kernels_bound = validation_bound("gpu-physics/h200-eager-kernels-per-step");
  std::printf("kernels per step at batch 1: measured %.0f, torch-eager profile %.0f (%+.1f%%, bound %.0f%%)\n", kernels_measured,
              kernels_predicted, 100 * rel_err(kernels_predicted, kernels_measured), 100 * kernels_bound);
  CHECK(std::fabs(rel_err(kernels_predicted, kernels_measured)) <= kernels_bound);

  // Two processes (no MPS) time-slice the GPU: kernels of the two never overlap.
  std::printf("two processes, CUDA-graph decode: step time together (ms), measured vs servesim contention --time-slice\n");
  for (const auto& [b, m] : doc["processes"]["0"].items()) {
    const std::int64_t batch = std::stoll(b);
    const auto t = time_decode(graph, batch, context, false);
    LaunchConfig launch = graph.engine->launch;
    auto stream = kernel_stream(t.ops, graph.hw, graph.precision.weights, launch);
    for (auto& k : stream) k.bw = k.sm = 1.0;
    const auto res = simulate_shared_gpu({stream, stream}, {launch, launch}, 8);
    double together = 0.0;
    for (const auto& [rank, r] : doc["processes"].items()) together += r[b]["together_step_s"].get<double>() / 2.0;
    const double e = rel_err(res[0].mean_step_s, together);
    const double bound = validation_bound("gpu-physics/h200-two-processes-step");
    std::printf("  batch %3lld: measured %.3f, servesim %.3f (%+.1f%%, bound %.0f%%); measured total throughput vs one alone %.2fx\n",
                static_cast<long long>(batch), together * 1e3, res[0].mean_step_s * 1e3, 100 * e, 100 * bound,
                2.0 * m["alone_step_s"].get<double>() / together);
    CHECK(std::fabs(e) <= bound);
  }
}

namespace {

nlohmann::json h200_engines_2() {
  return load_json_file(std::string(servesim::test::test_data_dir()) + "/../calibrate/results/h200/engines_decode_2.json");
}

}  // namespace

TEST_CASE("H200 measurements: Hugging Face transformers eager decode, kernels per step vs --engine hf-transformers") {
  const auto doc = h200_engines_2();
  const StepQuery hf = query("llama-3-8b", "h200-sxm", "bf16", 128, "hf-transformers");
  const std::int64_t context = doc["model"]["context_tokens"].get<std::int64_t>();
  // The step times of this run (Dec 2: forward() alone, 82-107 ms per token) disagree with the
  // later run of the same transformers and torch versions on another lent H200 host (Dec 4,
  // calibrate/results/h200/independent/run_c.json: generate(), forward() included, 57-60 ms for
  // three models): the step is host-bound and the host differs. The hf-transformers profile is
  // fitted to, and validated on, the later set (test_independent_h200.cpp, engines); this one is
  // printed for the record and checks only what does not depend on the host: the kernel count.
  std::printf("\nHF transformers %s eager (%s) forward() per decode token on H200 (Dec 2 host), context %lld: step time (ms)\n",
              doc["transformers"].get<std::string>().c_str(), doc["hf_attn_implementation"].get<std::string>().c_str(),
              static_cast<long long>(context));
  std::printf("%6s %10s %22s\n", "batch", "measured", "servesim (no generate loop)");
  for (const auto& [b, m] : doc["hf_transformers"].items()) {
    const std::int64_t batch = std::stoll(b);
    const auto p = time_decode(hf, batch, m["context_tokens_at_first_timed_step"].get<std::int64_t>() + 5, false);
    const double forward_only = p.step.time_s - hf.engine->launch.host_overhead_per_decode_step_s;
    std::printf("%6lld %10.2f %22.2f\n", static_cast<long long>(batch), m["step_s"].get<double>() * 1e3, forward_only * 1e3);
  }
  const double kernels_measured = doc["hf_kernels_per_step_b1"].get<double>();
  const double kernels_predicted = static_cast<double>(time_decode(hf, 1, context, false).step.kernels);
  const double kernels_bound = validation_bound("gpu-physics/h200-hf-kernels-per-step");
  std::printf("kernels per step at batch 1: measured %.0f (profiler), hf-transformers profile %.0f (%+.1f%%, bound %.0f%%)\n",
              kernels_measured, kernels_predicted, 100 * rel_err(kernels_predicted, kernels_measured), 100 * kernels_bound);
  CHECK(std::fabs(rel_err(kernels_predicted, kernels_measured)) <= kernels_bound);
}

TEST_CASE("H200 measurements: two CUDA streams sharing the GPU vs the contention model") {
  const auto doc = h200_engines_2();
  const StepQuery graph = query("llama-3-8b", "h200-sxm", "bf16", 128, "torch-cudagraph");
  const std::int64_t context = doc["model"]["context_tokens"].get<std::int64_t>();
  std::printf("\ntwo model instances on two CUDA streams (one process), CUDA-graph decode, context %lld\n",
              static_cast<long long>(context));
  std::printf("%6s %10s %10s %10s %8s %10s %10s\n", "batch", "alone", "together", "servesim", "error", "speedup", "servesim");
  for (const auto& [b, m] : doc["streams"].items()) {
    const std::int64_t batch = std::stoll(b);
    const auto t = time_decode(graph, batch, context, false);
    const LaunchConfig launch = graph.engine->launch;
    const auto stream = kernel_stream(t.ops, graph.hw, graph.precision.weights, launch);
    const auto res = simulate_shared_gpu({stream, stream}, {launch, launch}, 8);
    const auto alone = simulate_shared_gpu({stream}, {launch}, 8);
    const double together = m["two_streams_round_s"].get<double>();
    const double measured_alone = 0.5 * (m["alone_step_s"].get<double>() + m["alone_step_s_b"].get<double>());
    const double e = rel_err(res[0].mean_step_s, together);
    std::printf("%6lld %10.3f %10.3f %10.3f %+7.1f%% %9.2fx %9.2fx\n", static_cast<long long>(batch), measured_alone * 1e3,
                together * 1e3, res[0].mean_step_s * 1e3, 100 * e, 2 * measured_alone / together,
                2 * alone[0].mean_step_s / res[0].mean_step_s);
    // 40%: the model overlaps two instances' kernels by their bandwidth and FLOP shares only. At
    // batch 1 (GEMVs) that matches (-9%); at batch 128 each GEMM launches enough CTAs to fill all
    // 132 SMs, so the other stream's kernel waits for SMs even though neither saturates HBM or
    // the tensor cores: measured 1.10x total speedup, servesim 1.39x. SM occupancy (CTAs per
    // kernel) is not in the cost model yet; until it is, the error at large batch is this big.
    CHECK(std::fabs(e) <= validation_bound("gpu-physics/h200-two-streams-step"));
  }
}

TEST_CASE("H200 measurements: PyTorch quantized GEMMs vs servesim op gemm") {
  const auto doc = h200_engines_2();
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h200-sxm", "", ""));
  struct Variant {
    const char* key;    // measured time in each gemm record
    const char* dtype;  // servesim op gemm --dtype
    double bound;       // |relative error| bound over the compared points
  };
  // bf16 and fp8 run cuBLASLt, the library the profile's GEMM tables were calibrated with
  // (raw.json): 25% covers PyTorch's different algorithm choice at a few shapes. The other three
  // are PyTorch kernels that differ from the serving-class kernels servesim models; their bounds
  // state the gap rather than a model error:
  //  - int8: torch._int_mm reaches only bf16 speed at M >= 1024 (168 us vs 179 us at 4096^3),
  //    while the calibrated cuBLASLt IMMA kernel (and CUTLASS in vLLM/TensorRT-LLM) is ~1.9x
  //    faster than bf16: servesim is up to 48% faster than _int_mm.
  //  - w8a16 dequantize-then-GEMM: PyTorch's int8->bf16 .to() runs at ~1 TB/s (45 us for a 16 MiB
  //    int8 weight) where servesim's calibrated dequantize kernel (raw.json quant_gemm) streams
  //    at ~4 TB/s: servesim is up to 49% faster at M = 256, 6-18% at M = 4096.
  //  - w4a16 tinygemm (torch._weight_int4pack_mm, group 128) against servesim's fused kernel,
  //    calibrated on our own GEMV kernel (raw.json quant_gemm, M <= 16): both are GEMV-class and
  //    grow with M, so M <= 16 is compared; 25% covers the two kernels' difference (before the
  //    calibration, servesim's Marlin-class analytic kernel was 45-55% faster than tinygemm).
  const Variant variants[] = {
      {"bf16_s", "bf16", 0.25},
      {"fp8_s", "fp8", 0.25},
      {"int8_s", "int8", 0.50},
      {"w8a16_dequant_then_gemm_s", "w8a16", 0.60},
      {"w4a16_g128_fused_s", "w4a16-awq", 0.25},
  };
  std::printf("\nPyTorch GEMMs on H200 (GPU time, CUDA-graph replays, rotated weights) vs servesim op gemm --hw h200-sxm (us)\n");
  std::printf("%-28s %6s %6s %6s %10s %10s %8s %-18s\n", "measured", "m", "n", "k", "measured", "servesim", "error", "kernel");
  for (const Variant& v : variants) {
    double worst = 0.0;
    int compared = 0;
    for (const auto& r : doc["gemm"]) {
      if (!r.contains(v.key)) continue;
      const std::int64_t m = r["m"].get<std::int64_t>(), n = r["n"].get<std::int64_t>(), k = r["k"].get<std::int64_t>();
      const auto g = time_gemm(hw, v.dtype, m, n, k, 128, "test");
      const double measured = r[v.key].get<double>();
      const double e = rel_err(g.time.time_s, measured);
      // PyTorch has no fused weight-only int8 serving kernel (torch._weight_int8pack_mm is a
      // reference kernel), so its w8a16 path is only comparable where servesim also picks
      // dequantize-then-GEMM; tinygemm is compared over the M range servesim's fused kernel was
      // calibrated on.
      bool compare = true;
      if (std::string(v.dtype) == "w8a16") compare = g.time.gemm == GemmKernel::dequant_gemm;
      if (std::string(v.dtype) == "w4a16-awq") compare = static_cast<double>(m) <= hw.weight_only_table(4).fused_max_m;
      std::printf("%-28s %6lld %6lld %6lld %10.2f %10.2f %+7.1f%% %-18s%s\n", v.key, static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k), measured * 1e6, g.time.time_s * 1e6, 100 * e,
                  gemm_kernel_name(g.time.gemm), compare ? "" : " (not compared)");
      if (!compare) continue;
      ++compared;
      worst = std::max(worst, std::fabs(e));
    }
    std::printf("%s: %d points compared, worst |error| %.1f%% (bound %.0f%%)\n", v.key, compared, 100 * worst, 100 * v.bound);
    CHECK(compared > 0);
    CHECK(worst <= v.bound);
  }
}

TEST_CASE("H200 calibration: weight-only GEMMs (raw.json quant_gemm) fitted into the profile, held-out points") {
  const std::string raw_file = std::string(servesim::test::test_data_dir()) + "/../calibrate/results/h200/raw.json";
  const std::string base_file = resolve_data_ref("hwprofiles", "h200-sxm", "", "");
  FitOptions opt;
  opt.name = "h200-sxm";
  const nlohmann::json raw = load_json_file(raw_file);
  const FitSummary s = fit_profile(raw, raw_file, load_json_file(base_file), base_file, opt);
  // The bundled profile holds the same tables, as written (regenerated with the command in
  // docs/calibration.md; 5 significant digits).
  auto bundled = load_json_file(base_file);
  inline_hw_tables(bundled, base_file);
  CHECK(bundled["tables"]["calibration"]["quant_gemm"] == rounded_tables(s.profile["tables"])["calibration"]["quant_gemm"]);
  std::printf("\nweight-only GEMMs on H200, points held out of the fit (every 3rd M per curve), predicted by the fitted profile\n");
  std::printf("%-6s %-12s %6s %7s %6s %10s %10s %8s\n", "dtype", "path", "m", "n", "k", "measured", "servesim", "error");
  std::vector<double> errs;
  for (const QuantHoldout& h : s.quant_holdout) {
    const double e = rel_err(h.predicted_s, h.measured_s);
    errs.push_back(std::fabs(e));
    std::printf("%-6s %-12s %6.0f %7.0f %6.0f %10.2f %10.2f %+7.1f%%\n", h.dtype.c_str(), h.path.c_str(), h.m, h.n, h.k,
                h.measured_s * 1e6, h.predicted_s * 1e6, 100 * e);
  }
  REQUIRE(errs.size() >= 30);
  const double med = median(errs), worst = *std::max_element(errs.begin(), errs.end());
  // Interpolating in log M between calibrated points is exact at the points; between them the
  // roofline fraction changes fastest where a kernel goes from weight-bound to compute-bound
  // (M ~ 512-2048 for dequant-then-GEMM), which is where the worst held-out points fall. Bounds:
  // median 10%, worst 35% (the dense GEMM tables' held-out median is 2.3%, worst 54%).
  const double med_bound = validation_bound("gpu-physics/h200-weight-only-gemm-median");
  const double worst_bound = validation_bound("gpu-physics/h200-weight-only-gemm-worst");
  std::printf("%zu held-out points: median |error| %.1f%% (bound %.0f%%), worst %.1f%% (bound %.0f%%)\n", errs.size(), 100 * med,
              100 * med_bound, 100 * worst, 100 * worst_bound);
  CHECK(med <= med_bound);
  CHECK(worst <= worst_bound);

  // Strict input: an unknown key or a bad table in the new block is an InputError naming it.
  auto bad = s.profile;
  bad["tables"]["calibration"]["quant_gemm"]["w4a16"]["fused_typo"] = 1;
  CHECK_THROWS_WITH_AS(parse_hw_profile(bad, "p.json"), doctest::Contains("calibration.quant_gemm.w4a16"), InputError);
  bad = s.profile;
  bad["tables"]["calibration"]["quant_gemm"]["w8a16"]["dequant_gemm"]["shapes"][0][2] = 0.0;
  CHECK_THROWS_AS(parse_hw_profile(bad, "p.json"), InputError);

  // The fitted tables replace the analytic weight-only model (Marlin-class by assumption): the
  // calibrated M = 1 points are reproduced exactly, and time never falls as M grows beyond
  // measurement noise: past the fused kernel's measured M the faster calibrated path runs, and
  // the dequantize-then-GEMM table's fractions carry the calibration's few-percent noise.
  const HwProfile hw = parse_hw_profile(s.profile, "fitted");
  int calibrated_points = 0;
  for (const auto& r : raw["quant_gemm"]) {
    if (r["path"] != "gemv" || r["m"] != 1) continue;
    const auto g = time_gemm(hw, r["dtype"] == "w4a16" ? "w4a16" : "w8a16", 1, r["n"].get<std::int64_t>(),
                                  r["k"].get<std::int64_t>(), 128, "test");
    ++calibrated_points;
    CHECK(g.time.gemm == GemmKernel::weight_only_fused);
    CHECK(std::fabs(rel_err(g.time.time_s, r["time_s"].get<double>())) <= 1e-9);
    double last = 0.0;
    for (std::int64_t m = 1; m <= 50; ++m) {
      const double t = time_gemm(hw, "w4a16", m, r["n"].get<std::int64_t>(), r["k"].get<std::int64_t>(), 128, "test").time.time_s;
      CHECK(t >= last * (1.0 - 0.03));
      last = t;
    }
  }
  CHECK(calibrated_points == 10);  // 5 shapes x {w4a16, w8a16}
}
