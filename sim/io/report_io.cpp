// Report writer. Every figure here comes from RunMetrics/MemoryPlan; nothing is recomputed.
// Only sim.wall_s depends on the machine: everything else is identical for the same inputs.
#include "sim/io/report_io.hpp"

#include <cstdio>

#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"
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
                       {"met", c.met}});
  }
  return {{"met", r.met}, {"success_frac", r.success_frac}, {"goodput_requests_per_s", r.goodput_requests_per_s}, {"classes", classes}};
}

}  // namespace

nlohmann::json make_report(const Scenario& s, const SimResult& res) {
  const RunMetrics& m = res.metrics;
  const double duration_s = ns_to_seconds(m.end_ns);
  const double capacity = static_cast<double>(m.kv_capacity_blocks);
  const double iterations = static_cast<double>(m.iterations);
  nlohmann::json j;
  j["schema"] = "servesim-report/1";
  j["scenario"] = scenario_to_json(s);
  j["model"] = model_to_json(s.model);
  j["hardware"] = {{"name", s.hw.name}, {"display_name", s.hw.display_name}, {"provenance", provenance_to_json(s.hw.provenance)}};
  j["memory"] = {{"budget_bytes", res.memory.budget_bytes},
                 {"weight_bytes", res.memory.weight_bytes},
                 {"activation_bytes", res.memory.activation_bytes},
                 {"runtime_bytes", res.memory.runtime_bytes},
                 {"kv_bytes", res.memory.kv_bytes},
                 {"kv_bytes_per_token", res.memory.kv_bytes_per_token}};
  j["requests"] = {{"arrived", m.arrived},
                   {"completed", m.completed},
                   {"rejected", m.rejected},
                   {"rejected_too_long", m.rejected_too_long},
                   {"rejected_queue_full", m.rejected_queue_full},
                   {"timed_out", m.timed_out},
                   {"trace_rows_skipped", m.trace_rows_skipped},
                   {"preempted", m.preempted_requests},
                   {"preemptions", m.preemptions},
                   {"recomputed_tokens", m.recomputed_tokens}};
  j["latency"] = {{"ttft_s", summarize(m.ttft_s)}, {"tpot_s", summarize(m.tpot_s)},
                  {"itl_s", summarize(m.itl_s)}, {"e2e_s", summarize(m.e2e_s)}};
  j["throughput"] = {{"requests_per_s", ratio(static_cast<double>(m.completed), duration_s)},
                     {"output_tokens_per_s", ratio(static_cast<double>(m.output_tokens), duration_s)},
                     {"total_tokens_per_s", ratio(static_cast<double>(m.output_tokens + m.prompt_tokens), duration_s)}};
  j["kv_cache"] = {{"capacity_blocks", m.kv_capacity_blocks},
                   {"block_size", s.engine.block_size},
                   {"capacity_tokens", m.kv_capacity_blocks * s.engine.block_size},
                   {"peak_used_frac", ratio(static_cast<double>(m.kv_peak_used_blocks), capacity)},
                   {"mean_used_frac", ratio(m.kv_used_block_seconds, capacity * duration_s)}};
  j["batch"] = {{"mean_size", ratio(m.batch_seqs_sum, iterations)},
                {"max_size", m.max_batch_seqs},
                {"iterations", m.iterations},
                {"prefill_iterations", m.prefill_iterations}};
  j["gpu"] = {{"busy_frac", ratio(m.busy_s, duration_s)},
              {"launch_bound_frac", ratio(static_cast<double>(m.launch_bound_iterations), iterations)},
              {"hbm_bw_util_frac", ratio(m.bytes_moved, duration_s * s.hw.hbm_bandwidth_bytes_per_s)}};
  j["slo"] = slo_to_json(evaluate_slo(s.workload, m), s.workload, m);
  j["sim"] = {{"events", res.events}, {"wall_s", res.wall_s}, {"simulated_s", duration_s}};
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
  std::snprintf(line, sizeof line, "  requests   %lld arrived, %lld completed, %lld rejected, %lld timed out, %lld preempted\n",
                req["arrived"].get<long long>(), req["completed"].get<long long>(), req["rejected"].get<long long>(),
                req["timed_out"].get<long long>(), req["preempted"].get<long long>());
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
  const auto& b = r["batch"];
  const auto& g = r["gpu"];
  std::snprintf(line, sizeof line, "  batch      mean %.1f, max %lld sequences; GPU busy %.1f%%, HBM bandwidth used %.1f%%\n",
                b["mean_size"].get<double>(), b["max_size"].get<long long>(), 100.0 * g["busy_frac"].get<double>(),
                100.0 * g["hbm_bw_util_frac"].get<double>());
  os << line;
  const auto& slo = r["slo"];
  std::snprintf(line, sizeof line, "  slo        %s: success %.2f%%, goodput %.2f req/s\n", slo["met"].get<bool>() ? "met" : "NOT met",
                100.0 * slo["success_frac"].get<double>(), slo["goodput_requests_per_s"].get<double>());
  os << line;
  const auto& sim = r["sim"];
  std::snprintf(line, sizeof line, "  sim        %llu events, %.3f simulated s in %.3f wall s\n", sim["events"].get<unsigned long long>(),
                sim["simulated_s"].get<double>(), sim["wall_s"].get<double>());
  os << line;
}

}  // namespace servesim
