// The quantization validation table; see quant_set.hpp.
#include "sim/validate/quant_set.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "sim/analysis/step_query.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/serve/memory_plan.hpp"

namespace servesim {

namespace {

// The most sequences of in + out tokens one static batch runs, at most `batch`: the KV cache for
// every whole sequence beside the weights, the runtime and the activations of the batch's one
// prefill of batch x in tokens. A static batch's prompts go through the engine in one step
// (TensorRT-LLM's GptSession, in-flight batching off, runs the whole batch as one context micro
// batch without pipeline parallelism, and gptSessionBenchmark requires the engine's max_num_tokens
// >= batch x input length; TensorRT reserves the activations of max_num_tokens at build time:
// docs/source/reference/memory.md). kv_free_fraction > 0: the KV cache takes that fraction of the
// memory left after the rest (TensorRT-LLM's KvCacheConfig.free_gpu_memory_fraction, default 0.9);
// 0: servesim's gpu_memory_utilization of the whole GPU (vLLM's rule).
std::int64_t static_batch_fits(const StepQuery& q, std::int64_t batch, std::int64_t in, std::int64_t out, double kv_free_fraction) {
  const auto fits = [&](std::int64_t b) {
    EngineConfig e;
    e.max_num_batched_tokens = b * in;
    e.max_num_seqs = b;  // the prefill's last-token logits
    e.max_model_len = in + out;
    if (kv_free_fraction > 0.0) e.gpu_memory_utilization = 1.0;
    const MemoryPlan m = plan_memory(q.model, q.hw, q.precision, e, q.parallel.tensor_parallel_size, q.parallel.pipeline_parallel_size, 1,
                                     q.parallel.expert_parallel_size, q.parallel.attention_dp_size());
    const double kv_bytes = kv_free_fraction > 0.0 ? kv_free_fraction * m.kv_bytes : m.kv_bytes;
    return kv_bytes >= static_cast<double>(b * (in + out)) * m.kv_bytes_per_token;
  };
  std::int64_t lo = 0, hi = batch;  // fits(lo) holds (none at all), the answer is in [lo, hi]
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The row's metric for one precision, through the step model (servesim step's arithmetic):
//   static_batch_throughput  a static batch started together: one prefill of the whole batch,
//                            then output - 1 decode steps with growing context; output tokens / time
//   decode_tokens_per_s      one sequence's decode steps over the generated tokens: tokens / time
//   max_static_throughput    static_batch_throughput at the row's batch or, where fewer
//                            sequences fit (static_batch_fits), at the most that fit (a published
//                            "maximum achievable throughput" under one memory budget)
double row_metric(const StepQuery& q, const std::string& metric, std::int64_t batch, std::int64_t in, std::int64_t out,
                  double kv_free_fraction = 0.0) {
  if (metric == "max_static_throughput") {
    const std::int64_t fits = static_batch_fits(q, batch, in, out, kv_free_fraction);
    if (fits < 1) return 0.0;  // not even one sequence: the published OOM
    return row_metric(q, "static_batch_throughput", fits, in, out);
  }
  double t = 0.0;
  if (metric == "static_batch_throughput") t += time_prefill(q, batch, in, 0).step.time_s;
  for (std::int64_t i = metric == "static_batch_throughput" ? 1 : 0; i < out; ++i) t += time_decode(q, batch, in + i, false).step.time_s;
  return static_cast<double>(batch * out) / t;
}

// The engine profile `name` resolved for the row's GPU.
EngineProfile row_engine(const std::string& name, const HwProfile& hw, JsonReader& r, const char* key) {
  EngineProfile e = load_engine_profile(name, r.file(), r.path_of(key));
  resolve_for_gpu(e, hw);
  return e;
}

QuantRowResult run_row(JsonReader r) {
  QuantRowResult res;
  res.id = r.string("id");
  res.source = r.string("source");
  res.engine = r.string("engine");
  res.model = r.string("model");
  res.gpu = r.string("gpu");
  res.scheme = r.string("scheme");
  res.metric = r.string("metric");
  if (res.metric != "static_batch_throughput" && res.metric != "decode_tokens_per_s" && res.metric != "max_static_throughput") {
    r.fail("metric", "must be static_batch_throughput, decode_tokens_per_s or max_static_throughput, got '" + res.metric + "'");
  }
  res.batch = r.integer_in("batch", 1, 4096);
  const std::int64_t in = r.integer_in("input_tokens", 1, 1 << 20), out = r.integer_in("output_tokens", 1, 1 << 20);
  res.published_ratio = r.number_in("published_ratio", 0.01, 100.0);
  res.note = r.string_or("note", "");
  StepQuery q;
  q.model = load_model(resolve_data_ref("models", res.model, r.file(), r.path_of("model")));
  q.hw = load_hw_profile(resolve_data_ref("hwprofiles", res.gpu, r.file(), r.path_of("gpu")));
  // The 16-bit run's engine: the row's, or another where the publication compares across
  // engines (QServe's W4A8KV4 against TensorRT-LLM's FP16).
  const std::string base_engine = r.string_or("baseline_engine", res.engine);
  q.engine = row_engine(base_engine, q.hw, r, r.has("baseline_engine") ? "baseline_engine" : "engine");
  q.parallel.tensor_parallel_size = r.integer_in_or("tp", 1, 64, 1);
  q.precision = Precision{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  const std::int64_t group = r.integer_in_or("group_size", 1, 65536, 128);
  const std::string kv = r.string_or("kv_cache_dtype", "auto");
  const auto kv_dtype = parse_kv_cache_dtype(kv, Dtype::bf16);
  if (!kv_dtype) r.fail("kv_cache_dtype", std::string("must be one of ") + kKvCacheDtypeNames + ", got '" + kv + "'");
  const std::string scales = r.string_or("activation_scales", "static");
  if (scales != "static" && scales != "dynamic") r.fail("activation_scales", "must be static or dynamic, got '" + scales + "'");
  // TensorRT-LLM's KV cache rule for the 16-bit run (static batches only).
  const double base_kv_free = r.number_in_or("baseline_kv_free_fraction", 0.01, 0.99, 0.0);
  const double base = row_metric(q, res.metric, res.batch, in, out, base_kv_free);
  if (base == 0.0) r.fail("model", "the 16-bit run does not fit the GPU");
  if (base_engine != res.engine) q.engine = row_engine(res.engine, q.hw, r, "engine");
  apply_quant_name(res.scheme, q.precision, r.file(), r.path_of("scheme"));
  q.precision.group_size = group;
  q.precision.kv_cache = *kv_dtype;
  q.precision.dynamic_activation_scales = scales == "dynamic";
  if (const PrecisionSupport no = engine_supports(*q.engine, q.precision, q.hw); !no.key.empty()) r.fail("engine", no.why);
  r.finish();
  if (auto d8 = w8a8_dtype(q.precision.quant)) q.emulated = !q.hw.supports(*d8);
  // The table groups a quantized KV cache with its weight scheme: "w4a8+kv-int4".
  if (*kv_dtype != Dtype::bf16) res.scheme += std::string("+kv-") + dtype_name(*kv_dtype);
  res.predicted_ratio = row_metric(q, res.metric, res.batch, in, out) / base;
  res.error = res.predicted_ratio / res.published_ratio - 1.0;
  res.regime = quant_batch_regime(res.batch);
  return res;
}

}  // namespace

std::string quant_batch_regime(std::int64_t batch) {
  if (batch <= 4) return "1-4";
  if (batch >= 8 && batch <= 16) return "8-16";
  if (batch >= 64) return ">=64";
  return "other";
}

std::vector<QuantRowResult> run_quant_rows(const nlohmann::json& doc, const std::string& file) {
  JsonReader top(doc, file, "");
  top.accept("schema");
  top.accept("about");
  top.accept("sources");
  const auto& rows = top.raw("rows");
  if (!rows.is_array() || rows.empty()) top.fail("rows", "must be a non-empty array of rows");
  top.finish();
  std::vector<QuantRowResult> out;
  for (std::size_t i = 0; i < rows.size(); ++i) out.push_back(run_row(JsonReader(rows[i], file, "rows[" + std::to_string(i) + "]")));
  return out;
}

std::vector<QuantGroupError> quant_group_errors(const std::vector<QuantRowResult>& rows) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> groups;  // (scheme, regime) -> |error|
  for (const QuantRowResult& r : rows) {
    groups[{r.scheme, "all"}].push_back(std::abs(r.error));
    if (r.regime != "other") groups[{r.scheme, r.regime}].push_back(std::abs(r.error));
  }
  std::vector<QuantGroupError> out;
  for (const auto& [key, e] : groups) out.push_back({key.first, key.second, e.size(), median(e), *std::max_element(e.begin(), e.end())});
  return out;
}

std::string default_quant_rows_file() {
  return (std::filesystem::path(data_dir()) / "data" / "validation" / "quant_published.json").string();
}

}  // namespace servesim
