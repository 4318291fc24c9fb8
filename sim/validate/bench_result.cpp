// Benchmark result files read into BenchResult: see bench_result.hpp. Each reader names the source
// it follows; a key the source marks optional is optional here, and every key read is type- and
// range-checked through JsonReader, so a bad file is one line naming the file and the key.
#include "sim/validate/bench_result.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

constexpr double kMaxCount = 1e12;
// A normal distribution's p90 - p10 in standard deviations (2 x 1.28155): the spread of a length
// a file gives only as percentiles (the vLLM runs suite reads its prompt lengths the same way).
constexpr double kP10ToP90Sigmas = 2.5631;

// A key that is there and not null (the clients write null for "not measured").
bool present(const JsonReader& r, const std::string& key) { return r.has(key) && !r.json().at(key).is_null(); }

std::int64_t count(JsonReader& r, const std::string& key, std::int64_t lo) {
  return r.integer_in(key, lo, static_cast<std::int64_t>(kMaxCount));
}

double non_negative(JsonReader& r, const std::string& key) { return r.number_in(key, 0.0, 1e15); }

// A JSON array of numbers >= 0 (per-request lists); InputError naming the element otherwise.
std::vector<double> number_list(JsonReader& r, const std::string& key) {
  const nlohmann::json& a = r.raw(key);
  if (!a.is_array()) r.fail(key, "must be an array of numbers");
  std::vector<double> out;
  out.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number() || !std::isfinite(a[i].get<double>()) || a[i].get<double>() < 0.0) {
      r.fail(key + "[" + std::to_string(i) + "]", "must be a number >= 0");
    }
    out.push_back(a[i].get<double>());
  }
  return out;
}

// numpy.percentile's default (linear between the two nearest ranks), as the clients compute theirs.
double percentile_of(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Statistics the file lacks, from per-request values (seconds).
void fill_from_values(std::map<std::string, double>& stats, const std::vector<double>& values) {
  if (values.empty()) return;
  for (const BenchStatistic& s : bench_statistics()) {
    if (stats.count(s.name)) continue;
    double sum = 0.0;
    for (double v : values) sum += v;
    stats[s.name] = s.quantile < 0.0 ? sum / static_cast<double>(values.size()) : percentile_of(values, s.quantile);
  }
}

// Lengths given as summary statistics: mean, min and max, and a spread from the standard
// deviation or from p10 and p90 (tokens).
BenchLengths lengths_from_stats(JsonReader s, const char* mean_key, const char* stddev_key) {
  BenchLengths l;
  l.mean = s.number_in(mean_key, 1.0, 1e9);
  if (present(s, "min")) l.min = static_cast<std::int64_t>(std::floor(s.number_in("min", 0.0, 1e9)));
  if (present(s, "max")) l.max = static_cast<std::int64_t>(std::ceil(s.number_in("max", 0.0, 1e9)));
  if (stddev_key && present(s, stddev_key)) {
    l.stddev = s.number_in(stddev_key, 0.0, 1e9);
  } else if (present(s, "p10") && present(s, "p90")) {
    l.stddev = std::max(0.0, (s.number_in("p90", 0.0, 1e9) - s.number_in("p10", 0.0, 1e9)) / kP10ToP90Sigmas);
  }
  return l;
}

// ---------------------------------------------------------------------------------------------
// vllm bench serve --save-result: vllm-project/vllm vllm/benchmarks/serve.py at commit
// 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1 (main_async builds result_json: date, backend,
// model_id, tokenizer_id, num_prompts, request_rate ("inf" or a number), burstiness,
// max_concurrency (null when unset), then benchmark()'s duration, completed, failed,
// total_input_tokens, total_output_tokens, request_throughput, output_throughput and, per metric
// ttft, tpot, itl (default) and e2el (when --percentile-metrics names it), mean_/median_/std_
// <metric>_ms and p<P>_<metric>_ms for each --metric-percentiles P (default 99); --save-detailed
// keeps input_lens, output_lens, ttfts (s), itls (lists, s) and errors; --metadata KEY=VALUE adds
// top-level strings). TPOT there is per request (latency - ttft) / (output_len - 1).
// Arrivals (get_request): gamma gaps of shape `burstiness` at request_rate (1: Poisson), rescaled
// so that num_prompts / request_rate is the whole send time; rate inf sends at once; a semaphore
// of max_concurrency holds the rest client-side (TTFT and latency start when the request is sent).
// --save-detailed: per-request lists (failed requests included, with output length 0): the
// lengths, and the statistics the summary lacks from the TTFTs and gaps.
void read_vllm_detailed(JsonReader& r, BenchResult& b) {
  const std::vector<double> in = number_list(r, "input_lens"), out = number_list(r, "output_lens");
  if (in.size() != out.size()) r.fail("output_lens", "must be as long as input_lens");
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] > 0.0) ok.push_back(i);
  }
  for (std::size_t i : ok) {
    b.prompt.per_request.push_back(static_cast<std::int64_t>(in[i]));
    b.output.per_request.push_back(static_cast<std::int64_t>(out[i]));
  }
  std::vector<double> ttfts, latencies, tpots, itls;
  if (present(r, "ttfts")) {
    const std::vector<double> t = number_list(r, "ttfts");
    if (t.size() != out.size()) r.fail("ttfts", "must be as long as output_lens");
    for (std::size_t i : ok) ttfts.push_back(t[i]);
  }
  if (present(r, "itls")) {
    const nlohmann::json& a = r.raw("itls");
    if (!a.is_array() || a.size() != out.size()) r.fail("itls", "must be an array of lists, as long as output_lens");
    for (std::size_t i : ok) {
      if (!a[i].is_array()) r.fail("itls[" + std::to_string(i) + "]", "must be an array of numbers");
      double sum = 0.0;
      for (const nlohmann::json& g : a[i]) {
        if (!g.is_number() || !(g.get<double>() >= 0.0) || !std::isfinite(g.get<double>())) {
          r.fail("itls[" + std::to_string(i) + "]", "must be an array of numbers >= 0");
        }
        itls.push_back(g.get<double>());
        sum += g.get<double>();
      }
      // TPOT as serve.py's calculate_metrics: (latency - TTFT) / (output tokens - 1), the gaps
      // summed; the latency is the TTFT plus the gaps (serve.py's timeline does the same).
      if (out[i] > 1.0) tpots.push_back(sum / (out[i] - 1.0));
      if (!ttfts.empty()) latencies.push_back(ttfts[latencies.size()] + sum);
    }
  }
  if (!ttfts.empty()) fill_from_values(b.latency["ttft"], ttfts);
  if (!itls.empty()) fill_from_values(b.latency["itl"], itls);
  if (!tpots.empty()) fill_from_values(b.latency["tpot"], tpots);
  if (!latencies.empty()) fill_from_values(b.latency["e2e"], latencies);
}

BenchResult read_vllm_bench(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file, "");
  BenchResult b;
  b.model = r.string("model_id");
  b.completed = count(r, "completed", 1);
  if (present(r, "failed")) b.failed = count(r, "failed", 0);
  b.load.num_requests = count(r, "num_prompts", 1);
  const nlohmann::json& rate = r.raw("request_rate");
  const bool infinite = rate.is_string() && rate.get<std::string>() == "inf";
  if (!infinite) {
    if (!rate.is_number()) r.fail("request_rate", "must be a number > 0 or \"inf\"");
    b.load.rate_per_s = r.positive("request_rate");
  }
  if (present(r, "max_concurrency")) b.load.concurrency = count(r, "max_concurrency", 1);
  const double burstiness = present(r, "burstiness") ? r.positive("burstiness") : 1.0;
  if (!infinite && burstiness != 1.0) {
    // A gamma of shape k has cv 1 / sqrt(k); servesim's gamma arrivals take cv in [0.05, 20].
    if (burstiness < 1.0 / 400.0) r.fail("burstiness", "must be >= 0.0025 (a gap cv of at most 20)");
    b.load.arrival = burstiness >= 400.0 ? "constant" : "gamma";
    b.load.cv = 1.0 / std::sqrt(burstiness);
  }
  b.prompt.mean = non_negative(r, "total_input_tokens") / static_cast<double>(b.completed);
  b.output.mean = non_negative(r, "total_output_tokens") / static_cast<double>(b.completed);
  if (b.prompt.mean < 1.0) r.fail("total_input_tokens", "must be at least one token per completed request");
  if (b.output.mean < 1.0) r.fail("total_output_tokens", "must be at least one token per completed request");
  if (present(r, "request_throughput")) b.requests_per_s = non_negative(r, "request_throughput");
  if (present(r, "output_throughput")) b.output_tokens_per_s = non_negative(r, "output_throughput");
  for (const char* tp_key : {"tensor_parallel_size", "tp"}) {  // --metadata tensor_parallel_size=N (a string)
    if (!present(r, tp_key)) continue;
    const nlohmann::json& v = r.raw(tp_key);
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos || std::stoi(text) < 1) {
      r.fail(tp_key, "must be a positive integer (or its text, as --metadata writes it)");
    }
    b.tensor_parallel_size = std::stoi(text);
  }
  const std::pair<const char*, const char*> metrics[] = {{"ttft", "ttft"}, {"tpot", "tpot"}, {"itl", "itl"}, {"e2el", "e2e"}};
  for (const auto& [theirs, ours] : metrics) {
    std::map<std::string, double> stats;
    const std::string suffix = std::string("_") + theirs + "_ms";
    if (present(r, "mean" + suffix)) stats["mean"] = 1e-3 * non_negative(r, "mean" + suffix);
    if (present(r, "median" + suffix)) stats["p50"] = 1e-3 * non_negative(r, "median" + suffix);
    for (const char* p : {"p50", "p90", "p95", "p99"}) {
      if (present(r, p + suffix)) stats[p] = 1e-3 * non_negative(r, p + suffix);
    }
    if (!stats.empty()) b.latency[ours] = stats;
  }
  if (present(r, "input_lens") && present(r, "output_lens")) read_vllm_detailed(r, b);
  return b;
}

// ---------------------------------------------------------------------------------------------
// inference-perf lifecycle metrics: kubernetes-sigs/inference-perf inference_perf/reportgen/base.py,
// summarize_requests(), at v0.2.0 (1ccc48b6bb9c9abb61558b719041fb000b265e59) and at 010d12fb62cc
// (2026): load_summary {count, schedule_delay, and per stage send_duration, requested_rate,
// achieved_rate, concurrency (concurrent loads, newer)}, successes {count, latency
// {request_latency, normalized_time_per_output_token, time_per_output_token,
// time_to_first_token, inter_token_latency}, throughput {input_tokens_per_sec,
// output_tokens_per_sec, total_tokens_per_sec, requests_per_sec}, prompt_len (v0.2-0.4;
// prompt_tokens later), output_len}, failures {count, ...}; each statistic {mean, min, max,
// median, p<P>} in seconds. summary_lifecycle_metrics.json covers every stage and has no rate;
// stage_N_lifecycle_metrics.json one stage. Lengths are client-side token counts (the output
// re-tokenised from the streamed text before v0.5).
BenchResult read_inference_perf(const nlohmann::json& doc, const std::string& file, int events_per_token) {
  JsonReader r(doc, file, "");
  BenchResult b;
  JsonReader load = r.object("load_summary");
  JsonReader ok = r.object("successes");
  b.completed = count(ok, "count", 1);
  if (present(r, "failures")) {
    JsonReader failures = r.object("failures");
    b.failed = count(failures, "count", 0);
  }
  b.load.num_requests = count(load, "count", 1);
  JsonReader throughput = ok.object("throughput");
  b.requests_per_s = non_negative(throughput, "requests_per_sec");
  b.output_tokens_per_s = non_negative(throughput, "output_tokens_per_sec");
  if (present(load, "concurrency")) {
    b.load.concurrency = count(load, "concurrency", 1);
  } else if (present(load, "requested_rate")) {
    b.load.rate_per_s = load.positive("requested_rate");
    b.notes.push_back("arrivals: Poisson at load_summary.requested_rate (inference-perf's constant and poisson load timers both "
                      "draw exponential gaps: inference_perf/loadgen/load_timer.py, v0.2.0-v0.6)");
  } else {
    if (!(*b.requests_per_s > 0.0)) throughput.fail("requests_per_sec", "must be > 0 (the summary has no requested_rate)");
    b.load.rate_per_s = *b.requests_per_s;
    b.notes.push_back("a summary of every stage has no requested rate: the arrival rate is successes.throughput.requests_per_sec "
                      "over the whole run (a stage_N_lifecycle_metrics.json has its stage's own)");
  }
  JsonReader latency = ok.object("latency");
  const std::pair<const char*, const char*> metrics[] = {
      {"time_to_first_token", "ttft"}, {"time_per_output_token", "tpot"}, {"inter_token_latency", "itl"}, {"request_latency", "e2e"}};
  for (const auto& [theirs, ours] : metrics) {
    if (!present(latency, theirs)) continue;  // null when no request streamed
    JsonReader s = latency.object(theirs);
    std::map<std::string, double> stats;
    for (const auto& [key, name] : {std::pair<const char*, const char*>{"mean", "mean"}, {"median", "p50"}, {"p90", "p90"},
                                    {"p95", "p95"}, {"p99", "p99"}}) {
      if (present(s, key)) stats[name] = non_negative(s, key);
    }
    b.latency[ours] = stats;
  }
  // Stream events per token. inference-perf v0.2.0 stamped every line of the SSE stream, the data
  // line and the blank line after it (inference_perf/apis/completion.py at v0.2.0), so against
  // vLLM it saw two events per token microseconds apart: its time_per_output_token is half the
  // time between tokens and its inter_token_latency a mix of those gaps and near-zero ones
  // (docs/validation.md section 7). Seen in the file as an ITL median under a quarter of the TPOT
  // median; then TPOT is doubled and ITL, whose percentiles mean nothing, is not compared.
  if (events_per_token == 0) {
    events_per_token = 1;
    const auto tpot = b.latency.find("tpot"), itl = b.latency.find("itl");
    if (tpot != b.latency.end() && itl != b.latency.end() && tpot->second.count("p50") && itl->second.count("p50") &&
        itl->second.at("p50") < 0.25 * tpot->second.at("p50")) {
      events_per_token = 2;
    }
  }
  if (events_per_token == 2) {
    if (b.latency.count("tpot")) {
      for (auto& entry : b.latency["tpot"]) entry.second *= 2.0;
    }
    b.latency.erase("itl");
    b.notes.push_back("two stream events per token (inference-perf before v0.3 stamped the SSE data line and the blank line after "
                      "it): time_per_output_token doubled, inter_token_latency not compared (--events-per-token 1 to read it as is)");
  }
  const char* prompt_key = present(ok, "prompt_len") ? "prompt_len" : "prompt_tokens";
  b.prompt = lengths_from_stats(ok.object(prompt_key), "mean", nullptr);
  b.output = lengths_from_stats(ok.object("output_len"), "mean", nullptr);
  b.notes.push_back("output lengths as inference-perf counted them (before v0.5 by re-tokenising the streamed text, not the "
                    "server's count): --set workload.output_tokens=... where the server's are known");
  return b;
}

// ---------------------------------------------------------------------------------------------
// GenAI-Perf profile export (profile_export_genai_perf.json): triton-inference-server/perf_analyzer
// genai-perf/genai_perf/export_data/json_exporter.py (the statistics, then "input_config": the
// command's arguments) and metrics/statistics.py (each metric {unit, avg, p1 ... p99, min, max,
// std}; time metrics in ms) at commit 263c5f6e0c7a6c15472a54409174981f67930cfe. Metrics
// (metrics/llm_metrics.py): request_latency, time_to_first_token, time_to_second_token,
// inter_token_latency, output_token_throughput_per_user, output_sequence_length,
// input_sequence_length, request_throughput, output_token_throughput, request_count.
// inter_token_latency is per request (latency - TTFT) / (output tokens - 1)
// (profile_data_parser/llm_profile_data_parser.py): vLLM's TPOT, compared as tpot. input_config
// is argparse's namespace before the config-file change of 2025-03-17 (9fd79801: model [list],
// concurrency, request_rate) and the config tree after it (model_names, perf_analyzer.stimulus
// {concurrency: N} or {request_rate: R}).
// A time metric's statistics, ms in the file, seconds here.
std::map<std::string, double> genai_time_stats(JsonReader& r, const std::string& key) {
  JsonReader s = r.object(key);
  if (present(s, "unit") && s.string("unit") != "ms") s.fail("unit", "must be \"ms\"");
  std::map<std::string, double> stats;
  for (const auto& [theirs, ours] : {std::pair<const char*, const char*>{"avg", "mean"}, {"p50", "p50"}, {"p90", "p90"},
                                     {"p95", "p95"}, {"p99", "p99"}}) {
    if (present(s, theirs)) stats[ours] = 1e-3 * non_negative(s, theirs);
  }
  return stats;
}

std::string genai_model(JsonReader& config) {
  for (const char* key : {"model_names", "model"}) {
    if (!present(config, key)) continue;
    const nlohmann::json& m = config.raw(key);
    if (m.is_string()) return m.get<std::string>();
    if (!m.is_array() || m.empty() || !m[0].is_string()) config.fail(key, "must be a model name or a list of them");
    return m[0].get<std::string>();
  }
  return "";
}

BenchResult read_genai_perf(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file, "");
  BenchResult b;
  b.latency["ttft"] = genai_time_stats(r, "time_to_first_token");
  b.latency["tpot"] = genai_time_stats(r, "inter_token_latency");
  b.latency["e2e"] = genai_time_stats(r, "request_latency");
  b.notes.push_back("GenAI-Perf's inter_token_latency is per request (latency - TTFT) / (output tokens - 1): compared as TPOT");
  // request_count since genai-perf of 2024-12-23 (bf54dfb5); before it the count is --request-count
  // in input_config, else unknown (0: against_case then asks for workload.num_requests).
  if (present(r, "request_count")) {
    JsonReader count_stats = r.object("request_count");
    b.completed = static_cast<std::int64_t>(std::llround(count_stats.number_in("avg", 1.0, kMaxCount)));
  }
  b.load.num_requests = b.completed;
  JsonReader rt = r.object("request_throughput");
  b.requests_per_s = non_negative(rt, "avg");
  if (present(r, "output_token_throughput")) {
    JsonReader ot = r.object("output_token_throughput");
    b.output_tokens_per_s = non_negative(ot, "avg");
  }
  b.prompt = lengths_from_stats(r.object("input_sequence_length"), "avg", "std");
  b.output = lengths_from_stats(r.object("output_sequence_length"), "avg", "std");
  JsonReader config = r.object("input_config");
  b.model = genai_model(config);
  std::optional<JsonReader> stimulus;
  if (present(config, "perf_analyzer")) {
    JsonReader pa = config.object("perf_analyzer");
    if (present(pa, "stimulus")) stimulus.emplace(pa.object("stimulus"));
  }
  if (b.load.num_requests == 0 && present(config, "request_count")) b.load.num_requests = count(config, "request_count", 0);
  JsonReader& load = stimulus ? *stimulus : config;
  if (present(load, "concurrency")) {
    b.load.concurrency = count(load, "concurrency", 1);
  } else if (present(load, "request_rate")) {
    b.load.rate_per_s = load.positive("request_rate");
    b.load.arrival = "constant";
    b.notes.push_back("arrivals: evenly spaced at request_rate (perf_analyzer's default --request-distribution constant)");
  } else {
    load.fail("concurrency", "missing: neither concurrency nor request_rate is set");
  }
  return b;
}

}  // namespace

const char* bench_format_name(BenchFormat f) {
  switch (f) {
    case BenchFormat::vllm_bench: return "vllm-bench";
    case BenchFormat::inference_perf: return "inference-perf";
    case BenchFormat::genai_perf: return "genai-perf";
  }
  return "";
}

BenchFormat parse_bench_format(const std::string& name, const std::string& flag) {
  for (BenchFormat f : {BenchFormat::vllm_bench, BenchFormat::inference_perf, BenchFormat::genai_perf}) {
    if (name == bench_format_name(f)) return f;
  }
  throw InputError(flag, "", "must be vllm-bench, inference-perf or genai-perf, got '" + name + "'");
}

BenchFormat detect_bench_format(const nlohmann::json& doc, const std::string& file) {
  if (!doc.is_object()) throw InputError(file, "(top level)", "must be an object (a benchmark result)");
  if (doc.contains("load_summary") && doc.contains("successes")) return BenchFormat::inference_perf;
  if (doc.contains("input_config") && doc.contains("time_to_first_token")) return BenchFormat::genai_perf;
  if (doc.contains("model_id") && (doc.contains("num_prompts") || doc.contains("completed"))) return BenchFormat::vllm_bench;
  throw InputError(file, "(top level)",
                   "not a result file servesim reads: expected vllm bench serve's (model_id, num_prompts), inference-perf's "
                   "(load_summary, successes) or GenAI-Perf's (input_config, time_to_first_token) keys; --format names one");
}

BenchResult read_bench_result(const nlohmann::json& doc, const std::string& file, const BenchReadOptions& options) {
  const BenchFormat format = options.format ? *options.format : detect_bench_format(doc, file);
  BenchResult b;
  switch (format) {
    case BenchFormat::vllm_bench: b = read_vllm_bench(doc, file); break;
    case BenchFormat::inference_perf: b = read_inference_perf(doc, file, options.events_per_token); break;
    case BenchFormat::genai_perf: b = read_genai_perf(doc, file); break;
  }
  b.file = file;
  b.format = format;
  return b;
}

const std::vector<BenchStatistic>& bench_statistics() {
  static const std::vector<BenchStatistic> stats = {{"mean", -1.0}, {"p50", 0.5}, {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99}};
  return stats;
}

}  // namespace servesim
