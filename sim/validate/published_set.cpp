// Published engine tables as scenarios; see published_set.hpp. Every mapping below states where
// its value comes from: the row, the benchmark tool's source, or the engine's documented default.
#include "sim/validate/published_set.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <tbb/parallel_for.h>

#include "sim/calib/fit.hpp"
#include "sim/config/scenario_keys.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

namespace {

// How a source's rows were measured, hence how they map onto servesim.
enum class Harness {
  trtllm_bench,     // trtllm-bench throughput: fixed ISL/OSL, every request at once, tuned limits
  triton_online,    // Triton + TensorRT-LLM 0.14: Poisson at a QPS (or all at once), BF16
  static_session,   // gptSessionBenchmark 0.9: one static batch (or batch-1 first-token latency)
  vllm_sharegpt,    // vLLM benchmark_serving with ShareGPT prompts, rate inf
  bench_sharegpt,   // sglang.bench_serving / benchmark_serving, ShareGPT prompts, Llama-3 tokenizer, Poisson or inf
  none,             // nothing servesim can express (reason per row)
};

struct SourceMap {
  const char* source;
  const char* version_prefix;  // of the row's engine_version ("" = any)
  const char* label;
  const char* profile;
  Harness harness;
};

// The engine profile of each release: 1.x and 0.20 ran the PyTorch backend (perf-overview:
// "Starting with v0.19, testing was performed using the PyTorch backend"; 0.20 has its own
// profile, without 1.0's fused FP8 SwiGLU), 0.17 and older the C++ runtime on TensorRT engines.
constexpr SourceMap kSources[] = {
    {"trtllm-perf-overview-1.0", "", "trtllm-1.0-pytorch", "tensorrt-llm-pytorch", Harness::trtllm_bench},
    {"trtllm-perf-overview-0.20", "", "trtllm-0.20-pytorch", "tensorrt-llm-pytorch-0.20", Harness::trtllm_bench},
    {"trtllm-perf-overview-main-03e27c7", "", "trtllm-main-pytorch", "tensorrt-llm-pytorch", Harness::trtllm_bench},
    {"trtllm-dsr1-best-perf-blog", "", "trtllm-dsr1-blog", "tensorrt-llm-pytorch", Harness::trtllm_bench},
    {"trtllm-perf-overview-0.17", "0.14", "trtllm-0.14-triton", "tensorrt-llm", Harness::triton_online},
    {"trtllm-perf-overview-0.17", "", "trtllm-0.17-cpp", "tensorrt-llm", Harness::trtllm_bench},
    {"trtllm-perf-overview-0.9", "", "trtllm-0.9-static", "tensorrt-llm", Harness::static_session},
    {"lambda-vllm-benchmark-v0", "", "vllm-0.5.4", "vllm-0.5", Harness::vllm_sharegpt},
    // vLLM 0.6.0 is the V0 engine the `vllm-0.6` profile describes ("vLLM 0.6 (V0 engine, ...)").
    {"sglang-bench-vllm-060", "0.6", "vllm-0.6.0", "vllm-0.6", Harness::bench_sharegpt},
    {"sglang-bench-vllm-060", "0.3", "sglang-0.3.0", "sglang", Harness::none},
    {"sglang-large-scale-ep-blog", "", "sglang", "sglang", Harness::none},
    {"sglang-gb200-part1-blog", "", "sglang", "sglang", Harness::none},
};

// Published model names -> bundled cards. Llama 3.3 70B has Llama 3.1 70B's architecture (the
// 3.3 release changed the weights only); DeepSeek-R1 (and R1-0528) is DeepSeek-V3's architecture.
std::string card_for(const std::string& model) {
  if (model == "llama-3.3-70b") return "llama-3.1-70b";
  if (model == "deepseek-r1" || model == "deepseek-r1-0528") return "deepseek-v3";
  return model;
}

bool has_card(const std::string& card) {
  const auto names = bundled_names("models");
  return std::find(names.begin(), names.end(), card) != names.end();
}

// GPT-OSS checkpoints keep attention, router, embedding and LM head in bf16 and only the routed
// experts in MXFP4 (E2M1 values, an E8M0 scale per 32): quantization.scope experts.
bool experts_only_mxfp4(const std::string& weights) { return weights.rfind("mxfp4 experts", 0) == 0; }

// Weight precision text -> servesim quantization scheme ("" = 16-bit).
std::string quant_for(const std::string& weights) {
  if (weights.rfind("nvfp4", 0) == 0) return "nvfp4";
  if (experts_only_mxfp4(weights)) return "mxfp4";
  // DeepSeek's native FP8 checkpoints scale per 128x128 weight block and 1x128 activation group.
  if (weights.rfind("fp8", 0) == 0) return weights.find("block-scaled") != std::string::npos ? "fp8-block" : "fp8";
  return "";
}

// trtllm-bench's limits (tensorrt_llm/bench/build/tuning.py calc_engine_setting + finetune_setting,
// @04cba882, the heuristic behind every perf-overview row): KV requests that fit beside the
// weights at the KV fraction, capped at 4096 and rounded up; tokens = batch x (1 + ISL/OSL),
// capped at 32768, at least 2048, rounded. Device memory in GiB as NVML reports it; weights from
// the parameter count at the quantization's bytes; KV heads at least tp; the head size config.json
// states, else hidden / heads (bench/build/dataclasses.py ModelConfig.set_values_if_none): an MLA
// model's config.json (DeepSeek-V3/R1) has no head_dim, so trtllm-bench prices its cache as
// num_attention_heads KV heads of hidden / heads, not the latent cache the engine allocates.
struct BenchLimits {
  std::int64_t max_batch_size = 0, max_num_tokens = 0;
};
BenchLimits trtllm_bench_limits(const ModelSpec& m, double memory_bytes, double weight_bytes_per_param, double stored_params,
                                double kv_bytes_per_elem, std::int64_t tp, std::int64_t pp, std::int64_t isl, std::int64_t osl,
                                double kv_fraction) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const double kv_heads = static_cast<double>(std::max(tp, m.num_kv_heads));
  const double head_size = static_cast<double>(m.is_mla() ? m.hidden_size / m.num_attention_heads : m.head_dim);
  const double gib_per_token = 2.0 * static_cast<double>(m.num_layers) * kv_heads * head_size * kv_bytes_per_elem / kGiB;
  const double engine_gib = stored_params * weight_bytes_per_param / kGiB;
  const double total_gib = memory_bytes / kGiB * static_cast<double>(tp * pp);
  const double kv_requests = (total_gib - engine_gib) * kv_fraction / (gib_per_token * static_cast<double>(isl + osl));
  const double raw_bs = std::min(kv_requests, 4096.0) / static_cast<double>(pp);
  const double raw_tokens = std::min(raw_bs * (1.0 + static_cast<double>(isl) / static_cast<double>(osl)), 32768.0);
  const auto up = [](double x, double unit) { return static_cast<std::int64_t>(unit * std::ceil(x / unit)); };
  BenchLimits l;
  if (raw_bs < 256) l.max_batch_size = std::max<std::int64_t>(64, up(raw_bs, 32));
  else if (raw_bs < 1024) l.max_batch_size = up(raw_bs, 128);
  else l.max_batch_size = up(raw_bs, 256);
  if (raw_tokens < 4096) l.max_num_tokens = std::max<std::int64_t>(2048, up(raw_tokens, 256));
  else if (raw_tokens < 8192) l.max_num_tokens = up(raw_tokens, 512);
  else l.max_num_tokens = up(raw_tokens, 1024);
  return l;
}

// The bytes per parameter and per KV element trtllm-bench's heuristic uses (tuning.py
// BYTES_PER_ELEM: FP8 and FP8_BLOCK_SCALES 1, NVFP4 0.5, any other algorithm 2: GPT-OSS's
// W4A16_MXFP4 / W4A8_MXFP4_MXFP8 are not in the table).
double bench_bytes(const std::string& quant) { return quant == "nvfp4" ? 0.5 : quant == "fp8" || quant == "fp8-block" ? 1.0 : 2.0; }

// The elements the checkpoint stores, which trtllm-bench counts as parameters
// (bench/build/dataclasses.py ModelConfig.get_param_count: the safetensors metadata's
// parameter_count): an NVFP4 checkpoint stores two weights per uint8 element and an FP8 scale
// per 16 weights; GPT-OSS's MXFP4 experts two weights per uint8 "blocks" element and a uint8 E8M0
// scale per 32, beside its bf16 tensors.
double bench_stored_params(const ModelSpec& m, const std::string& quant, bool experts_only) {
  if (experts_only) return m.total_params() - m.routed_expert_params() * (1.0 - 1.0 / 2.0 - 1.0 / 32.0);
  if (quant == "nvfp4") return m.total_params() - m.quantized_params() * (1.0 - 1.0 / 2.0 - 1.0 / 16.0);
  return m.total_params();
}

// TensorRT-LLM sizes the KV cache as a fraction of the memory left after the model and its
// activation workspace (KvCacheConfig.free_gpu_memory_fraction); servesim's
// gpu_memory_utilization is a fraction of the whole GPU (vLLM's). The utilization that leaves
// the same KV: 1 - (1 - f) x (memory left at utilization 1) / memory.
void set_free_memory_fraction(Scenario& s, double fraction) {
  s.engine.gpu_memory_utilization = 1.0;
  const MemoryPlan full = plan_memory(s.model, s.hw, s.precision, s.engine, s.parallel.tensor_parallel_size,
                                      s.parallel.pipeline_parallel_size, s.instances, s.parallel.expert_parallel_size,
                                      s.parallel.attention_dp_size());
  s.engine.gpu_memory_utilization = 1.0 - (1.0 - fraction) * std::max(0.0, full.kv_bytes) / s.hw.memory_bytes;
}

nlohmann::json fixed(std::int64_t tokens) { return {{"impl", "fixed"}, {"value_tokens", tokens}}; }

// A number from text that starts with it ("2 requests/s (...)"); 0 when it does not.
double leading_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && std::isfinite(v) ? v : 0.0;
}

// The row as the strict reader sees it: required keys typed, the rest accepted (free text).
struct RowInput {
  std::string id, source, engine, version, model, gpu, metric, weights, kv_cache, arrival;
  std::int64_t num_gpus = 0, tp = 0, pp = 1, ep = 0;  // 0: not stated
  bool attention_dp = false;
  std::int64_t isl = 0, osl = 0, num_requests = 0, concurrency = 0;
  bool has_dataset = false;
  double value = 0.0;
  nlohmann::json settings;
  // Engine settings a harness reads (the rest of `settings` is the source's free text).
  std::int64_t num_scheduler_steps = 1;  // vLLM 0.6 multi-step scheduling; 1 = off
  std::int64_t mtp_layers = 0;           // speculative_decoding "MTP, num_nextn_predict_layers N": N draft tokens; 0 = off
  std::int64_t max_model_len = 0;        // 0: not stated as a number
  double gpu_memory_utilization = 0.0;   // 0: not stated
};

// A count that may be absent, null or stated in words (the source's text): 0 unless a number.
std::int64_t optional_count(JsonReader& r, const std::string& key) {
  if (!r.has(key)) return 0;
  if (r.raw(key).is_null() || r.raw(key).is_string()) return 0;
  return r.integer_in(key, 1, std::int64_t{1} << 24);
}

RowInput read_row(const nlohmann::json& row, const std::string& file, const std::string& path) {
  JsonReader r(row, file, path);
  RowInput in;
  in.id = r.string("id");
  in.source = r.string("source");
  in.engine = r.string("engine");
  in.version = r.string("engine_version");
  in.model = r.string("model");
  in.gpu = r.string("gpu");
  in.metric = r.string("metric");
  in.value = r.positive("value");
  r.string("unit");
  r.accept("backend");
  r.accept("notes");
  {
    JsonReader p = r.object("precision");
    in.weights = p.string("weights");
    in.kv_cache = p.string("kv_cache");
    p.accept("activations");
    p.finish();
  }
  in.num_gpus = optional_count(r, "num_gpus");
  {
    JsonReader p = r.object("parallel");
    in.tp = optional_count(p, "tp");
    in.pp = std::max<std::int64_t>(1, optional_count(p, "pp"));
    in.ep = optional_count(p, "ep");
    in.attention_dp = p.boolean_or("attention_dp", false);
    p.finish();
  }
  {
    JsonReader w = r.object("workload");
    in.isl = optional_count(w, "input_tokens");
    in.osl = optional_count(w, "output_tokens");
    in.num_requests = optional_count(w, "num_requests");
    in.concurrency = optional_count(w, "concurrency");
    in.arrival = w.string("arrival");
    in.has_dataset = w.has("dataset");
    w.accept("dataset");
    w.finish();
  }
  in.settings = r.raw("engine_settings");
  if (!in.settings.is_object()) r.fail("engine_settings", "must be an object");
  {
    // Free text where the source gives no number ("not stated ..."); a number must be valid.
    JsonReader es(in.settings, file, r.path_of("engine_settings"));
    if (es.has("num_scheduler_steps")) in.num_scheduler_steps = es.integer_in("num_scheduler_steps", 1, 1024);
    if (es.has("enable_attention_dp") && es.raw("enable_attention_dp").is_boolean() && es.raw("enable_attention_dp").get<bool>()) {
      in.attention_dp = true;  // the perf-overview rows state it among the engine settings
    }
    // DeepSeek's multi-token prediction as TensorRT-LLM configures it (speculative_config
    // decoding_type MTP, num_nextn_predict_layers N): N draft tokens per step.
    const std::string spec = in.settings.value("speculative_decoding", "");
    const std::string mtp_key = "num_nextn_predict_layers ";
    if (spec.rfind("MTP", 0) == 0 && spec.find(mtp_key) != std::string::npos) {
      in.mtp_layers = std::max<std::int64_t>(1, std::atoll(spec.c_str() + spec.find(mtp_key) + mtp_key.size()));
    }
    if (es.has("max_model_len") && !es.raw("max_model_len").is_string()) {
      in.max_model_len = es.integer_in("max_model_len", 1, std::int64_t{1} << 24);
    }
    if (es.has("gpu_memory_utilization") && !es.raw("gpu_memory_utilization").is_string()) {
      in.gpu_memory_utilization = es.number_in("gpu_memory_utilization", 0.01, 1.0);
    }
  }
  r.finish();
  return in;
}

const SourceMap* source_map(const RowInput& in) {
  for (const SourceMap& s : kSources) {
    if (in.source == s.source && in.version.rfind(s.version_prefix, 0) == 0) return &s;
  }
  return nullptr;
}

// Why servesim cannot run the row, or "" when it can.
std::string skip_reason(const RowInput& in, const SourceMap& src, const std::string& card) {
  const nlohmann::json& es = in.settings;
  if (es.contains("speculative_decoding") && in.mtp_layers == 0) return "speculative decoding other than MTP is not mapped";
  if (es.value("pd_disaggregation", false)) return "phase-isolated PD-disaggregated measurement";
  if (src.harness == Harness::none) return "no harness mapped for this source";
  if (!has_card(card)) return "no model card for " + in.model + " in models/";
  if (in.tp == 0 || in.num_gpus == 0) return "GPU count or tensor-parallel size not stated";
  // TensorRT-LLM runs attention DP inside each pipeline stage (the RTX 6000 tables' DEP2,PP2 of
  // perf-overview @03e27c7); servesim's attention DP does not combine with pipeline parallelism.
  if (in.attention_dp && in.tp > 1 && in.pp > 1) return "attention DP with pipeline parallelism (DEP with PP > 1) is not modelled";
  const bool dataset_lengths = src.harness == Harness::vllm_sharegpt || src.harness == Harness::bench_sharegpt;
  if (!dataset_lengths && (in.isl == 0 || in.osl == 0)) return "input/output lengths not stated";
  // With multi-step scheduling vLLM streams a request's tokens in chunks of num_scheduler_steps,
  // so the client's inter-token latency is the gap between chunks, not between tokens; servesim
  // models the windows (engine.num_scheduler_steps) but its ITL is per token (a window's tokens
  // arrive together: gaps of 0 inside a chunk), not the client's per-chunk gap.
  if (in.metric.rfind("itl", 0) == 0 && in.num_scheduler_steps > 1) {
    return "ITL of multi-step scheduling (the client's gap between chunks of tokens) is not reported";
  }
  return "";
}

// The metric the row publishes, from the run.
double metric_of(const RowInput& in, const SimResult& r) {
  const double seconds = ns_to_seconds(r.metrics.end_ns);
  const double out_tps = static_cast<double>(r.metrics.output_tokens) / seconds;
  if (in.metric == "output_throughput_total") return out_tps;
  if (in.metric == "output_throughput_per_gpu") return out_tps / static_cast<double>(in.num_gpus);
  if (in.metric == "ttft" || in.metric == "ttft_mean") return 1e3 * r.metrics.ttft_s.mean();
  if (in.metric == "itl_mean") return 1e3 * r.metrics.itl_s.mean();
  if (in.metric == "request_throughput") return static_cast<double>(r.metrics.completed) / seconds;
  // Medians over requests, as benchmark_serving / sglang.bench_serving print them.
  if (in.metric == "ttft_median") return 1e3 * r.metrics.ttft_s.quantile(0.5);
  if (in.metric == "tpot_median") return 1e3 * r.metrics.tpot_s.quantile(0.5);
  if (in.metric == "itl_median") return 1e3 * r.metrics.itl_s.quantile(0.5);
  if (in.metric == "e2e_median") return 1e3 * r.metrics.e2e_s.quantile(0.5);
  // trtllm-bench's "Per User Output Throughput (tokens/sec/user)": output tokens over request
  // latency (first token included), per request; its rows run one request at a time (concurrency
  // 1) with fixed lengths, so every request's is the mean's.
  if (in.metric == "output_rate_per_user") return static_cast<double>(in.osl) / r.metrics.e2e_s.mean();
  return 0.0;
}

bool metric_known(const std::string& m) {
  return m == "output_throughput_total" || m == "output_throughput_per_gpu" || m == "ttft" || m == "ttft_mean" || m == "itl_mean" ||
         m == "request_throughput" || m == "ttft_median" || m == "tpot_median" || m == "itl_median" || m == "e2e_median" ||
         m == "output_rate_per_user";
}

// What a harness asks of the scenario beyond its keys.
struct HarnessSettings {
  double kv_free_fraction = 0.0;  // > 0: TensorRT-LLM's free-memory fraction
  bool padded_graphs = false;     // the row lists its own CUDA-graph batch sizes
};

// The keys each benchmark harness sets: its engine limits and its workload; `assumed` gathers
// what the source did not publish.
HarnessSettings trtllm_bench_setup(const RowInput& in, const std::string& card, const std::string& file, const std::string& quant,
                                   bool fp8_kv, nlohmann::json& engine, nlohmann::json& workload, std::string& assumed) {
  HarnessSettings h;
  // perf-overview: "--kv_cache_free_gpu_mem_fraction 0.95 in many cases"; the heuristic
  // assumes the same fraction (calc_engine_setting default).
  h.kv_free_fraction = 0.95;
  const ModelSpec model = load_model(resolve_data_ref("models", card, file, in.id));
  const double memory = load_hw_profile(resolve_data_ref("hwprofiles", in.gpu, file, in.id)).memory_bytes;
  BenchLimits l = trtllm_bench_limits(model, memory, bench_bytes(quant), bench_stored_params(model, quant, experts_only_mxfp4(in.weights)),
                                      fp8_kv ? 1.0 : 2.0, in.tp, in.pp, in.isl, in.osl,
                                      h.kv_free_fraction);
  // A row that states its limits (the DeepSeek-R1 blog's commands) runs with them.
  const auto stated = [&in](const char* key) -> std::int64_t {
    return in.settings.contains(key) && in.settings[key].is_number_integer() ? in.settings[key].get<std::int64_t>() : 0;
  };
  const bool stated_limits = stated("max_batch_size") > 0 && stated("max_num_tokens") > 0;
  if (stated_limits) l = {stated("max_batch_size"), stated("max_num_tokens")};
  if (in.settings.contains("kv_cache_free_gpu_mem_fraction") && in.settings["kv_cache_free_gpu_mem_fraction"].is_number()) {
    h.kv_free_fraction = in.settings["kv_cache_free_gpu_mem_fraction"].get<double>();
  }
  const bool chunked = in.settings.value("enable_chunked_context", false);
  // Without context chunking trtllm-bench raises max_num_tokens to hold the longest prompt
  // beside a full batch of decodes (bench/benchmark/utils/general.py get_settings).
  if (!chunked && !stated_limits) l.max_num_tokens = std::max(l.max_num_tokens, in.isl + l.max_batch_size);
  // Under attention DP both limits are each rank's ("--max_batch_size: Max batch size in each
  // rank", the DeepSeek-R1 blog); the replica's scheduler holds every rank's.
  const std::int64_t ranks = in.attention_dp && in.tp > 1 ? in.tp : 1;
  engine["max_num_seqs"] = ranks * l.max_batch_size;
  engine["max_num_batched_tokens"] = ranks * l.max_num_tokens;
  engine["max_model_len"] = in.isl + in.osl;
  // GUARANTEED_NO_EVICT admits a request only with blocks for its whole length.
  engine["kv_reservation"] = "contiguous";
  engine["scheduler"] = {{"impl", chunked ? "chunked-prefill" : "inflight"}};
  if (!stated_limits) {
    assumed += "trtllm-bench limits max_batch_size " + std::to_string(l.max_batch_size) + ", max_num_tokens " + std::to_string(l.max_num_tokens) +
               (ranks > 1 ? " per rank" : "") + "; ";
  }
  char kv[64];
  std::snprintf(kv, sizeof kv, "KV %.2f of free memory; ", h.kv_free_fraction);
  assumed += kv;
  h.padded_graphs = in.settings.contains("cuda_graph_batch_sizes");
  workload["prompt_tokens"] = fixed(in.isl);
  workload["output_tokens"] = fixed(in.osl);
  // trtllm-bench --concurrency N keeps N requests in flight (a closed loop of N clients).
  if (in.concurrency > 0) workload["arrival"] = {{"impl", "concurrency"}, {"clients", in.concurrency}};
  return h;
}

HarnessSettings triton_online_setup(const RowInput& in, nlohmann::json& engine, nlohmann::json& workload, std::string& assumed) {
  HarnessSettings h;
  // No limits published: TensorRT-LLM's BuildConfig defaults (max_batch_size 2048,
  // max_num_tokens 8192: perf-benchmarking.md) and the executor's KV fraction 0.9.
  h.kv_free_fraction = 0.9;
  engine["max_num_seqs"] = 2048;
  engine["max_num_batched_tokens"] = 8192;
  engine["max_model_len"] = in.isl + in.osl;
  engine["kv_reservation"] = "contiguous";
  engine["scheduler"] = {{"impl", "inflight"}};
  const double qps = leading_number(in.arrival);
  if (qps > 0) workload["arrival"] = {{"impl", "poisson"}, {"rate_per_s", qps}};
  assumed += std::string("BuildConfig limits 2048 / 8192; KV 0.9 of free memory; ") + (qps > 0 ? "Poisson arrivals; " : "");
  workload["prompt_tokens"] = fixed(in.isl);
  workload["output_tokens"] = fixed(in.osl);
  return h;
}

HarnessSettings static_session_setup(const RowInput& in, nlohmann::json& engine, nlohmann::json& workload, std::string& assumed) {
  HarnessSettings h;
  // One static batch of the row's size (paged KV off: a contiguous cache of ISL + OSL).
  const std::int64_t batch = std::max<std::int64_t>(1, in.settings.value("batch_size", std::int64_t{1}));
  h.kv_free_fraction = 0.95;
  engine["max_num_seqs"] = batch;
  engine["max_num_batched_tokens"] = std::max<std::int64_t>(batch * in.isl, in.isl + in.osl);
  engine["max_model_len"] = in.isl + in.osl;
  engine["kv_reservation"] = "contiguous";
  engine["scheduler"] = {{"impl", "static"}, {"batch_size", batch}};
  workload["num_requests"] = std::max<std::int64_t>(batch, in.num_requests);
  workload["prompt_tokens"] = fixed(in.isl);
  workload["output_tokens"] = fixed(in.osl);
  assumed += "KV 0.95 of free memory; ";
  return h;
}

void vllm_sharegpt_setup(nlohmann::json& engine, nlohmann::json& workload, std::string& assumed) {
  // benchmark_serving's ShareGPT sample (request rate inf): lengths as the vLLM paper's
  // ShareGPT means (161 prompt, 338 output tokens; Kwon et al., SOSP 2023, Table 1) with a
  // lognormal spread (our assumption, as sim/analysis/public_cases.cpp); max_model_len 2000
  // (the source's figures are labelled len2000), so chunked prefill stays off in 0.5.4.
  engine["max_model_len"] = 2000;
  workload["prompt_tokens"] = {{"impl", "lognormal"}, {"mean_tokens", 161}, {"sigma", 1.0}, {"min_tokens", 4}, {"max_tokens", 1000}};
  workload["output_tokens"] = {{"impl", "lognormal"}, {"mean_tokens", 338}, {"sigma", 1.0}, {"min_tokens", 4}, {"max_tokens", 1000}};
  assumed += "ShareGPT lengths lognormal (means 161 / 338); max_model_len 2000; vLLM defaults; ";
}

// sglang.bench_serving (or vLLM benchmark_serving) --dataset-name sharegpt against a server:
// prompts sampled from ShareGPT_V3 and kept when prompt <= 1024 and prompt + output <= 2048
// tokens; each request asks for its conversation's own output length. Arrivals Poisson at
// --request-rate (both clients draw exponential gaps), all at once when the rate is inf.
// Lengths, ASSUMED lognormal (sigma 1.0 as vllm_sharegpt_setup) around the means the same
// sampler gives with the Llama-3.1 tokenizer: 215.2 prompt tokens (vLLM benchmark_serving,
// Llama-3.1-8B-Instruct, ShareGPT, its default 1000 prompts: "Total input tokens: 215196" in
// every stored run) and 198 output tokens (the same runs: 197,090-198,343 generated, ending at
// EOS). Not read from the rows' own request/token throughput ratio.
void bench_sharegpt_setup(const RowInput& in, nlohmann::json& engine, nlohmann::json& workload, std::string& assumed) {
  const double rate = leading_number(in.arrival);
  if (rate > 0) workload["arrival"] = {{"impl", "poisson"}, {"rate_per_s", rate}};
  workload["prompt_tokens"] = {{"impl", "lognormal"}, {"mean_tokens", 215}, {"sigma", 1.0}, {"min_tokens", 4}, {"max_tokens", 1024}};
  workload["output_tokens"] = {{"impl", "lognormal"}, {"mean_tokens", 198}, {"sigma", 1.0}, {"min_tokens", 4}, {"max_tokens", 1024}};
  // The server's --max_model_len (the rows' command line); vLLM 0.6 turns chunked prefill on by
  // itself only above 32k context (engine/arg_utils.py) and multi-step scheduling excludes it,
  // so the default continuous scheduler with max_num_batched_tokens = max_model_len.
  if (in.max_model_len > 0) engine["max_model_len"] = in.max_model_len;
  if (in.gpu_memory_utilization > 0) engine["gpu_memory_utilization"] = in.gpu_memory_utilization;
  // The row's --num-scheduler-steps: prompts admitted once per window of that many decode
  // steps, tokens delivered at the window's end (sched/continuous.cpp).
  if (in.num_scheduler_steps > 1) engine["num_scheduler_steps"] = in.num_scheduler_steps;
  assumed += std::string("ShareGPT lengths lognormal (means 215 / 198, Llama-3 tokenizer); ") + (rate > 0 ? "Poisson arrivals; " : "") +
             "vLLM defaults otherwise; ";
}

// The run's own CUDA-graph sizes (llm_options.yml, enable_padding true).
std::vector<std::int64_t> row_cuda_graph_sizes(const RowInput& in, const std::string& file) {
  std::vector<std::int64_t> sizes;
  for (const auto& v : in.settings.at("cuda_graph_batch_sizes")) {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 || (!sizes.empty() && v.get<std::int64_t>() <= sizes.back())) {
      throw InputError(file, "rows[" + in.id + "].engine_settings.cuda_graph_batch_sizes", "must be increasing positive integers");
    }
    sizes.push_back(v.get<std::int64_t>());
  }
  return sizes;
}

// The scenario of one usable row, and what it assumed; `doc` gets the scenario file that parses to
// it (what --print-scenario writes).
Scenario build_scenario(const RowInput& in, const SourceMap& src, const std::string& card, const std::string& file,
                        const PublishedOptions& opt, std::string& assumed, nlohmann::json& doc) {
  const std::string quant = quant_for(in.weights);
  const bool fp8_kv = in.kv_cache.rfind("fp8", 0) == 0;
  doc = {{"name", in.id}, {"seed", 1}, {"model", card}, {"hardware", in.gpu}, {"dtype", "bf16"}};
  if (!quant.empty() || fp8_kv) {
    doc["quantization"] = {{"method", quant.empty() ? "none" : quant}, {"kv_cache_dtype", fp8_kv ? "fp8" : "auto"}};
    // The engine profile's MoE kernel per GPU generation decides the activations (TensorRT-LLM:
    // W4A16_MXFP4 on Hopper, W4A8_MXFP4_MXFP8 on Blackwell, model_config.py get_mxfp4_quant_algo).
    if (experts_only_mxfp4(in.weights)) doc["quantization"]["scope"] = "experts";
  }
  // Attention DP over the TP GPUs (TensorRT-LLM enable_attention_dp) with the experts over all of
  // them: the rows that state ep say tp; the 1.0 tables pass --ep without its value, and the
  // post-1.0 table (perf-overview @03e27c7) names the same models' runs DEP4 / DEP8 (its H100 DEP8
  // Qwen3-235B at 1000/1000, 1,932 tok/s per GPU, is 4% above the 1.0 table's TP8 figure).
  const bool attention_dp = in.attention_dp && in.tp > 1;
  const std::int64_t ep = in.ep > 0 ? in.ep : attention_dp ? in.tp : 1;
  doc["parallel"] = {{"tensor_parallel_size", in.tp}, {"pipeline_parallel_size", in.pp}, {"expert_parallel_size", ep}};
  if (attention_dp) doc["parallel"]["enable_attention_dp"] = true;
  if (in.ep == 0 && card != in.model) assumed += "ep 1; ";
  if (in.ep == 0 && attention_dp) assumed += "ep " + std::to_string(in.tp) + " (attention DP over every GPU, as the later table's DEP); ";
  std::int64_t requests = in.num_requests > 0 ? in.num_requests : 1;
  if (opt.max_requests > 0) requests = std::min(requests, opt.max_requests);
  nlohmann::json engine = {{"profile", src.profile}};
  nlohmann::json workload = {{"num_requests", requests}, {"arrival", {{"impl", "all_at_once"}}}};
  HarnessSettings h;
  switch (src.harness) {
    case Harness::trtllm_bench: h = trtllm_bench_setup(in, card, file, quant, fp8_kv, engine, workload, assumed); break;
    case Harness::triton_online: h = triton_online_setup(in, engine, workload, assumed); break;
    case Harness::static_session: h = static_session_setup(in, engine, workload, assumed); break;
    case Harness::vllm_sharegpt: vllm_sharegpt_setup(engine, workload, assumed); break;
    case Harness::bench_sharegpt: bench_sharegpt_setup(in, engine, workload, assumed); break;
    case Harness::none: break;
  }
  if (in.mtp_layers > 0) {
    // The MTP module's acceptance at its default (DeepSeek-V3 report; model/speculative.cpp).
    engine["speculative"] = {{"method", "mtp"}, {"num_speculative_tokens", in.mtp_layers}};
    assumed += "MTP acceptance 0.85 (the method's default); ";
  }
  if (h.padded_graphs) engine["cuda_graph_batch_sizes"] = row_cuda_graph_sizes(in, file);
  doc["engine"] = engine;
  doc["workload"] = workload;
  Scenario s = parse_scenario(doc, file + ": rows[" + in.id + "]");
  if (h.kv_free_fraction > 0) {
    // The utilization is computed from the parsed scenario's memory plan; written back into the
    // file so that the printed scenario needs no such step (JSON keeps the double exactly).
    set_free_memory_fraction(s, h.kv_free_fraction);
    doc["engine"]["gpu_memory_utilization"] = s.engine.gpu_memory_utilization;
  }
  return s;
}

}  // namespace

std::vector<PublishedRow> validate_published(const nlohmann::json& doc, const std::string& file, const PublishedOptions& options) {
  if (!doc.is_object() || doc.value("schema", "") != "servesim-published-engines/1") {
    throw InputError(file, "schema", "must be servesim-published-engines/1");
  }
  if (!doc.contains("rows") || !doc["rows"].is_array()) throw InputError(file, "rows", "missing array");
  const nlohmann::json& rows = doc["rows"];
  std::vector<RowInput> inputs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    RowInput in = read_row(rows[i], file, "rows[" + std::to_string(i) + "]");
    if (!options.only.empty() && in.id.find(options.only) == std::string::npos) continue;
    inputs.push_back(std::move(in));
  }
  std::vector<PublishedRow> out(inputs.size());
  std::vector<std::optional<Scenario>> scenarios(inputs.size());
  // Mapping reads files and may throw InputError: serial, so the first bad row is reported.
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const RowInput& in = inputs[i];
    PublishedRow& r = out[i];
    r.id = in.id;
    r.source = in.source;
    r.gpu = in.gpu;
    r.model = in.model;
    r.metric = in.metric;
    r.published = in.value;
    r.precision = quant_for(in.weights).empty() ? "bf16" : quant_for(in.weights) + (experts_only_mxfp4(in.weights) ? " experts" : "");
    const SourceMap* src = source_map(in);
    if (!src) throw InputError(file, "rows[" + in.id + "].source", "unknown source '" + in.source + "'");
    r.engine = src->label;
    r.profile = src->profile;
    const std::string card = card_for(in.model);
    r.feature = in.mtp_layers > 0 ? "MTP" : in.attention_dp && in.tp > 1 ? "attention DP" : "";
    if (!r.feature.empty()) r.engine += in.mtp_layers > 0 ? "+mtp" : "+adp";
    // GPT-OSS's MXFP4-experts rows are bounded apart: their MoE kernels are priced, not measured.
    if (experts_only_mxfp4(in.weights)) r.engine += "+mxfp4";
    r.skip = skip_reason(in, *src, card);
    if (r.skip.empty() && !metric_known(in.metric)) r.skip = "metric " + in.metric + " is not mapped";
    if (!r.skip.empty()) continue;
    if (card != in.model) r.assumptions += "card " + card + "; ";
    scenarios[i] = build_scenario(in, *src, card, file, options, r.assumptions, r.scenario);
    r.scenario["description"] = "published row " + in.id + " (" + in.source + "): " + in.metric + " " + key_number_text(in.value) +
                                "; assumed: " + r.assumptions + "written by servesim validate --suite published --only " + in.id +
                                " --print-scenario";
    r.requests = scenarios[i]->workload.num_requests;
  }
  if (!options.simulate) return out;
  tbb::parallel_for(std::size_t{0}, inputs.size(), [&](std::size_t i) {
    if (!scenarios[i]) return;
    out[i].predicted = metric_of(inputs[i], simulate(*scenarios[i]));
  });
  return out;
}

std::vector<ErrorBand> published_error_bands(const std::vector<PublishedRow>& rows) {
  struct Group {
    std::vector<double> abs_errors;
    std::set<std::string> labels;  // the release labels behind the band, for its source line
  };
  // (profile, gpu): the plain rows, then the attention-DP rows apart. The MTP rows (batch-1
  // min-latency runs, TP attention) and any other feature stay out of both.
  std::map<std::pair<std::string, std::string>, Group> plain, attention_dp;
  for (const PublishedRow& r : rows) {
    if (!r.skip.empty() || r.metric.find("throughput") == std::string::npos) continue;
    auto* groups = r.feature.empty() ? &plain : r.feature == "attention DP" ? &attention_dp : nullptr;
    if (!groups) continue;
    Group& g = (*groups)[{r.profile, r.gpu}];
    g.abs_errors.push_back(std::abs(r.error()));
    g.labels.insert(r.engine);
  }
  std::vector<ErrorBand> out;
  const auto add = [&out](const std::map<std::pair<std::string, std::string>, Group>& groups, const std::string& what,
                          const std::string& feature) {
    for (const auto& [key, g] : groups) {
      std::string labels;
      for (const std::string& l : g.labels) labels += (labels.empty() ? "" : ", ") + l;
      out.push_back({key.second, key.first, "throughput", g.abs_errors.size(), median(g.abs_errors),
                     *std::max_element(g.abs_errors.begin(), g.abs_errors.end()),
                     "published engine tables (tests/validation/published_engines.json: " + labels + "), " + what, feature});
    }
  };
  add(plain, "whole-engine throughput, nothing fitted to them", "");
  add(attention_dp,
      "whole-engine throughput of the attention-DP rows: DEVELOPMENT data, not held out (modelling choices saw them; "
      "docs/validation.md section 5)",
      kAttentionDpFeature);
  return out;
}

const char* slice_name(PublishedSlice by) {
  switch (by) {
    case PublishedSlice::gpu: return "gpu";
    case PublishedSlice::precision: return "precision";
    case PublishedSlice::model: return "model";
    case PublishedSlice::all: return "all";
  }
  return "";
}

std::vector<ValidationRow> published_validation_rows(const std::vector<PublishedRow>& rows, PublishedSlice by) {
  std::vector<ValidationRow> out;
  for (const PublishedRow& r : rows) {
    if (!r.skip.empty()) continue;
    const std::string& slice = by == PublishedSlice::gpu ? r.gpu : by == PublishedSlice::precision ? r.precision
                               : by == PublishedSlice::model                                   ? r.model
                                                                                               : std::string("all");
    out.push_back({"published", r.engine, slice, r.model, r.id, r.published, r.predicted});
  }
  return out;
}

// Bounds (data/validation/bounds.json, table "published", with each one's history) are at what the
// data supports today, not the accuracy target (kPublishedMedianTarget): each is the error when
// these mappings were written plus a margin, so a change that moves an engine's error past it
// fails. Why each engine misses by what it does (docs/validation.md):
// - trtllm-1.0-pytorch on H100/H200 (measured GPU profiles): median 6-7%, worst 21-24% (70B TP2
//   at 128/4096 and 405B TP8 at 128/2048 under-predicted; 8B at 128/128 on H200 +24%, where the
//   table puts H100 above H200). Tightened (h100 13% / 30% -> 11% / 27%, h200 10% / 30% -> 9% /
//   25%, all 15% -> 12%; 0.20 and 0.17 10% / 25% -> 7% / 20%) when the engines' context attention
//   got its own kernel's plateau (prefill_attention_peak_frac), then (h100 11% / 27% -> 9% / 24%,
//   h200 median 9% -> 8%, all median 12% -> 10%) when the FP8 quantizations TensorRT-LLM fuses
//   into their producers (fused_fp8_input_quant) left the layer's kernel list; the h200 worst
//   stays at 25% (the 8B 128/128 row moved from +19% to +24% with it). On B200/GB200 the GPU profiles are derived; their FP4 GEMM
//   curve, HBM rate (B200) and decode-attention curve come from others' B200 kernel benchmarks
//   (hwprofiles/b200.json). With them: B200 median 14%, worst +46% (NVFP4 MoE, Qwen3-30B-A3B,
//   +35-46%), 70B decode-heavy -25%; GB200 13% / 21%. Tightened from 35% / 100% (B200),
//   30% / 35% (GB200) and all 12% / 100% when those curves replaced Hopper's; still loose beside
//   the H100/H200 bounds.
// - trtllm-0.14-triton: online Triton rows (mean TTFT / ITL at a QPS); the Triton frontend and
//   the arrival process are not stated and not modelled: 20% median.
// - vllm-0.5.4: run on the vllm-0.5 profile, whose host cost (4 ms per step + 35 us per sequence,
//   serial with the GPU, + 0.97 ms per step for each TP worker beyond the first) comes from vLLM's
//   multi-step RFC, v0.6.0 blog and shm-broadcast PR #5399, not from these rows. Median 21%, worst
//   +112% (Mixtral 8x7B TP2; Mixtral +86-112% at every TP, Llama 3.1 8B TP1 +58%): the MoE rows
//   and the TP1 8B row miss for reasons the TP term does not touch; ShareGPT lengths are assumed
//   (not the benchmark's sample). Bounds: the error with the TP term plus a margin.
// - vllm-0.6.0 (SGLang's benchmark_vllm_060 tables: Llama 3.1 8B on one A100, 70B at TP4 on
//   H100, ShareGPT, Poisson at 4 / 8 req/s or all at once): run on the `vllm-0.6` profile with
//   nothing changed for them, and (since the multi-step scheduler) with the rows'
//   --num-scheduler-steps 10 as engine.num_scheduler_steps. Median TTFT 19-38% low (75-82% low
//   before multi-step was modelled), TPOT and E2E +1% to -15%, throughput +8% to +24% (the 70B
//   TP4 rows high: no TP host term in the `vllm-0.6` profile, docs/validation.md section 5). ITL rows
//   skipped (the client's per-chunk gap is not reported). Median 11.8%, worst 38.3%; bounds
//   that plus a margin (were 12% / 90% for 9.4% / 81.8% single-step).
std::vector<ValidationBound> published_bounds() { return bound_table("published"); }

std::string default_published_file() {
  return (std::filesystem::path(data_dir()) / "tests" / "validation" / "published_engines.json").string();
}

}  // namespace servesim
