// A serving benchmark's result file read into one shape, whichever client wrote it: `vllm bench
// serve --save-result` JSON, an inference-perf lifecycle summary (summary_lifecycle_metrics.json,
// stage_N_lifecycle_metrics.json) or a GenAI-Perf profile export (profile_export_genai_perf.json).
// What each format's keys mean, with the source read, is in bench_result.cpp and docs/validation.md
// ("Against your own server"). Only the load, the lengths and the measured figures are kept;
// everything is in seconds and tokens.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

enum class BenchFormat { vllm_bench, inference_perf, genai_perf };
const char* bench_format_name(BenchFormat f);  // "vllm-bench", "inference-perf", "genai-perf"
// --format's text; InputError naming `flag` for another.
BenchFormat parse_bench_format(const std::string& name, const std::string& flag);
// The format whose keys the document has; InputError naming the file otherwise.
BenchFormat detect_bench_format(const nlohmann::json& doc, const std::string& file);

// How the client sent its requests.
struct BenchLoad {
  double rate_per_s = 0.0;          // open loop at this rate (0: none stated)
  std::int64_t concurrency = 0;     // at most this many outstanding (0: no cap)
  std::string arrival = "poisson";  // the open loop's gaps: poisson, gamma (cv) or constant
  double cv = 1.0;                  // gamma's coefficient of variation
  std::int64_t num_requests = 0;    // requests sent (completed + failed)
};

// A length distribution as the file gives it (tokens).
struct BenchLengths {
  double mean = 0.0, stddev = 0.0;  // stddev 0: the file gives no spread
  std::int64_t min = 0, max = 0;    // 0: not stated
  std::vector<std::int64_t> per_request;  // every completed request's length, when the file lists them
};

struct BenchResult {
  std::string file;
  BenchFormat format = BenchFormat::vllm_bench;
  std::string model;                      // as the file names it ("" = not stated)
  std::int64_t tensor_parallel_size = 0;  // 0 = not stated
  BenchLoad load;
  BenchLengths prompt, output;
  std::int64_t completed = 0, failed = 0;
  // metric (ttft, tpot, itl, e2e) -> statistic (mean, p50, p90, p95, p99) -> seconds; only what the
  // file has. tpot is per request (latency - TTFT) / (output tokens - 1), as vLLM and servesim
  // define it; itl is every gap between two tokens, pooled.
  std::map<std::string, std::map<std::string, double>> latency;
  std::optional<double> requests_per_s, output_tokens_per_s;  // measured throughput
  std::vector<std::string> notes;  // how the file was read where a reader could think otherwise
};

struct BenchReadOptions {
  std::optional<BenchFormat> format;  // none: detected from the keys
  // inference-perf only: stream events its client stamped per output token (0: decided from the
  // file; see read_inference_perf in bench_result.cpp).
  int events_per_token = 0;
};

// Reads a result file; InputError naming the file and the key for a missing key, a wrong type or
// a value out of range (a negative rate, no completed request).
BenchResult read_bench_result(const nlohmann::json& doc, const std::string& file, const BenchReadOptions& options = {});

// The statistics compared, in print order, and the quantile each is.
struct BenchStatistic {
  const char* name;
  double quantile;  // < 0: the mean
};
const std::vector<BenchStatistic>& bench_statistics();

}  // namespace servesim
