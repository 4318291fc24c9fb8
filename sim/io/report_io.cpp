// Report writer. Every figure here comes from RunMetrics/MemoryPlan; nothing is recomputed.
// Only sim.wall_s depends on the machine: everything else is identical for the same inputs.
#include "sim/io/report_io.hpp"

#include <algorithm>
#include <cstdio>

#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/cold_start.hpp"
#include "sim/metrics/slo.hpp"

namespace servesim {

namespace {

nlohmann::json summarize(const LogHistogram& h) {
  const double mean = h.mean();
  return {{"count", h.count()},
          {"mean", mean},
          {"p50", h.quantile(0.50)},
          {"p95", h.quantile(0.95)},
          {"p99", h.quantile(0.99)},
          {"max", h.max()},
          {"jitter", mean > 0.0 ? h.stddev() / mean : 0.0}};
}

double ratio(double a, double b) { return b > 0.0 ? a / b : 0.0; }

// The metric sections shared by the fleet view (top level) and each replica: requests,
// latency, throughput, kv_cache, batch, gpu. `replicas` divides GPU-time fractions so they are
// per replica (a fleet of two busy replicas is 100% busy, not 200%).
void metric_sections(nlohmann::json& j, const RunMetrics& m, const Scenario& s, double replicas) {
  const double hbm_bandwidth_bytes_per_s = s.hw.hbm_bandwidth_bytes_per_s;
  const double duration_s = ns_to_seconds(m.end_ns);
  const double capacity = static_cast<double>(m.kv_capacity_blocks);
  const double iterations = static_cast<double>(m.iterations);
  j["requests"] = {{"arrived", m.arrived},
                   {"completed", m.completed},
                   {"rejected", m.rejected},
                   {"rejected_too_long", m.rejected_too_long},
                   {"rejected_queue_full", m.rejected_queue_full},
                   {"rejected_timeout", m.rejected_timeout},
                   {"timed_out", m.timed_out},
                   {"trace_rows_skipped", m.trace_rows_skipped},
                   {"preempted", m.preempted_requests},
                   {"preemptions", m.preemptions},
                   {"recomputed_tokens", m.recomputed_tokens},
                   {"swapped_out", m.swap_outs},
                   {"mean_waiting", ratio(m.waiting_request_seconds, duration_s)}};
  j["latency"] = {{"ttft_s", summarize(m.ttft_s)}, {"tpot_s", summarize(m.tpot_s)},
                  {"itl_s", summarize(m.itl_s)}, {"e2e_s", summarize(m.e2e_s)},
                  {"queue_s", summarize(m.queue_s)}};
  j["throughput"] = {{"requests_per_s", ratio(static_cast<double>(m.completed), duration_s)},
                     {"output_tokens_per_s", ratio(static_cast<double>(m.output_tokens), duration_s)},
                     {"total_tokens_per_s", ratio(static_cast<double>(m.output_tokens + m.prompt_tokens), duration_s)}};
  nlohmann::json usage = nlohmann::json::array();
  for (const auto& [t, v] : m.kv_usage.points()) usage.push_back({ns_to_seconds(t), v});
  j["kv_cache"] = {{"capacity_blocks", m.kv_capacity_blocks},
                   {"block_size", s.engine.block_size},
                   {"allocation_unit_tokens", m.kv_unit_tokens},
                   {"reservation", kv_reservation_name(s.engine.kv_reservation)},
                   {"capacity_tokens", m.kv_capacity_blocks * m.kv_unit_tokens},
                   {"peak_used_frac", ratio(static_cast<double>(m.kv_peak_used_blocks), capacity)},
                   {"mean_used_frac", ratio(m.kv_used_block_seconds, capacity * duration_s)},
                   {"internal_fragmentation_frac", ratio(m.kv_frag_slot_seconds, m.kv_used_slot_seconds)},
                   {"internal_fragmentation_peak_frac", m.kv_frag_peak_frac},
                   {"reservation_waste_frac", ratio(static_cast<double>(m.kv_released_unwritten_slots),
                                                    static_cast<double>(m.kv_released_reserved_slots))},
                   {"prefix_hit_ratio", ratio(static_cast<double>(m.prefix_hit_tokens), static_cast<double>(m.prefix_query_tokens))},
                   {"prefix_hit_tokens", m.prefix_hit_tokens},
                   {"prefix_evicted_blocks", m.prefix_evictions},
                   {"swap_out_bytes", m.swap_out_bytes},
                   {"swap_in_bytes", m.swap_in_bytes},
                   {"swap_s", m.swap_s},
                   {"usage_series_step_s", ns_to_seconds(m.kv_usage.step_ns())},
                   {"usage_series", usage}};
  j["batch"] = {{"mean_size", ratio(m.batch_seqs_sum, iterations)},
                {"max_size", m.max_batch_seqs},
                {"iterations", m.iterations},
                {"prefill_iterations", m.prefill_iterations},
                {"padding_tokens", m.padding_tokens},
                {"padding_waste_frac", ratio(static_cast<double>(m.padding_tokens), static_cast<double>(m.computed_tokens))}};
  // busy_s sums each step's time in double seconds while the clock advances in whole ns, so a GPU
  // busy the whole run can come out a few ulps above 1.
  j["gpu"] = {{"busy_frac", std::min(1.0, ratio(m.busy_s, duration_s * replicas))},
              {"launch_bound_frac", ratio(static_cast<double>(m.launch_bound_iterations), iterations)},
              {"launch_time_frac", ratio(m.launch_wait_s, m.busy_s)},
              {"kernels_per_token", ratio(static_cast<double>(m.kernels), static_cast<double>(m.sampled_tokens))},
              {"hbm_bw_util_frac", ratio(m.bytes_moved, duration_s * replicas * hbm_bandwidth_bytes_per_s)},
              {"hbm_bw_util_frac_per_iteration", summarize(m.hbm_bw_util_frac)}};
  if (m.contention_s > 0.0) j["gpu"]["contention_frac"] = ratio(m.contention_s, m.busy_s);
  if (m.comm_s > 0.0 || m.bubble_s > 0.0) {
    j["gpu"]["comm_frac"] = ratio(m.comm_s, m.busy_s);
    j["gpu"]["pipeline_bubble_frac"] = ratio(m.bubble_s, m.busy_s);
  }
}

nlohmann::json memory_json(const MemoryPlan& p) {
  return {{"budget_bytes", p.budget_bytes},
          {"weight_bytes", p.weight_bytes},
          {"activation_bytes", p.activation_bytes},
          {"runtime_bytes", p.runtime_bytes},
          {"kv_bytes", p.kv_bytes},
          {"kv_bytes_per_token", p.kv_bytes_per_token}};
}

nlohmann::json slo_to_json(const SloResult& r, const WorkloadConfig& w, const RunMetrics& m) {
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t i = 0; i < r.classes.size(); ++i) {
    const ClassSloResult& c = r.classes[i];
    const ClassMetrics& cm = m.classes[i];
    nlohmann::json targets = nlohmann::json::object();
    for (const auto& t : c.targets) targets[t.metric] = {{"threshold_s", t.threshold_s}, {"value_s", t.value_s}, {"met", t.met}};
    classes.push_back({{"name", c.name},
                       {"percentile", w.classes[i].slo.percentile},
                       {"min_success_frac", w.classes[i].slo.min_success_frac},
                       {"targets", targets},
                       {"arrived", cm.arrived},
                       {"completed", cm.completed},
                       {"rejected", cm.rejected},
                       {"timed_out", cm.timed_out},
                       {"slo_met_requests", cm.slo_met},
                       {"success_frac", c.success_frac},
                       {"slo_attained_frac", c.slo_attained_frac},
                       {"goodput_requests_per_s", c.goodput_requests_per_s},
                       {"latency", {{"ttft_s", summarize(cm.ttft_s)}, {"tpot_s", summarize(cm.tpot_s)}, {"e2e_s", summarize(cm.e2e_s)}}},
                       {"status", !c.defined ? "none" : c.met ? "met" : "not met"},
                       {"met", c.defined ? nlohmann::json(c.met) : nlohmann::json(nullptr)}});
  }
  // Without a latency target there is no SLO: "met" is null, not true, and status says "none".
  return {{"status", r.status()},
          {"met", r.defined ? nlohmann::json(r.met) : nlohmann::json(nullptr)},
          {"success_frac", r.success_frac},
          {"goodput_requests_per_s", r.goodput_requests_per_s},
          {"classes", classes}};
}

}  // namespace

nlohmann::json make_report(const Scenario& s, const SimResult& res) {
  const RunMetrics& m = res.metrics;
  const double duration_s = ns_to_seconds(m.end_ns);
  nlohmann::json j;
  j["schema"] = "servesim-report/1";
  j["scenario"] = scenario_to_json(s);
  j["model"] = model_to_json(s.model);
  j["hardware"] = {{"name", s.hw.name}, {"display_name", s.hw.display_name}, {"provenance", provenance_to_json(s.hw.provenance)},
                   {"field_origins", field_origins_json(s.hw)}};
  j["memory"] = memory_json(res.memory);
  metric_sections(j, m, s, static_cast<double>(res.replicas.size()));
  // Decode saturation is a property of the model on the hardware, reported once for the fleet.
  j["batch"]["saturation_size"] = res.saturation.batch_size;
  j["batch"]["saturation_context_tokens"] = res.saturation.context_tokens;
  j["quantization"] = {{"method", quant_name(s.precision.quant)},
                       {"kv_cache_dtype", dtype_name(s.precision.kv_cache)},
                       {"emulated", s.quant_emulated}};
  const ColdStart cold = estimate_cold_start(s, res.memory.weight_bytes);
  j["cold_start_s"] = cold.total_s;
  j["cold_start"] = {{"weights_s", cold.weights_s},
                     {"cuda_context_s", cold.cuda_context_s},
                     {"framework_init_s", cold.framework_init_s},
                     {"graph_capture_s", cold.graph_capture_s},
                     {"captured_batch_sizes", cold.captured_batch_sizes}};
  j["slo"] = slo_to_json(evaluate_slo(s.workload, m), s.workload, m);
  j["sim"] = {{"events", res.events}, {"wall_s", res.wall_s}, {"simulated_s", duration_s}};
  // Cluster view: the fleet above is the sum over these replicas.
  j["cluster"] = {{"replicas", res.replicas.size()},
                  {"gpus", res.gpus},
                  {"instances_per_gpu", s.instances},
                  {"router", s.router.impl},
                  {"interconnect", s.hw.interconnect.provenance}};
  if (s.disaggregation.enabled) {
    j["cluster"]["kv_transfer"] = {{"link", res.kv_transfer_link},
                                   {"transfers", res.kv_transfers},
                                   {"bytes", res.kv_transfer_bytes},
                                   {"mean_s", ratio(res.kv_transfer_s, static_cast<double>(res.kv_transfers))}};
  }
  j["replicas"] = nlohmann::json::array();
  for (const ReplicaResult& r : res.replicas) {
    nlohmann::json rj = {{"index", r.spec.index},
                         {"role", replica_role_name(r.spec.role)},
                         {"tensor_parallel_size", r.spec.parallel.tensor_parallel_size},
                         {"pipeline_parallel_size", r.spec.parallel.pipeline_parallel_size},
                         {"gpus", r.spec.parallel.gpus_per_replica()},
                         {"memory", memory_json(r.spec.memory)}};
    metric_sections(rj, r.metrics, s, 1.0);
    j["replicas"].push_back(std::move(rj));
  }
  return j;
}

void print_summary(std::ostream& os, const nlohmann::json& r) {
  char line[256];
  const auto& lat = r["latency"];
  const auto& req = r["requests"];
  std::snprintf(line, sizeof line, "servesim: %s | %s on %s (%s profile)\n", r["scenario"]["name"].get<std::string>().c_str(),
                r["model"]["name"].get<std::string>().c_str(), r["hardware"]["name"].get<std::string>().c_str(),
                r["hardware"]["provenance"]["kind"].get<std::string>().c_str());
  os << line;
  // Which of the profile's numbers were measured on the GPU: a derived profile's answer is an
  // extrapolation and says so on the first lines.
  if (r["hardware"].contains("field_origins")) {  // reports written before it have none
    os << "  profile    " << field_origins_line(field_origins_from_json(r["hardware"]["field_origins"])) << "\n";
  }
  std::snprintf(line, sizeof line, "  requests   %lld arrived, %lld completed, %lld rejected, %lld timed out\n",
                req["arrived"].get<long long>(), req["completed"].get<long long>(), req["rejected"].get<long long>(),
                req["timed_out"].get<long long>());
  os << line;
  // Preemption events and the requests they hit differ (a request can be preempted twice).
  std::snprintf(line, sizeof line, "  preempted  %lld requests (%lld preemptions, %lld tokens recomputed)\n",
                req["preempted"].get<long long>(), req["preemptions"].get<long long>(), req["recomputed_tokens"].get<long long>());
  os << line;
  for (const char* key : {"ttft_s", "tpot_s", "itl_s", "e2e_s"}) {
    const auto& l = lat[key];
    std::snprintf(line, sizeof line, "  %-6s     mean %9.4f s  p50 %9.4f  p95 %9.4f  p99 %9.4f  jitter %.2f\n", key,
                  l["mean"].get<double>(), l["p50"].get<double>(), l["p95"].get<double>(), l["p99"].get<double>(),
                  l["jitter"].get<double>());
    os << line;
  }
  const auto& t = r["throughput"];
  std::snprintf(line, sizeof line, "  throughput %.2f req/s, %.1f output tok/s, %.1f total tok/s\n",
                t["requests_per_s"].get<double>(), t["output_tokens_per_s"].get<double>(), t["total_tokens_per_s"].get<double>());
  os << line;
  const auto& kv = r["kv_cache"];
  std::snprintf(line, sizeof line, "  kv cache   %lld blocks x %lld tokens, peak %.1f%%, mean %.1f%% used\n",
                kv["capacity_blocks"].get<long long>(), kv["block_size"].get<long long>(),
                100.0 * kv["peak_used_frac"].get<double>(), 100.0 * kv["mean_used_frac"].get<double>());
  os << line;
  std::snprintf(line, sizeof line, "  kv waste   internal fragmentation %.1f%%, reservation waste %.1f%%, prefix hits %.1f%%\n",
                100.0 * kv["internal_fragmentation_frac"].get<double>(), 100.0 * kv["reservation_waste_frac"].get<double>(),
                100.0 * kv["prefix_hit_ratio"].get<double>());
  os << line;
  const auto& b = r["batch"];
  const auto& g = r["gpu"];
  std::snprintf(line, sizeof line, "  batch      mean %.1f, max %lld sequences, padding waste %.1f%%; GPU busy %.1f%%, HBM bandwidth used %.1f%%\n",
                b["mean_size"].get<double>(), b["max_size"].get<long long>(), 100.0 * b["padding_waste_frac"].get<double>(),
                100.0 * g["busy_frac"].get<double>(), 100.0 * g["hbm_bw_util_frac"].get<double>());
  os << line;
  const auto& c = r["cluster"];
  if (c["gpus"].get<long long>() > 1) {
    std::snprintf(line, sizeof line, "  cluster    %lld replicas on %lld GPUs, router %s\n", c["replicas"].get<long long>(),
                  c["gpus"].get<long long>(), c["router"].get<std::string>().c_str());
    os << line;
    if (c.contains("kv_transfer")) {
      const auto& t = c["kv_transfer"];
      std::snprintf(line, sizeof line, "  kv moves   %lld prefill->decode transfers over %s, mean %.3f ms, %.2f GB\n",
                    t["transfers"].get<long long>(), t["link"].get<std::string>().c_str(), 1e3 * t["mean_s"].get<double>(),
                    t["bytes"].get<double>() / 1e9);
      os << line;
    }
  }
  const auto& slo = r["slo"];
  const std::string status = slo["status"].get<std::string>();
  if (status == "none") {
    std::snprintf(line, sizeof line, "  slo        none set (no latency target); %.2f%% of requests completed\n",
                  100.0 * slo["success_frac"].get<double>());
  } else {
    std::snprintf(line, sizeof line, "  slo        %s: success %.2f%%, goodput %.2f req/s\n", status == "met" ? "met" : "NOT met",
                  100.0 * slo["success_frac"].get<double>(), slo["goodput_requests_per_s"].get<double>());
  }
  os << line;
  const auto& sim = r["sim"];
  std::snprintf(line, sizeof line, "  sim        %llu events, %.3f simulated s in %.3f wall s\n", sim["events"].get<unsigned long long>(),
                sim["simulated_s"].get<double>(), sim["wall_s"].get<double>());
  os << line;
}

}  // namespace servesim
