// See summary.hpp.
#include "sim/analysis/summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <tbb/parallel_for.h>

#include "sim/core/rng.hpp"
#include "sim/metrics/slo.hpp"

namespace servesim {

Metrics summarize_run(const Scenario& s, const SimResult& res) {
  const RunMetrics& m = res.metrics;
  const double dur = ns_to_seconds(m.end_ns);
  auto per_s = [&](double x) { return dur > 0.0 ? x / dur : 0.0; };
  Metrics out;
  out.emplace_back("requests.arrived", static_cast<double>(m.arrived));
  out.emplace_back("requests.completed", static_cast<double>(m.completed));
  out.emplace_back("requests.rejected", static_cast<double>(m.rejected));
  out.emplace_back("requests.timed_out", static_cast<double>(m.timed_out));
  out.emplace_back("requests.preempted", static_cast<double>(m.preempted_requests));
  const std::pair<const char*, const LogHistogram*> lat[] = {{"ttft_s", &m.ttft_s}, {"tpot_s", &m.tpot_s}, {"itl_s", &m.itl_s}, {"e2e_s", &m.e2e_s}};
  for (const auto& [name, h] : lat) {
    const std::string base = std::string("latency.") + name;
    out.emplace_back(base + ".mean", h->mean());
    out.emplace_back(base + ".p50", h->quantile(0.5));
    out.emplace_back(base + ".p95", h->quantile(0.95));
    out.emplace_back(base + ".p99", h->quantile(0.99));
  }
  out.emplace_back("throughput.requests_per_s", per_s(static_cast<double>(m.completed)));
  out.emplace_back("throughput.output_tokens_per_s", per_s(static_cast<double>(m.output_tokens)));
  out.emplace_back("throughput.total_tokens_per_s", per_s(static_cast<double>(m.output_tokens + m.prompt_tokens)));
  const double cap = static_cast<double>(m.kv_capacity_blocks);
  out.emplace_back("kv_cache.capacity_tokens", cap * static_cast<double>(s.engine.block_size));
  out.emplace_back("kv_cache.peak_used_frac", cap > 0 ? static_cast<double>(m.kv_peak_used_blocks) / cap : 0.0);
  out.emplace_back("kv_cache.mean_used_frac", cap > 0 && dur > 0 ? m.kv_used_block_seconds / (cap * dur) : 0.0);
  out.emplace_back("batch.mean_size", m.iterations ? m.batch_seqs_sum / static_cast<double>(m.iterations) : 0.0);
  out.emplace_back("batch.max_size", static_cast<double>(m.max_batch_seqs));
  out.emplace_back("gpu.busy_frac", per_s(m.busy_s));
  out.emplace_back("gpu.hbm_bw_util_frac", per_s(m.bytes_moved) / s.hw.hbm_bandwidth_bytes_per_s);
  const SloResult slo = evaluate_slo(s.workload, m);
  out.emplace_back("slo.success_frac", slo.success_frac);
  out.emplace_back("slo.goodput_requests_per_s", slo.goodput_requests_per_s);
  out.emplace_back("slo.met", slo.met ? 1.0 : 0.0);
  out.emplace_back("mean_prompt_tokens", m.completed ? static_cast<double>(m.prompt_tokens) / static_cast<double>(m.completed) : 0.0);
  out.emplace_back("mean_output_tokens", m.completed ? static_cast<double>(m.output_tokens) / static_cast<double>(m.completed) : 0.0);
  out.emplace_back("sim.simulated_s", dur);
  return out;
}

double metric(const Metrics& m, const std::string& name) {
  for (const auto& [k, v] : m) {
    if (k == name) return v;
  }
  return std::numeric_limits<double>::quiet_NaN();
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

}  // namespace servesim
