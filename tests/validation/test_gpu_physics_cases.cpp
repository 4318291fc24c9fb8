// Validation of issue 5's GPU-level models: quantized decode/prefill against published cases
// (public_cases.json V18a-c gpt-fast on A100, V6a/V6b/V7c/V7d TensorRT-LLM fp8 on L40S/H100) and
// engine launch behaviour and multi-process sharing against our own H200 measurements
// (calibrate/results/h200/engines_decode.json). Prints predicted vs measured and bounds the error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdio>
#include <string>

#include "sim/cli/step_query.hpp"
#include "sim/hw/contention.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"

using namespace servesim;
using servesim::cli::StepQuery;

namespace {

StepQuery query(const std::string& model, const std::string& hw, const std::string& quant, std::int64_t group,
                const std::string& engine) {
  StepQuery q;
  q.model = load_model(resolve_data_ref("models", model, "", ""));
  q.hw = load_hw_profile(resolve_data_ref("hwprofiles", hw, "", ""));
  q.precision = Precision{Dtype::fp16, Dtype::fp16, Dtype::fp16};
  cli::apply_quant_name(quant, q.precision, "test", "quant");
  q.precision.group_size = group;
  if (auto d8 = w8a8_dtype(q.precision.quant)) q.emulated = !q.hw.supports(*d8);
  if (!engine.empty()) q.engine = load_engine_profile(engine, "", "");
  return q;
}

nlohmann::json find_case(const std::string& id) {
  const auto doc = load_json_file(std::string(SERVESIM_SHARED_DIR) + "/validation/public_cases.json");
  for (const auto& c : doc["cases"]) {
    if (c["id"] == id) return c;
  }
  FAIL("case " << id << " not found");
  return {};
}

double rel_err(double predicted, double measured) { return (predicted - measured) / measured; }

// Static batch: one prefill of the whole batch, then `out - 1` decode steps with growing context.
double static_batch_output_tokens_per_s(const StepQuery& q, std::int64_t batch, std::int64_t in, std::int64_t out) {
  double t = cli::time_prefill(q, batch, in, 0).step.time_s;
  for (std::int64_t i = 1; i < out; ++i) t += cli::time_decode(q, batch, in + i - 1, false).step.time_s;
  return static_cast<double>(batch * out) / t;
}

}  // namespace

TEST_CASE("published quantized cases: gpt-fast on A100 (V18), TensorRT-LLM fp8 on L40S/H100 (V6, V7)") {
  struct Row {
    const char* id;
    double predicted;
    double bound;  // stated bound on |relative error|
  };
  // gpt-fast decodes one sequence with torch.compile + CUDA graphs; no engine profile matches its
  // compiled kernels, so the default plan (one graph per step, no host overhead) is used. Its
  // A100 was power-capped at 330 W, which our 400 W profile does not model.
  const double v18a = 1.0 / cli::time_decode(query("llama-2-7b", "a100-80gb-sxm", "bf16", 128, ""), 1, 5, false).step.time_s;
  const double v18b = 1.0 / cli::time_decode(query("llama-2-7b", "a100-80gb-sxm", "w8a16", 128, ""), 1, 5, false).step.time_s;
  const double v18c = 1.0 / cli::time_decode(query("llama-2-7b", "a100-80gb-sxm", "w4a16-gptq", 32, ""), 1, 5, false).step.time_s;
  // TensorRT-LLM's fp8 recipe quantizes the KV cache to fp8 too (quantize.py --kv_cache_dtype fp8);
  // assumed for these published runs.
  StepQuery l40s = query("llama-2-7b", "l40s", "fp8", 128, "tensorrt-llm");
  StepQuery h100 = query("llama-2-7b", "h100-sxm", "fp8", 128, "tensorrt-llm");
  l40s.precision.kv_cache = h100.precision.kv_cache = Dtype::fp8;
  const Row rows[] = {
      {"V18a", v18a, 0.10},
      {"V18b", v18b, 0.25},
      // gpt-fast's int4 kernel (tinygemm) reaches ~60% of the bandwidth of its bf16 path (its README's
      // GB/s column); our fused weight-only kernel is Marlin-class, so we over-predict.
      {"V18c", v18c, 0.45},
      {"V6a", static_batch_output_tokens_per_s(l40s, 64, 128, 128), 0.15},
      {"V6b", static_batch_output_tokens_per_s(l40s, 16, 2048, 2048), 0.15},
      {"V7c", cli::time_prefill(l40s, 1, 2048, 0).step.time_s, 0.30},
      {"V7d", cli::time_prefill(h100, 1, 2048, 0).step.time_s, 0.30},
  };
  std::printf("\n%-6s %-34s %-22s %12s %12s %8s %7s\n", "case", "engine", "metric", "published", "servesim", "error", "bound");
  for (const Row& r : rows) {
    const auto c = find_case(r.id);
    const double measured = c["value"].get<double>();
    const double e = rel_err(r.predicted, measured);
    std::printf("%-6s %-34s %-22s %12.4g %12.4g %+7.1f%% %6.0f%%\n", r.id, c["engine"].get<std::string>().c_str(),
                c["metric"].get<std::string>().c_str(), measured, r.predicted, 100.0 * e, 100.0 * r.bound);
    CHECK(std::fabs(e) <= r.bound);
  }
  // The ordering the published numbers show: int4 > int8 > bf16 at batch 1.
  CHECK(v18c > v18b);
  CHECK(v18b > v18a);
}

TEST_CASE("H200 measurements: eager vs CUDA-graph decode and two processes sharing the GPU") {
  const auto doc = load_json_file(std::string(SERVESIM_TEST_DATA_DIR) + "/../calibrate/results/h200/engines_decode.json");
  const StepQuery eager = query("llama-3-8b", "h200-sxm", "bf16", 128, "torch-eager");
  const StepQuery graph = query("llama-3-8b", "h200-sxm", "bf16", 128, "torch-cudagraph");
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
    const auto pe = cli::time_decode(eager, batch, context, false);
    const auto pg = cli::time_decode(graph, batch, context, false);
    const double me = m["step_s"].get<double>(), mg = doc["torch_cudagraph"][b]["step_s"].get<double>();
    const double ee = rel_err(pe.step.time_s, me), eg = rel_err(pg.step.time_s, mg);
    worst_eager = std::max(worst_eager, std::fabs(ee));
    worst_graph = std::max(worst_graph, std::fabs(eg));
    std::printf("%6lld %10.3f %10.3f %+7.1f%% %6s | %10.3f %10.3f %+7.1f%%\n", static_cast<long long>(batch), me * 1e3,
                pe.step.time_s * 1e3, 100 * ee, pe.step.launch_bound ? "yes" : "no", mg * 1e3, pg.step.time_s * 1e3, 100 * eg);
    // Eager is launch-bound where the measured eager step is flat in batch and far above the graph.
    if (me > 1.5 * mg) CHECK(pe.step.launch_bound);
  }
  std::printf("worst |error|: eager %.1f%% (bound 20%%), CUDA graph %.1f%% (bound 25%%)\n", 100 * worst_eager, 100 * worst_graph);
  CHECK(worst_eager <= 0.20);
  CHECK(worst_graph <= 0.25);
  const double kernels_measured = doc["torch_eager_kernels_per_step"].get<double>();
  const double kernels_predicted = static_cast<double>(cli::time_decode(eager, 1, context, false).step.kernels);
  std::printf("kernels per step at batch 1: measured %.0f, torch-eager profile %.0f (%+.1f%%, bound 10%%)\n", kernels_measured,
              kernels_predicted, 100 * rel_err(kernels_predicted, kernels_measured));
  CHECK(std::fabs(rel_err(kernels_predicted, kernels_measured)) <= 0.10);

  // Two processes (no MPS) time-slice the GPU: kernels of the two never overlap.
  std::printf("two processes, CUDA-graph decode: step time together (ms), measured vs servesim contention --time-slice\n");
  for (const auto& [b, m] : doc["processes"]["0"].items()) {
    const std::int64_t batch = std::stoll(b);
    const auto t = cli::time_decode(graph, batch, context, false);
    LaunchConfig launch = graph.engine->launch;
    auto stream = kernel_stream(t.ops, graph.hw, graph.precision.weights, launch);
    for (auto& k : stream) k.bw = k.sm = 1.0;
    const auto res = simulate_shared_gpu({stream, stream}, {launch, launch}, 8);
    double together = 0.0;
    for (const auto& [rank, r] : doc["processes"].items()) together += r[b]["together_step_s"].get<double>() / 2.0;
    const double e = rel_err(res[0].mean_step_s, together);
    std::printf("  batch %3lld: measured %.3f, servesim %.3f (%+.1f%%, bound 20%%); measured total throughput vs one alone %.2fx\n",
                static_cast<long long>(batch), together * 1e3, res[0].mean_step_s * 1e3, 100 * e,
                2.0 * m["alone_step_s"].get<double>() / together);
    CHECK(std::fabs(e) <= 0.20);
  }
}
