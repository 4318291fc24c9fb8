// What one simulation run measures, collected as it goes (streaming: memory does not grow with
// the number of requests or tokens). Every field is declared once, in a list below: its type, how
// several replicas' values combine into the fleet's, and, when report.json shows it as it is, its
// report path and meaning. The structs, their merge() and those report figures
// (io/report_metrics.cpp) are generated from the lists, so a new counter cannot be left out of
// multi-replica reports; tests/unit/test_run_metrics.cpp checks that merge covers every field.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/metrics/log_histogram.hpp"
#include "sim/metrics/sampled_series.hpp"

namespace servesim {

// How one field of several replicas combines into the fleet's.
enum class Merge {
  sum,        // counts and time integrals
  max,        // peaks, the last event
  histogram,  // LogHistogram::merge
  per_class,  // element by element (ClassMetrics::merge)
  fleet,      // not a combination of the replicas': the event loop sets the fleet's (FleetKv, simulation.cpp)
};

template <Merge how, class T>
void merge_field(T& into, const T& from) {
  if constexpr (how == Merge::sum) {
    into += from;
  } else if constexpr (how == Merge::max) {
    into = into > from ? into : from;
  } else if constexpr (how == Merge::histogram) {
    into.merge(from);
  } else if constexpr (how == Merge::per_class) {
    if (into.size() < from.size()) into.resize(from.size());
    for (std::size_t c = 0; c < from.size(); ++c) into[c].merge(from[c]);
  }
}

// X(type, name, merge, report path, meaning) per field; path "" when the report shows the field
// only inside computed figures. Comments in the lists are /* */: a // comment would swallow the
// line continuation.
#define SERVESIM_CLASS_METRICS(X)           \
  X(LogHistogram, ttft_s, histogram, "", "") \
  X(LogHistogram, tpot_s, histogram, "", "") \
  X(LogHistogram, e2e_s, histogram, "", "")  \
  X(std::int64_t, arrived, sum, "", "")      \
  X(std::int64_t, completed, sum, "", "")    \
  X(std::int64_t, rejected, sum, "", "")     \
  X(std::int64_t, timed_out, sum, "", "")    \
  X(std::int64_t, slo_met, sum, "", "")      \
  X(std::int64_t, output_tokens, sum, "", "") \
  X(TimeNs, last_finish_ns, max, "", "") /* per stage: the last completion (the stage's throughput window ends there) */

#define SERVESIM_DECLARE_METRIC(type, name, how, path, meaning) type name{};
#define SERVESIM_MERGE_METRIC(type, name, how, path, meaning) merge_field<Merge::how>(name, o.name);

// One request class: its own latencies and SLO accounting (a request meets the SLO when each of
// its TTFT, TPOT and E2E is within the class's thresholds). The same figures per arrival stage
// (workload.arrival.stages), without the SLO.
struct ClassMetrics {
  SERVESIM_CLASS_METRICS(SERVESIM_DECLARE_METRIC)
  void merge(const ClassMetrics& o) { SERVESIM_CLASS_METRICS(SERVESIM_MERGE_METRIC) }
};

#define SERVESIM_RUN_METRICS(X)                                                                                          \
  /* Latency distributions, seconds. */                                                                                 \
  X(LogHistogram, ttft_s, histogram, "latency.ttft_s", "time to first token")                                           \
  X(LogHistogram, tpot_s, histogram, "latency.tpot_s", "time per output token after the first")                         \
  X(LogHistogram, itl_s, histogram, "latency.itl_s", "inter-token latency")                                             \
  X(LogHistogram, e2e_s, histogram, "latency.e2e_s", "end-to-end latency")                                              \
  X(LogHistogram, queue_s, histogram, "latency.queue_s", "time from arrival to the first iteration computing it")       \
  /* Requests. rejected: every request that never completed for a server-side reason, the sum of the three causes */   \
  /* after it. timed_out (the client gave up after workload.request_timeout_s) is separate. */                          \
  X(std::int64_t, arrived, sum, "requests.arrived", "requests that arrived")                                            \
  X(std::int64_t, completed, sum, "requests.completed", "requests completed")                                           \
  X(std::int64_t, rejected, sum, "requests.rejected", "requests rejected (too long, queue full, waited too long)")      \
  X(std::int64_t, rejected_too_long, sum, "requests.rejected_too_long", "rejected: longer than max_model_len or the KV cache") \
  X(std::int64_t, rejected_queue_full, sum, "requests.rejected_queue_full", "rejected: the waiting queue was full")      \
  X(std::int64_t, rejected_timeout, sum, "requests.rejected_timeout", "rejected: not started within max_waiting_time_s") \
  X(std::int64_t, timed_out, sum, "requests.timed_out", "requests whose client gave up (request_timeout_s)")            \
  X(std::int64_t, trace_rows_skipped, sum, "requests.trace_rows_skipped",                                               \
    "trace rows read but not turned into requests (BurstGPT failures)")                                                 \
  X(std::vector<ClassMetrics>, classes, per_class, "", "")                                                              \
  X(std::vector<ClassMetrics>, stages, per_class, "", "") /* per arrival stage; none without stages */ \
  X(double, waiting_request_seconds, sum, "", "") /* integral over time of requests waiting to start */                 \
  /* Each started request's queue delay q (arrival to first iteration) against its arrival time t, as least-squares */ \
  /* sums: the slope is how fast the queue grows (requests.queue_growth_frac). Seconds. */                              \
  X(double, queue_fit_n, sum, "", "")                                                                                   \
  X(double, queue_fit_t, sum, "", "")                                                                                   \
  X(double, queue_fit_q, sum, "", "")                                                                                   \
  X(double, queue_fit_tt, sum, "", "")                                                                                  \
  X(double, queue_fit_tq, sum, "", "")                                                                                  \
  X(TimeNs, last_arrival_ns, max, "", "") /* the latest arrival */                                                      \
  X(std::int64_t, preempted_requests, sum, "requests.preempted", "requests preempted at least once")                    \
  X(std::int64_t, preemptions, sum, "requests.preemptions", "preemption events (a request can be preempted several times)") \
  X(std::int64_t, recomputed_tokens, sum, "requests.recomputed_tokens", "tokens computed again after preemption by recompute") \
  X(std::int64_t, prompt_tokens, sum, "", "") /* of completed requests */                                               \
  X(std::int64_t, output_tokens, sum, "", "") /* of completed requests, as asked */                                     \
  X(std::int64_t, completed_generated_tokens, sum, "", "") /* tokens the completed requests generated */                \
  /* Iterations. */                                                                                                     \
  X(std::int64_t, iterations, sum, "batch.iterations", "iterations run")                                                \
  X(std::int64_t, prefill_iterations, sum, "batch.prefill_iterations", "iterations with a prefill chunk")               \
  X(std::int64_t, launch_bound_iterations, sum, "", "")                                                                 \
  X(double, batch_seqs_sum, sum, "", "")                                                                                \
  X(std::int64_t, max_batch_seqs, max, "batch.max_size", "most sequences in one iteration")                             \
  X(double, busy_s, sum, "", "")                                                                                        \
  X(double, gpu_s, sum, "", "")                                                                                         \
  X(double, bytes_moved, sum, "", "") /* HBM traffic of one GPU (per-GPU shard) */                                      \
  X(double, comm_s, sum, "", "") /* time in tensor/pipeline-parallel communication */                                   \
  X(double, bubble_s, sum, "", "") /* pipeline stage-slot time left idle (bubbles) */                                   \
  X(double, contention_s, sum, "", "") /* iteration time added by other instances on the same GPU */                    \
  X(std::int64_t, padding_tokens, sum, "batch.padding_tokens", "tokens computed for padding only (static batches)")     \
  X(std::int64_t, computed_tokens, sum, "", "") /* includes padding */                                                  \
  /* Swap traffic over the host link. */                                                                                \
  X(std::int64_t, swap_outs, sum, "requests.swapped_out", "preemptions by swap")                                        \
  X(double, swap_out_bytes, sum, "kv_cache.swap_out_bytes", "KV bytes swapped out to host memory")                      \
  X(double, swap_in_bytes, sum, "kv_cache.swap_in_bytes", "KV bytes swapped back in from host memory")                  \
  X(double, swap_s, sum, "kv_cache.swap_s", "time spent copying swapped KV")                                            \
  /* KV offload tiers (engine.kv_offload): prefix blocks loaded from host memory / disk, their copies, stalls. */      \
  X(std::int64_t, offload_loads, sum, "", "")                                                                           \
  X(std::int64_t, offload_cpu_hit_tokens, sum, "", "")                                                                  \
  X(std::int64_t, offload_disk_hit_tokens, sum, "", "")                                                                 \
  X(double, offload_load_bytes, sum, "", "")                                                                            \
  X(double, offload_load_s, sum, "", "")                                                                                \
  X(double, offload_wait_s, sum, "", "")                                                                                \
  X(double, offload_stall_s, sum, "", "")                                                                               \
  X(double, offload_stored_bytes, sum, "", "")                                                                          \
  X(double, offload_disk_write_bytes, sum, "", "")                                                                      \
  X(std::int64_t, offload_dropped_blocks, sum, "", "")                                                                  \
  X(std::int64_t, offload_cpu_capacity_blocks, sum, "", "")                                                             \
  X(std::int64_t, offload_disk_capacity_blocks, sum, "", "")                                                            \
  X(double, launch_wait_s, sum, "", "") /* GPU idle inside steps waiting for kernel launches */                         \
  X(std::int64_t, kernels, sum, "", "") /* kernels launched */                                                          \
  X(std::int64_t, sampled_tokens, sum, "", "") /* tokens produced by iterations (decode + first tokens) */              \
  /* Speculative decoding: decodes verified, draft tokens proposed and accepted, tokens the verify passes emitted. */  \
  X(std::int64_t, spec_verified_seqs, sum, "", "")                                                                      \
  X(std::int64_t, spec_draft_tokens, sum, "", "")                                                                       \
  X(std::int64_t, spec_accepted_tokens, sum, "", "")                                                                    \
  X(std::int64_t, spec_emitted_tokens, sum, "", "")                                                                     \
  X(LogHistogram, hbm_bw_util_frac, histogram, "gpu.hbm_bw_util_frac_per_iteration", "HBM bandwidth used per iteration") \
  /* KV usage, as a time integral of used blocks for the time-weighted mean. */                                         \
  X(std::int64_t, kv_capacity_blocks, sum, "kv_cache.capacity_blocks", "allocation units of KV cache, all replicas")    \
  X(std::int64_t, kv_peak_used_blocks, fleet, "", "")                                                                   \
  X(double, kv_used_block_seconds, sum, "", "")                                                                         \
  X(std::int64_t, kv_unit_tokens, max, "kv_cache.allocation_unit_tokens", "tokens per allocation unit (1 under token reservation)") \
  /* Internal fragmentation: unused slots of partly filled blocks, integrated over time, against used slots; peak */    \
  /* of the instantaneous fraction. */                                                                                  \
  X(double, kv_frag_slot_seconds, sum, "", "")                                                                          \
  X(double, kv_used_slot_seconds, sum, "", "")                                                                          \
  X(double, kv_frag_peak_frac, max, "kv_cache.internal_fragmentation_peak_frac", "internal fragmentation, peak")        \
  /* Reservation: slots held by sequences when they left, and those never written. */                                   \
  X(std::int64_t, kv_released_reserved_slots, sum, "", "")                                                              \
  X(std::int64_t, kv_released_unwritten_slots, sum, "", "")                                                             \
  X(std::int64_t, prefix_query_tokens, sum, "", "")                                                                     \
  X(std::int64_t, prefix_hit_tokens, sum, "kv_cache.prefix_hit_tokens", "prompt tokens found in the prefix cache")      \
  X(std::int64_t, prefix_evictions, sum, "kv_cache.prefix_evicted_blocks", "cached prefix blocks evicted")              \
  X(SampledSeries, kv_usage, fleet, "", "") /* used fraction of the KV cache */                                         \
  X(TimeNs, end_ns, max, "", "") /* last event (the benchmark's duration, measured from t = 0) */

struct RunMetrics {
  SERVESIM_RUN_METRICS(SERVESIM_DECLARE_METRIC)
  // Adds another replica's figures, field by field as the list says.
  void merge(const RunMetrics& o) { SERVESIM_RUN_METRICS(SERVESIM_MERGE_METRIC) }
};

}  // namespace servesim
