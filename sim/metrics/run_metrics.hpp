// What one simulation run measures, collected as it goes (streaming: memory does not grow with
// the number of requests or tokens).
#pragma once
#include <cstdint>

#include "sim/core/time.hpp"
#include "sim/metrics/log_histogram.hpp"
#include "sim/metrics/sampled_series.hpp"

namespace servesim {

struct RunMetrics {
  // Latency distributions, seconds.
  LogHistogram ttft_s, tpot_s, itl_s, e2e_s;
  LogHistogram queue_s;  // arrival to the first iteration that computes the request

  std::int64_t arrived = 0, completed = 0, rejected = 0;  // rejected: all reasons together
  std::int64_t rejected_queue_full = 0, rejected_timeout = 0;
  double waiting_request_seconds = 0.0;  // integral over time of requests waiting to start
  std::int64_t preempted_requests = 0;  // requests preempted at least once
  std::int64_t preemptions = 0, recomputed_tokens = 0;
  std::int64_t prompt_tokens = 0, output_tokens = 0;  // of completed requests

  std::int64_t iterations = 0, prefill_iterations = 0, launch_bound_iterations = 0;
  double batch_seqs_sum = 0.0;
  std::int64_t max_batch_seqs = 0;
  double busy_s = 0.0, gpu_s = 0.0, bytes_moved = 0.0;
  std::int64_t padding_tokens = 0, computed_tokens = 0;  // computed includes padding

  // Swap traffic over the host link.
  std::int64_t swap_outs = 0;
  double swap_out_bytes = 0.0, swap_in_bytes = 0.0, swap_s = 0.0;
  double launch_wait_s = 0.0;          // GPU idle inside steps waiting for kernel launches
  std::int64_t kernels = 0;            // kernels launched
  std::int64_t sampled_tokens = 0;     // tokens produced by iterations (decode + first tokens)
  LogHistogram hbm_bw_util_frac;       // per iteration: bytes / (iteration time x peak bandwidth)

  // KV usage, as a time integral of used blocks for the time-weighted mean.
  std::int64_t kv_capacity_blocks = 0;
  std::int64_t kv_peak_used_blocks = 0;
  double kv_used_block_seconds = 0.0;
  std::int64_t kv_unit_tokens = 0;
  // Internal fragmentation: unused slots of partly filled blocks, integrated over time, against
  // used slots; peak of the instantaneous fraction.
  double kv_frag_slot_seconds = 0.0, kv_used_slot_seconds = 0.0, kv_frag_peak_frac = 0.0;
  // Reservation: slots held by sequences when they left, and those never written.
  std::int64_t kv_released_reserved_slots = 0, kv_released_unwritten_slots = 0;
  std::int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0, prefix_evictions = 0;
  SampledSeries kv_usage;  // used fraction of the KV cache

  TimeNs end_ns = 0;  // last event (the benchmark's duration, measured from t = 0)
};

}  // namespace servesim
