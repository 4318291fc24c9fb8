// The registry of report metric paths: see report_metrics.hpp.
#include "sim/io/report_metrics.hpp"

#include <algorithm>

#include "sim/core/suggest.hpp"
#include "sim/core/error.hpp"

namespace servesim {

namespace {

// A streaming histogram's summary (report_io's summarize()): these figures under its path.
void add_histogram(std::vector<ReportMetric>& out, const std::string& path, const std::string& what) {
  const std::pair<const char*, const char*> stats[] = {
      {"count", "samples of "}, {"mean", "mean "}, {"p50", "median "}, {"p95", "95th percentile of "},
      {"p99", "99th percentile of "}, {"max", "largest "}, {"jitter", "standard deviation / mean of "}};
  for (const auto& [stat, prefix] : stats) out.push_back({path + "." + stat, prefix + what, ""});
}

// A table, one entry per report figure (histogram summaries added by add_histogram): long because
// the report has that many figures, not because it does several things.
std::vector<ReportMetric> build_registry() {
  std::vector<ReportMetric> m = {
      {"batch.iterations", "iterations run", ""},
      {"batch.max_size", "most sequences in one iteration", ""},
      {"batch.mean_size", "sequences per iteration, mean", ""},
      {"batch.padding_tokens", "tokens computed for padding only (static batches)", ""},
      {"batch.padding_waste_frac", "padding tokens / computed tokens", ""},
      {"batch.prefill_iterations", "iterations with a prefill chunk", ""},
      {"batch.saturation_context_tokens", "context the saturation batch size assumes", ""},
      {"batch.saturation_size", "cost-model decode batch beyond which doubling adds < 5% tokens/s", ""},
      {"cluster.gpus", "GPUs of all replicas", ""},
      {"cluster.instances_per_gpu", "model instances sharing each GPU", ""},
      {"cluster.kv_transfer.bytes", "KV bytes sent from prefill to decode replicas", "disaggregated serving"},
      {"cluster.kv_transfer.mean_s", "mean duration of one KV transfer", "disaggregated serving"},
      {"cluster.kv_transfer.transfers", "prefill-to-decode KV transfers", "disaggregated serving"},
      {"cluster.replicas", "replicas", ""},
      {"cold_start.captured_batch_sizes", "CUDA graphs captured at start-up", ""},
      {"cold_start.cuda_context_s", "start-up: CUDA context and library handles", ""},
      {"cold_start.framework_init_s", "start-up: framework initialisation", ""},
      {"cold_start.graph_capture_s", "start-up: CUDA graph capture", ""},
      {"cold_start.weights_s", "start-up: reading the weights", ""},
      {"cold_start_s", "start-up time before the first request, total", ""},
      {"gpu.busy_frac", "time a replica's GPUs run iterations, per replica", ""},
      {"gpu.comm_frac", "busy time in collectives (tensor/pipeline parallel)", "tensor or pipeline parallelism"},
      {"gpu.contention_frac", "busy time added by instances sharing a GPU", "instances_per_gpu > 1"},
      {"gpu.hbm_bw_util_frac", "HBM bytes moved / (peak bandwidth x time), per replica", ""},
      {"gpu.kernels_per_token", "kernel launches per sampled token", ""},
      {"gpu.launch_bound_frac", "iterations whose launches take longer than their kernels", ""},
      {"gpu.launch_time_frac", "busy time the GPU waits on kernel launches", ""},
      {"gpu.pipeline_bubble_frac", "busy time pipeline stages sit idle", "tensor or pipeline parallelism"},
      {"kv_cache.allocation_unit_tokens", "tokens per allocation unit (1 under token reservation)", ""},
      {"kv_cache.block_size", "tokens per KV block", ""},
      {"kv_cache.capacity_blocks", "allocation units of KV cache, all replicas", ""},
      {"kv_cache.capacity_tokens", "tokens the KV cache holds, all replicas", ""},
      {"kv_cache.internal_fragmentation_frac", "unused slots in partly filled blocks / used slots, time-weighted", ""},
      {"kv_cache.internal_fragmentation_peak_frac", "internal fragmentation, peak", ""},
      {"kv_cache.mean_used_frac", "KV cache in use, time-weighted mean", ""},
      {"kv_cache.peak_used_frac", "KV cache in use, peak", ""},
      {"kv_cache.prefix_evicted_blocks", "cached prefix blocks evicted", ""},
      {"kv_cache.prefix_hit_ratio", "prompt tokens found in the prefix cache / looked up", ""},
      {"kv_cache.prefix_hit_tokens", "prompt tokens found in the prefix cache", ""},
      {"kv_cache.reservation_waste_frac", "reserved slots never written / reserved slots", ""},
      {"kv_cache.swap_in_bytes", "KV bytes swapped back in from host memory", ""},
      {"kv_cache.swap_out_bytes", "KV bytes swapped out to host memory", ""},
      {"kv_cache.swap_s", "time spent copying swapped KV", ""},
      {"kv_cache.usage_series_step_s", "sampling step of kv_cache.usage_series", ""},
      {"memory.activation_bytes", "per GPU: activations", ""},
      {"memory.budget_bytes", "per GPU: gpu_memory_utilization x memory", ""},
      {"memory.kv_bytes", "per GPU: KV cache", ""},
      {"memory.kv_bytes_per_token", "per GPU: KV bytes of one token", ""},
      {"memory.runtime_bytes", "per GPU: CUDA context, workspaces, graphs", ""},
      {"memory.weight_bytes", "per GPU: weights", ""},
      {"quantization.emulated", "the GPU lacks the w8a8 format: weights converted at run time", ""},
      {"requests.arrived", "requests that arrived", ""},
      {"requests.completed", "requests completed", ""},
      {"requests.mean_waiting", "requests waiting to start, time-weighted mean", ""},
      {"requests.preempted", "requests preempted at least once", ""},
      {"requests.preemptions", "preemption events (a request can be preempted several times)", ""},
      {"requests.recomputed_tokens", "tokens computed again after preemption by recompute", ""},
      {"requests.rejected", "requests rejected (too long, queue full, waited too long)", ""},
      {"requests.rejected_queue_full", "rejected: the waiting queue was full", ""},
      {"requests.rejected_timeout", "rejected: not started within max_waiting_time_s", ""},
      {"requests.rejected_too_long", "rejected: longer than max_model_len or the KV cache", ""},
      {"requests.swapped_out", "preemptions by swap", ""},
      {"requests.timed_out", "requests whose client gave up (request_timeout_s)", ""},
      {"requests.trace_rows_skipped", "trace rows read but not turned into requests (BurstGPT failures)", ""},
      {"sim.events", "events the simulator handled", ""},
      {"sim.simulated_s", "simulated time", ""},
      {"slo.goodput_requests_per_s", "requests completed within their SLO per second", ""},
      {"slo.met", "every class met its SLO (latency targets and success fraction)", "some class has a latency target (null otherwise)"},
      {"slo.success_frac", "requests completed within their SLO / arrived", ""},
      {"throughput.output_tokens_per_s", "output tokens per second", ""},
      {"throughput.requests_per_s", "completed requests per second", ""},
      {"throughput.total_tokens_per_s", "prompt and output tokens per second", ""},
  };
  add_histogram(m, "gpu.hbm_bw_util_frac_per_iteration", "HBM bandwidth used per iteration");
  add_histogram(m, "latency.e2e_s", "end-to-end latency");
  add_histogram(m, "latency.itl_s", "inter-token latency");
  add_histogram(m, "latency.queue_s", "time from arrival to the first iteration computing it");
  add_histogram(m, "latency.tpot_s", "time per output token after the first");
  add_histogram(m, "latency.ttft_s", "time to first token");
  std::sort(m.begin(), m.end(), [](const ReportMetric& a, const ReportMetric& b) { return a.path < b.path; });
  return m;
}

void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, double>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array()) {
    // Time series (arrays of numbers or points, e.g. kv_cache.usage_series) vary in length with the
    // run's duration: they are not drift metrics. Arrays of objects (replicas, slo.classes) are.
    if (!j.empty() && !j.front().is_object()) return;
    for (std::size_t i = 0; i < j.size(); ++i) {
      // Arrays of named objects (slo.classes) are keyed by name so reordering is not drift.
      const std::string key = j[i].is_object() && j[i].contains("name") && j[i]["name"].is_string() ? j[i]["name"].get<std::string>() : std::to_string(i);
      flatten(j[i], prefix + "." + key, out);
    }
  } else if (j.is_number()) {
    out[prefix] = j.get<double>();
  } else if (j.is_boolean()) {
    out[prefix] = j.get<bool>() ? 1.0 : 0.0;
  }
}

}  // namespace

const std::vector<ReportMetric>& report_metrics() {
  static const std::vector<ReportMetric> registry = build_registry();
  return registry;
}

std::vector<std::string> report_metric_paths() {
  std::vector<std::string> paths;
  for (const auto& m : report_metrics()) paths.push_back(m.path);
  return paths;
}

void check_report_metrics(const std::vector<std::string>& names, const std::string& where) {
  const std::vector<std::string> paths = report_metric_paths();
  for (const std::string& name : names) {
    if (std::binary_search(paths.begin(), paths.end(), name)) continue;
    throw InputError(where, "", "unknown metric '" + name + "'" + did_you_mean(name, paths) +
                                    " (servesim list metrics prints them all)");
  }
}

std::map<std::string, double> flatten_report(const nlohmann::json& report) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : report.items()) {
    if (k == "scenario" || k == "model" || k == "hardware" || k == "schema") continue;
    flatten(v, k, out);
  }
  out.erase("sim.wall_s");
  return out;
}

}  // namespace servesim
