// What one simulation run measures, collected as it goes (streaming: memory does not grow with
// the number of requests or tokens).
#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/metrics/log_histogram.hpp"

namespace servesim {

// One request class: its own latencies and SLO accounting (a request meets the SLO when each of
// its TTFT, TPOT and E2E is within the class's thresholds).
struct ClassMetrics {
  LogHistogram ttft_s, tpot_s, e2e_s;
  std::int64_t arrived = 0, completed = 0, rejected = 0, timed_out = 0, slo_met = 0;
  std::int64_t output_tokens = 0;
};

struct RunMetrics {
  // Latency distributions, seconds.
  LogHistogram ttft_s, tpot_s, itl_s, e2e_s;

  std::int64_t arrived = 0, completed = 0, rejected = 0;
  std::int64_t rejected_too_long = 0, rejected_queue_full = 0;  // the two causes of `rejected`
  std::int64_t timed_out = 0;           // gave up after workload.request_timeout_s
  std::int64_t trace_rows_skipped = 0;  // trace rows that are not requests (BurstGPT failures)
  std::vector<ClassMetrics> classes;
  std::int64_t preempted_requests = 0;  // requests preempted at least once
  std::int64_t preemptions = 0, recomputed_tokens = 0;
  std::int64_t prompt_tokens = 0, output_tokens = 0;  // of completed requests

  std::int64_t iterations = 0, prefill_iterations = 0, launch_bound_iterations = 0;
  double batch_seqs_sum = 0.0;
  std::int64_t max_batch_seqs = 0;
  double busy_s = 0.0, gpu_s = 0.0, bytes_moved = 0.0;

  // KV usage, as a time integral of used blocks for the time-weighted mean.
  std::int64_t kv_capacity_blocks = 0;
  std::int64_t kv_peak_used_blocks = 0;
  double kv_used_block_seconds = 0.0;

  TimeNs end_ns = 0;  // last event (the benchmark's duration, measured from t = 0)
};

}  // namespace servesim
