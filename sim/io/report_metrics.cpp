// The report's figures, declared once (path, meaning, when written, computation), and the registry of
// report metric paths derived from them: see report_metrics.hpp.
#include "sim/io/report_metrics.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"
#include "sim/core/time.hpp"
#include "sim/metrics/log_histogram.hpp"
#include "sim/metrics/run_metrics.hpp"
#include "sim/metrics/slo.hpp"
#include "sim/model/speculative.hpp"
#include "sim/serve/cold_start.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

namespace {

using Json = nlohmann::json;
using Src = const ReportSource&;

double ratio(double a, double b) { return b > 0.0 ? a / b : 0.0; }
double as_double(std::int64_t n) { return static_cast<double>(n); }

// The statistics of a histogram figure, in one place for the writer and the registry.
struct HistogramStat {
  const char* name;
  const char* meaning_prefix;  // "99th percentile of " + the figure's meaning
  double (*value)(const LogHistogram&);
};
const HistogramStat kHistogramStats[] = {
    {"count", "samples of ", nullptr},  // an integer: written apart
    {"mean", "mean ", [](const LogHistogram& h) { return h.mean(); }},
    {"p50", "median ", [](const LogHistogram& h) { return h.quantile(0.50); }},
    {"p95", "95th percentile of ", [](const LogHistogram& h) { return h.quantile(0.95); }},
    {"p99", "99th percentile of ", [](const LogHistogram& h) { return h.quantile(0.99); }},
    {"max", "largest ", [](const LogHistogram& h) { return h.max(); }},
    {"jitter", "standard deviation / mean of ", [](const LogHistogram& h) { return h.mean() > 0.0 ? h.stddev() / h.mean() : 0.0; }},
};

ReportFigure histogram(std::string path, std::string meaning, Json (*value)(Src)) {
  ReportFigure f{std::move(path), std::move(meaning), value};
  f.histogram = true;
  return f;
}

// A RunMetrics field the report shows as it is: its value, or a histogram's summary.
template <auto field>
Json field_value(Src x) {
  return x.metrics.*field;
}
template <auto field>
Json field_histogram(Src x) {
  return histogram_summary(x.metrics.*field);
}
template <auto field>
void add_field_figure(std::vector<ReportFigure>& out, const char* path, const char* meaning) {
  if (*path == '\0') return;  // shown only inside computed figures
  using T = std::remove_cvref_t<decltype(std::declval<RunMetrics>().*field)>;
  if constexpr (std::is_same_v<T, LogHistogram>) {
    out.push_back(histogram(path, meaning, &field_histogram<field>));
  } else if constexpr (std::is_arithmetic_v<T>) {
    out.push_back({path, meaning, &field_value<field>});
  }
}

// The figures below are written for the fleet and for each replica (FigureScope::run). First the
// fields of RunMetrics shown as they are, from their declarations (metrics/run_metrics.hpp).
std::vector<ReportFigure> field_figures() {
  std::vector<ReportFigure> out;
#define SERVESIM_FIELD_FIGURE(type, name, how, path, meaning) add_field_figure<&RunMetrics::name>(out, path, meaning);
  SERVESIM_RUN_METRICS(SERVESIM_FIELD_FIGURE)
#undef SERVESIM_FIELD_FIGURE
  return out;
}

// Least-squares slope of the started requests' queue delay against their arrival time: a request
// arriving t seconds later waits slope x t longer. When arrivals (rate a) outpace what the
// configuration serves (rate s), request k starts about k / s after the first and arrives k / a
// after it, so the slope is a / s - 1; when it keeps up, the delay does not trend and the slope
// is about 0. A queue that shrinks over the run (a burst at the start draining) counts as 0: the
// figure is a growth, and the report's figures are never negative (summary.hpp).
double queue_growth(const RunMetrics& m) {
  const double n = m.queue_fit_n, spread = n * m.queue_fit_tt - m.queue_fit_t * m.queue_fit_t;
  if (n < 3.0 || !(spread > 0.0)) return 0.0;
  return std::max(0.0, (n * m.queue_fit_tq - m.queue_fit_t * m.queue_fit_q) / spread);
}

// Overloaded: the arrivals outpace the service by more than 5% (a noisy queue near capacity
// trends a few percent either way), and the queue delay grows over the arrivals by more than the
// median TTFT, so queueing, not computing, is most of the first token's wait.
constexpr double kOverloadGrowth = 0.05;
bool overloaded(const RunMetrics& m) {
  const double growth = queue_growth(m);
  return growth > kOverloadGrowth && growth * ns_to_seconds(m.last_arrival_ns) > m.ttft_s.quantile(0.5);
}

// Figures computed from several fields or from the run.
std::vector<ReportFigure> request_figures() {
  return {
      {"requests.mean_waiting", "requests waiting to start, time-weighted mean",
       [](Src x) -> Json { return ratio(x.metrics.waiting_request_seconds, x.duration_s); }},
      {"requests.offered_rate_per_s", "requests arrived per second up to the last arrival",
       [](Src x) -> Json { return ratio(as_double(x.metrics.arrived), ns_to_seconds(x.metrics.last_arrival_ns)); }},
      {"requests.queue_growth_frac",
       "queue delay gained per second of arrival time (least-squares slope over started requests, 0 if negative): about "
       "offered / served rate - 1 when arrivals outpace the configuration, about 0 when it keeps up",
       [](Src x) -> Json { return queue_growth(x.metrics); }},
      {"requests.overloaded",
       "arrivals outpace what the configuration serves: queue_growth_frac > 0.05 and the queue delay grows by more than the "
       "median TTFT over the arrivals (TTFT is then mostly queueing)",
       [](Src x) -> Json { return overloaded(x.metrics); }},
      {"throughput.output_tokens_per_s", "output tokens per second",
       [](Src x) -> Json { return ratio(as_double(x.metrics.output_tokens), x.duration_s); }},
      {"throughput.requests_per_s", "completed requests per second",
       [](Src x) -> Json { return ratio(as_double(x.metrics.completed), x.duration_s); }},
      {"throughput.total_tokens_per_s", "prompt and output tokens per second",
       [](Src x) -> Json { return ratio(as_double(x.metrics.output_tokens + x.metrics.prompt_tokens), x.duration_s); }},
  };
}

std::vector<ReportFigure> kv_cache_figures() {
  return {
      {"kv_cache.block_size", "tokens per KV block", [](Src x) -> Json { return x.scenario.engine.block_size; }},
      {"kv_cache.capacity_tokens", "tokens the KV cache holds, all replicas",
       [](Src x) -> Json { return x.metrics.kv_capacity_blocks * x.metrics.kv_unit_tokens; }},
      {"kv_cache.internal_fragmentation_frac", "unused slots in partly filled blocks / used slots, time-weighted",
       [](Src x) -> Json { return ratio(x.metrics.kv_frag_slot_seconds, x.metrics.kv_used_slot_seconds); }},
      {"kv_cache.mean_used_frac", "KV cache in use, time-weighted mean",
       [](Src x) -> Json { return ratio(x.metrics.kv_used_block_seconds, as_double(x.metrics.kv_capacity_blocks) * x.duration_s); }},
      {"kv_cache.peak_used_frac", "KV cache in use, peak",
       [](Src x) -> Json { return ratio(as_double(x.metrics.kv_peak_used_blocks), as_double(x.metrics.kv_capacity_blocks)); }},
      {"kv_cache.prefix_hit_ratio", "prompt tokens found in the prefix cache / looked up",
       [](Src x) -> Json { return ratio(as_double(x.metrics.prefix_hit_tokens), as_double(x.metrics.prefix_query_tokens)); }},
      {"kv_cache.reservation_waste_frac", "reserved slots never written / reserved slots",
       [](Src x) -> Json {
         return ratio(as_double(x.metrics.kv_released_unwritten_slots), as_double(x.metrics.kv_released_reserved_slots));
       }},
      {"kv_cache.usage_series_step_s", "sampling step of kv_cache.usage_series",
       [](Src x) -> Json { return ns_to_seconds(x.metrics.kv_usage.step_ns()); }},
  };
}

bool has_contention(Src x) { return x.metrics.contention_s > 0.0; }
bool attention_dp(Src x) { return x.scenario.parallel.enable_attention_dp; }
bool has_parallelism(Src x) { return x.metrics.comm_s > 0.0 || x.metrics.bubble_s > 0.0; }

std::vector<ReportFigure> batch_gpu_memory_figures() {
  return {
      {"batch.mean_size", "sequences per iteration, mean",
       [](Src x) -> Json { return ratio(x.metrics.batch_seqs_sum, as_double(x.metrics.iterations)); }},
      {"batch.padding_waste_frac", "padding tokens / computed tokens",
       [](Src x) -> Json { return ratio(as_double(x.metrics.padding_tokens), as_double(x.metrics.computed_tokens)); }},
      // busy_s sums each step's time in double seconds while the clock advances in whole ns, so a
      // GPU busy the whole run can come out a few ulps above 1.
      {"gpu.busy_frac", "time a replica's GPUs run iterations, per replica",
       [](Src x) -> Json { return std::min(1.0, ratio(x.metrics.busy_s, x.duration_s * x.replicas)); }},
      {"batch.attention_dp_rank_mean_size",
       "sequences per iteration on the busiest attention-DP rank, mean (batch.mean_size / ranks x parallel.attention_dp_load_imbalance)",
       [](Src x) -> Json {
         const ParallelConfig& par = x.scenario.parallel;
         return ratio(x.metrics.batch_seqs_sum, as_double(x.metrics.iterations)) * par.attention_dp_load_imbalance /
                static_cast<double>(par.attention_dp_size());
       },
       "attention DP (parallel.enable_attention_dp)", attention_dp},
      {"gpu.comm_frac", "busy time in collectives (tensor/pipeline parallel; under attention DP the MoE layers' token exchange)",
       [](Src x) -> Json { return ratio(x.metrics.comm_s, x.metrics.busy_s); }, "tensor or pipeline parallelism", has_parallelism},
      {"gpu.contention_frac", "busy time added by instances sharing a GPU",
       [](Src x) -> Json { return ratio(x.metrics.contention_s, x.metrics.busy_s); }, "instances_per_gpu > 1", has_contention},
      {"gpu.hbm_bw_util_frac", "HBM bytes moved / (peak bandwidth x time), per replica",
       [](Src x) -> Json {
         return ratio(x.metrics.bytes_moved, x.duration_s * x.replicas * x.scenario.hw.hbm_bandwidth_bytes_per_s);
       }},
      {"gpu.kernels_per_token", "kernel launches per sampled token",
       [](Src x) -> Json { return ratio(as_double(x.metrics.kernels), as_double(x.metrics.sampled_tokens)); }},
      {"gpu.launch_bound_frac", "iterations whose launches take longer than their kernels",
       [](Src x) -> Json { return ratio(as_double(x.metrics.launch_bound_iterations), as_double(x.metrics.iterations)); }},
      {"gpu.launch_time_frac", "busy time the GPU waits on kernel launches",
       [](Src x) -> Json { return ratio(x.metrics.launch_wait_s, x.metrics.busy_s); }},
      {"gpu.pipeline_bubble_frac", "busy time pipeline stages sit idle",
       [](Src x) -> Json { return ratio(x.metrics.bubble_s, x.metrics.busy_s); }, "tensor or pipeline parallelism", has_parallelism},
      {"memory.activation_bytes", "per GPU: activations", [](Src x) -> Json { return x.memory.activation_bytes; }},
      {"memory.budget_bytes", "per GPU: gpu_memory_utilization x memory", [](Src x) -> Json { return x.memory.budget_bytes; }},
      {"memory.kv_bytes", "per GPU: KV cache", [](Src x) -> Json { return x.memory.kv_bytes; }},
      {"memory.kv_bytes_per_token", "per GPU: KV bytes of one token", [](Src x) -> Json { return x.memory.kv_bytes_per_token; }},
      {"memory.runtime_bytes", "per GPU: CUDA context, workspaces, graphs", [](Src x) -> Json { return x.memory.runtime_bytes; }},
      {"memory.weight_bytes", "per GPU: weights", [](Src x) -> Json { return x.memory.weight_bytes; }},
  };
}

bool speculating(Src x) { return x.scenario.engine.speculative.enabled(); }

// Speculative decoding (engine.speculative): written only when it is on.
std::vector<ReportFigure> speculative_figures() {
  const char* when = "speculative decoding (engine.speculative)";
  return {
      {"speculative.verified_sequences", "decoding sequences verified (one verify pass each per step)",
       [](Src x) -> Json { return x.metrics.spec_verified_seqs; }, when, speculating},
      {"speculative.draft_tokens", "draft tokens proposed (k per verified sequence)",
       [](Src x) -> Json { return x.metrics.spec_draft_tokens; }, when, speculating},
      {"speculative.accepted_tokens", "draft tokens accepted", [](Src x) -> Json { return x.metrics.spec_accepted_tokens; }, when,
       speculating},
      {"speculative.draft_acceptance_frac", "draft tokens accepted / proposed (vLLM's draft acceptance rate)",
       [](Src x) -> Json { return ratio(as_double(x.metrics.spec_accepted_tokens), as_double(x.metrics.spec_draft_tokens)); }, when,
       speculating},
      {"speculative.tokens_per_step", "tokens a verify pass gave a sequence, mean (accepted drafts + 1, capped at its output)",
       [](Src x) -> Json { return ratio(as_double(x.metrics.spec_emitted_tokens), as_double(x.metrics.spec_verified_seqs)); }, when,
       speculating},
      {"speculative.expected_tokens_per_step", "(1 - alpha^(k+1)) / (1 - alpha): the acceptance model's mean, uncapped",
       [](Src x) -> Json {
         const SpeculativeConfig& sp = x.scenario.engine.speculative;
         return speculative_tokens_per_step(sp.acceptance_rate, sp.num_speculative_tokens);
       },
       when, speculating},
  };
}

bool offloading(Src x) { return x.scenario.engine.kv_offload.enabled(); }
std::int64_t gpu_hit_tokens(Src x) { return x.metrics.prefix_hit_tokens - x.metrics.offload_cpu_hit_tokens - x.metrics.offload_disk_hit_tokens; }

// KV offload tiers (engine.kv_offload): written only when a tier is on. Hits are prompt tokens
// found in each tier against prompt tokens looked up (kv_cache.prefix_hit_ratio counts all
// tiers: a block loaded from a lower tier is a GPU hit by the time its request is admitted).
std::vector<ReportFigure> offload_figures() {
  const char* when = "KV offload tiers (engine.kv_offload)";
  return {
      {"kv_offload.gpu_hit_ratio", "prompt tokens found in the GPU prefix cache / looked up",
       [](Src x) -> Json { return ratio(as_double(gpu_hit_tokens(x)), as_double(x.metrics.prefix_query_tokens)); },
       when, offloading},
      {"kv_offload.cpu_hit_ratio", "prompt tokens loaded from the CPU tier / looked up",
       [](Src x) -> Json { return ratio(as_double(x.metrics.offload_cpu_hit_tokens), as_double(x.metrics.prefix_query_tokens)); }, when,
       offloading},
      {"kv_offload.disk_hit_ratio", "prompt tokens loaded from the disk tier / looked up",
       [](Src x) -> Json { return ratio(as_double(x.metrics.offload_disk_hit_tokens), as_double(x.metrics.prefix_query_tokens)); }, when,
       offloading},
      {"kv_offload.gpu_hit_tokens", "prompt tokens found in the GPU prefix cache",
       [](Src x) -> Json { return gpu_hit_tokens(x); }, when, offloading},
      {"kv_offload.cpu_hit_tokens", "prompt tokens loaded from the CPU tier", [](Src x) -> Json { return x.metrics.offload_cpu_hit_tokens; },
       when, offloading},
      {"kv_offload.disk_hit_tokens", "prompt tokens loaded from the disk tier",
       [](Src x) -> Json { return x.metrics.offload_disk_hit_tokens; }, when, offloading},
      {"kv_offload.loads", "requests that loaded blocks from a lower tier", [](Src x) -> Json { return x.metrics.offload_loads; }, when,
       offloading},
      {"kv_offload.load_bytes", "KV bytes copied up to the GPU, per GPU", [](Src x) -> Json { return x.metrics.offload_load_bytes; }, when,
       offloading},
      {"kv_offload.load_s", "time the loads' copies took (bytes / link bandwidth), summed", [](Src x) -> Json { return x.metrics.offload_load_s; },
       when, offloading},
      {"kv_offload.mean_wait_s", "async loads: a request's wait for its copy, queueing on the link included, mean",
       [](Src x) -> Json { return x.scenario.engine.kv_offload.blocking_load ? 0.0 : ratio(x.metrics.offload_wait_s, as_double(x.metrics.offload_loads)); },
       when, offloading},
      {"kv_offload.stall_s", "blocking offload: step time waiting for copies (loads, and the save of each step's prefilled KV)", [](Src x) -> Json { return x.metrics.offload_stall_s; },
       when, offloading},
      {"kv_offload.stored_bytes", "KV bytes of evicted GPU blocks copied to the CPU tier (asynchronous, off the step), per GPU",
       [](Src x) -> Json { return x.metrics.offload_stored_bytes; }, when, offloading},
      {"kv_offload.disk_write_bytes", "KV bytes the CPU tier moved down to disk, per GPU",
       [](Src x) -> Json { return x.metrics.offload_disk_write_bytes; }, when, offloading},
      {"kv_offload.dropped_blocks", "blocks evicted from the lowest tier", [](Src x) -> Json { return x.metrics.offload_dropped_blocks; },
       when, offloading},
      {"kv_offload.cpu_capacity_blocks", "blocks the CPU tier holds, all replicas",
       [](Src x) -> Json { return x.metrics.offload_cpu_capacity_blocks; }, when, offloading},
      {"kv_offload.disk_capacity_blocks", "blocks the disk tier holds, all replicas",
       [](Src x) -> Json { return x.metrics.offload_disk_capacity_blocks; }, when, offloading},
  };
}

bool disaggregated(Src x) { return x.scenario.disaggregation.enabled; }

// Written once, at the top level (FigureScope::fleet).
std::vector<ReportFigure> fleet_figures() {
  return {
      // Decode saturation is a property of the model on the hardware, reported once for the fleet.
      {"batch.saturation_context_tokens", "context the saturation batch size assumes",
       [](Src x) -> Json { return x.result.saturation.context_tokens; }},
      {"batch.saturation_size", "cost-model decode batch beyond which doubling adds < 5% tokens/s",
       [](Src x) -> Json { return x.result.saturation.batch_size; }},
      {"cluster.gpus", "GPUs of all replicas", [](Src x) -> Json { return x.result.gpus; }},
      {"cluster.attention_dp_ranks", "attention data-parallel ranks per replica (each its own batch share and KV; experts over all)",
       [](Src x) -> Json { return x.scenario.parallel.attention_dp_size(); }, "attention DP (parallel.enable_attention_dp)", attention_dp},
      {"cluster.instances_per_gpu", "model instances sharing each GPU", [](Src x) -> Json { return x.scenario.instances; }},
      {"cluster.kv_transfer.bytes", "KV bytes sent from prefill to decode replicas",
       [](Src x) -> Json { return x.result.kv_transfer_bytes; }, "disaggregated serving", disaggregated},
      {"cluster.kv_transfer.mean_s", "mean duration of one KV transfer",
       [](Src x) -> Json { return ratio(x.result.kv_transfer_s, as_double(x.result.kv_transfers)); }, "disaggregated serving",
       disaggregated},
      {"cluster.kv_transfer.transfers", "prefill-to-decode KV transfers", [](Src x) -> Json { return x.result.kv_transfers; },
       "disaggregated serving", disaggregated},
      {"cluster.replicas", "replicas", [](Src x) -> Json { return x.result.replicas.size(); }},
      {"cold_start.captured_batch_sizes", "CUDA graphs captured at start-up", [](Src x) -> Json { return x.cold_start.captured_batch_sizes; }},
      {"cold_start.cuda_context_s", "start-up: CUDA context and library handles", [](Src x) -> Json { return x.cold_start.cuda_context_s; }},
      {"cold_start.framework_init_s", "start-up: framework initialisation", [](Src x) -> Json { return x.cold_start.framework_init_s; }},
      {"cold_start.graph_capture_s", "start-up: CUDA graph capture", [](Src x) -> Json { return x.cold_start.graph_capture_s; }},
      {"cold_start.weights_s", "start-up: reading the weights", [](Src x) -> Json { return x.cold_start.weights_s; }},
      {"cold_start_s", "start-up time before the first request, total", [](Src x) -> Json { return x.cold_start.total_s; }},
      {"quantization.emulated", "the GPU lacks the w8a8 format: weights converted at run time",
       [](Src x) -> Json { return x.scenario.quant_emulated; }},
      {"sim.events", "events the simulator handled", [](Src x) -> Json { return x.result.events; }},
      {"sim.simulated_s", "simulated time", [](Src x) -> Json { return x.duration_s; }},
      {"slo.goodput_requests_per_s", "requests completed within their SLO per second",
       [](Src x) -> Json { return x.slo.goodput_requests_per_s; }},
      // Without a latency target there is no SLO: "met" is null, not true (status says "none").
      {"slo.met", "every class met its SLO (latency targets and success fraction)",
       [](Src x) -> Json { return x.slo.defined ? Json(x.slo.met) : Json(nullptr); }, "some class has a latency target (null otherwise)"},
      {"slo.success_frac", "requests completed within their SLO / arrived", [](Src x) -> Json { return x.slo.success_frac; }},
  };
}

std::vector<ReportFigure> build_figures() {
  std::vector<ReportFigure> out;
  for (auto section : {field_figures, request_figures, kv_cache_figures, batch_gpu_memory_figures, speculative_figures,
                       offload_figures}) {
    for (ReportFigure& f : section()) out.push_back(std::move(f));
  }
  for (ReportFigure& f : fleet_figures()) {
    f.scope = FigureScope::fleet;
    out.push_back(std::move(f));
  }
  return out;
}

// The registry: each figure's path, a histogram's as one path per statistic, sorted.
std::vector<ReportMetric> build_registry() {
  std::vector<ReportMetric> m;
  for (const ReportFigure& f : report_figures()) {
    if (!f.histogram) {
      m.push_back({f.path, f.meaning, f.present});
      continue;
    }
    for (const HistogramStat& stat : kHistogramStats) m.push_back({f.path + "." + stat.name, stat.meaning_prefix + f.meaning, f.present});
  }
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

const std::vector<ReportFigure>& report_figures() {
  static const std::vector<ReportFigure> figures = build_figures();
  return figures;
}

void write_report_figures(nlohmann::json& report, const ReportSource& source, FigureScope scope,
                          const std::function<bool(const std::string& path)>& only) {
  for (const ReportFigure& f : report_figures()) {
    if (f.scope != scope || (only && !only(f.path)) || (f.written && !f.written(source))) continue;
    std::string pointer = "/" + f.path;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    report[nlohmann::json::json_pointer(pointer)] = f.value(source);
  }
}

nlohmann::json histogram_summary(const LogHistogram& h) {
  nlohmann::json j = {{kHistogramStats[0].name, h.count()}};
  for (const HistogramStat& stat : kHistogramStats) {
    if (stat.value) j[stat.name] = stat.value(h);
  }
  return j;
}

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
  out.erase("sim.wall_s");  // in reports written before it left report.json
  return out;
}

}  // namespace servesim
