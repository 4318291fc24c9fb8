// See summary.hpp.
#include "sim/analysis/summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <tbb/parallel_for.h>

#include "sim/core/rng.hpp"
#include "sim/dist/job_split.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/report_metrics.hpp"

namespace servesim {

Metrics summarize_run(const Scenario& s, const SimResult& res) {
  // The report computes every figure once; the summary reads the registry's paths back from it.
  const std::map<std::string, double> flat = flatten_report(make_report(s, res));
  Metrics out;
  for (const ReportMetric& m : report_metrics()) {
    if (const auto it = flat.find(m.path); it != flat.end()) out.emplace_back(m.path, it->second);
  }
  return out;
}

double mean_prompt_tokens(const RunMetrics& m) {
  return m.completed ? static_cast<double>(m.prompt_tokens) / static_cast<double>(m.completed) : 0.0;
}

double mean_output_tokens(const RunMetrics& m) {
  return m.completed ? static_cast<double>(m.output_tokens) / static_cast<double>(m.completed) : 0.0;
}

double metric(const Metrics& m, const std::string& name) {
  for (const auto& [k, v] : m) {
    if (k == name) return v;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string empty_run_reason(const Scenario& scenario, const SimResult& result) {
  const WorkloadConfig& w = scenario.workload;
  const RunMetrics& m = result.metrics;
  if (m.arrived == 0) {
    if (w.num_requests == 0) return "no requests: workload.num_requests is 0";
    if (w.trace) {
      std::string why = "no requests: trace " + w.trace->path + " has no rows";
      if (m.trace_rows_skipped > 0) why += " with output tokens (" + std::to_string(m.trace_rows_skipped) + " rows of 0 output tokens skipped)";
      return why + (w.duration_s > 0.0 ? " before workload.duration_s" : "");
    }
    return "no requests: none arrived before workload.duration_s";
  }
  for (std::size_t c = 0; c < m.classes.size() && c < w.classes.size(); ++c) {
    const ClassMetrics& k = m.classes[c];
    if (k.arrived == 0 || k.completed > 0) continue;
    const std::string who = w.classes.size() > 1 ? "every request of class '" + w.classes[c].name + "'" : "every request";
    std::string why = who + " (" + std::to_string(k.arrived) + ") was turned away:";
    if (m.rejected_too_long > 0) why += " " + std::to_string(m.rejected_too_long) + " longer than the KV cache or engine.max_model_len;";
    if (m.rejected_queue_full > 0) why += " " + std::to_string(m.rejected_queue_full) + " found the queue full (engine.scheduler.max_queue_size);";
    if (m.rejected_timeout > 0) why += " " + std::to_string(m.rejected_timeout) + " waited past engine.scheduler.max_waiting_time_s;";
    if (m.timed_out > 0) why += " " + std::to_string(m.timed_out) + " passed workload.request_timeout_s;";
    why.pop_back();
    return why;
  }
  return {};
}

Interval interval(const std::vector<double>& xs) {
  Interval iv;
  iv.n = static_cast<int>(xs.size());
  if (xs.empty()) return iv;
  double sum = 0.0;
  for (double x : xs) sum += x;
  iv.mean = sum / iv.n;
  iv.min = *std::min_element(xs.begin(), xs.end());
  iv.max = *std::max_element(xs.begin(), xs.end());
  if (iv.n < 2) return iv;
  double ss = 0.0;
  for (double x : xs) ss += (x - iv.mean) * (x - iv.mean);
  iv.stddev = std::sqrt(ss / (iv.n - 1));
  // Two-sided 95% Student t quantiles for 1..30 degrees of freedom, then the normal's 1.96.
  static const double t95[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                               2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                               2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  const int df = iv.n - 1;
  const double t = df <= 30 ? t95[df - 1] : 1.96;
  iv.ci95_half = t * iv.stddev / std::sqrt(static_cast<double>(iv.n));
  return iv;
}

std::uint64_t replication_seed(std::uint64_t base, int i) {
  // Seeds stay below 2^53 so they round-trip through JSON numbers exactly.
  return i == 0 ? base : splitmix64(base * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(i)) >> 11;
}

const std::vector<std::string>& replicated_metrics() {
  static const std::vector<std::string> names = {
      "latency.ttft_s.p95", "latency.ttft_s.p99", "latency.tpot_s.p95", "latency.tpot_s.p99",
      "latency.e2e_s.p95",  "latency.e2e_s.p99",  "throughput.output_tokens_per_s", "slo.goodput_requests_per_s"};
  return names;
}

std::vector<Metrics> run_all(const std::vector<Scenario>& scenarios, bool parallel, std::vector<SimResult>* keep,
                             const std::function<void()>& on_done) {
  std::vector<Metrics> out(scenarios.size());
  if (keep) keep->resize(scenarios.size());
  auto one = [&](std::size_t i) {
    SimResult r = simulate(scenarios[i]);
    out[i] = summarize_run(scenarios[i], r);
    if (keep) (*keep)[i] = std::move(r);
    if (on_done) on_done();
  };
  if (parallel) {
    tbb::parallel_for(std::size_t{0}, scenarios.size(), one);
  } else {
    for (std::size_t i = 0; i < scenarios.size(); ++i) one(i);
  }
  return out;
}

nlohmann::json metrics_to_json(const Metrics& m) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [name, value] : m) j.push_back(nlohmann::json::array({name, exact_number(value)}));
  return j;
}

Metrics metrics_from_json(const nlohmann::json& j, const JobOrigin& at, const std::string& item) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = report_metric_paths();
    std::sort(n.begin(), n.end());
    return n;
  }();
  const KeyRange range{0.0, 1e18, false, false};
  if (!j.is_array()) at.fail(item, "must be an array of [metric, value] pairs");
  Metrics m;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = item + "[" + std::to_string(i) + "]";
    const std::string name = at.string(at.element(j[i], 0, 2, where, "a metric and its value"), where + "[0]");
    if (!std::binary_search(names.begin(), names.end(), name)) at.fail(where + "[0]", "'" + name + "' is not a report metric");
    m.emplace_back(name, at.number(j[i][1], range, where + "[1]", name));
  }
  return m;
}

}  // namespace servesim
