// What one simulation run measures, collected as it goes (streaming: memory does not grow with
// the number of requests or tokens).
#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/metrics/log_histogram.hpp"
#include "sim/metrics/sampled_series.hpp"

namespace servesim {

// One request class: its own latencies and SLO accounting (a request meets the SLO when each of
// its TTFT, TPOT and E2E is within the class's thresholds).
struct ClassMetrics {
  LogHistogram ttft_s, tpot_s, e2e_s;
  std::int64_t arrived = 0, completed = 0, rejected = 0, timed_out = 0, slo_met = 0;
  std::int64_t output_tokens = 0;
  void merge(const ClassMetrics& o) {
    ttft_s.merge(o.ttft_s);
    tpot_s.merge(o.tpot_s);
    e2e_s.merge(o.e2e_s);
    arrived += o.arrived;
    completed += o.completed;
    rejected += o.rejected;
    timed_out += o.timed_out;
    slo_met += o.slo_met;
    output_tokens += o.output_tokens;
  }
};

struct RunMetrics {
  // Latency distributions, seconds.
  LogHistogram ttft_s, tpot_s, itl_s, e2e_s;
  LogHistogram queue_s;  // arrival to the first iteration that computes the request

  std::int64_t arrived = 0, completed = 0;
  // rejected: every request that never completed for a server-side reason, the sum of the three
  // causes after it. timed_out (the client gave up after workload.request_timeout_s) is separate.
  std::int64_t rejected = 0;
  std::int64_t rejected_too_long = 0, rejected_queue_full = 0, rejected_timeout = 0;
  std::int64_t timed_out = 0;
  std::int64_t trace_rows_skipped = 0;  // trace rows that are not requests (BurstGPT failures)
  std::vector<ClassMetrics> classes;
  double waiting_request_seconds = 0.0;  // integral over time of requests waiting to start
  std::int64_t preempted_requests = 0;  // requests preempted at least once
  std::int64_t preemptions = 0, recomputed_tokens = 0;
  std::int64_t prompt_tokens = 0, output_tokens = 0;  // of completed requests (output: as asked)
  std::int64_t completed_generated_tokens = 0;        // tokens the completed requests generated

  std::int64_t iterations = 0, prefill_iterations = 0, launch_bound_iterations = 0;
  double batch_seqs_sum = 0.0;
  std::int64_t max_batch_seqs = 0;
  double busy_s = 0.0, gpu_s = 0.0, bytes_moved = 0.0;  // bytes: HBM traffic of one GPU (per-GPU shard)
  double comm_s = 0.0;    // time in tensor/pipeline-parallel communication
  double bubble_s = 0.0;  // pipeline stage-slot time left idle (bubbles)
  double contention_s = 0.0;  // iteration time added by other instances on the same GPU
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

  // Adds another replica's figures: counts and time integrals sum, histograms merge, maxima take
  // the max. The fleet's KV peak and usage series are not sums of the replicas': the engine
  // tracks them (FleetKv).
  void merge(const RunMetrics& o) {
    ttft_s.merge(o.ttft_s);
    tpot_s.merge(o.tpot_s);
    itl_s.merge(o.itl_s);
    e2e_s.merge(o.e2e_s);
    queue_s.merge(o.queue_s);
    arrived += o.arrived;
    completed += o.completed;
    rejected += o.rejected;
    rejected_queue_full += o.rejected_queue_full;
    rejected_timeout += o.rejected_timeout;
    rejected_too_long += o.rejected_too_long;
    timed_out += o.timed_out;
    trace_rows_skipped += o.trace_rows_skipped;
    if (classes.size() < o.classes.size()) classes.resize(o.classes.size());
    for (std::size_t c = 0; c < o.classes.size(); ++c) classes[c].merge(o.classes[c]);
    waiting_request_seconds += o.waiting_request_seconds;
    preempted_requests += o.preempted_requests;
    preemptions += o.preemptions;
    recomputed_tokens += o.recomputed_tokens;
    prompt_tokens += o.prompt_tokens;
    output_tokens += o.output_tokens;
    completed_generated_tokens += o.completed_generated_tokens;
    iterations += o.iterations;
    prefill_iterations += o.prefill_iterations;
    launch_bound_iterations += o.launch_bound_iterations;
    batch_seqs_sum += o.batch_seqs_sum;
    max_batch_seqs = max_batch_seqs > o.max_batch_seqs ? max_batch_seqs : o.max_batch_seqs;
    busy_s += o.busy_s;
    gpu_s += o.gpu_s;
    bytes_moved += o.bytes_moved;
    comm_s += o.comm_s;
    bubble_s += o.bubble_s;
    contention_s += o.contention_s;
    padding_tokens += o.padding_tokens;
    computed_tokens += o.computed_tokens;
    swap_outs += o.swap_outs;
    swap_out_bytes += o.swap_out_bytes;
    swap_in_bytes += o.swap_in_bytes;
    swap_s += o.swap_s;
    launch_wait_s += o.launch_wait_s;
    kernels += o.kernels;
    sampled_tokens += o.sampled_tokens;
    hbm_bw_util_frac.merge(o.hbm_bw_util_frac);
    kv_capacity_blocks += o.kv_capacity_blocks;
    kv_used_block_seconds += o.kv_used_block_seconds;
    kv_unit_tokens = kv_unit_tokens > o.kv_unit_tokens ? kv_unit_tokens : o.kv_unit_tokens;
    kv_frag_slot_seconds += o.kv_frag_slot_seconds;
    kv_used_slot_seconds += o.kv_used_slot_seconds;
    kv_frag_peak_frac = kv_frag_peak_frac > o.kv_frag_peak_frac ? kv_frag_peak_frac : o.kv_frag_peak_frac;
    kv_released_reserved_slots += o.kv_released_reserved_slots;
    kv_released_unwritten_slots += o.kv_released_unwritten_slots;
    prefix_query_tokens += o.prefix_query_tokens;
    prefix_hit_tokens += o.prefix_hit_tokens;
    prefix_evictions += o.prefix_evictions;
    end_ns = end_ns > o.end_ns ? end_ns : o.end_ns;
  }
};

}  // namespace servesim
