// See slo.hpp.
#include "sim/metrics/slo.hpp"

namespace servesim {

SloResult evaluate_slo(const WorkloadConfig& workload, const RunMetrics& m) {
  SloResult out;
  const double duration_s = ns_to_seconds(m.end_ns);
  std::int64_t arrived = 0, completed = 0, met_requests = 0;
  out.met = true;
  for (std::size_t i = 0; i < workload.classes.size() && i < m.classes.size(); ++i) {
    const RequestClass& k = workload.classes[i];
    const ClassMetrics& c = m.classes[i];
    ClassSloResult r;
    r.name = k.name;
    r.success_frac = c.arrived > 0 ? static_cast<double>(c.completed) / static_cast<double>(c.arrived) : 1.0;
    r.slo_attained_frac = c.arrived > 0 ? static_cast<double>(c.slo_met) / static_cast<double>(c.arrived) : 1.0;
    r.goodput_requests_per_s = duration_s > 0.0 ? static_cast<double>(c.slo_met) / duration_s : 0.0;
    r.defined = k.slo.has_latency_target();
    r.met = r.success_frac >= k.slo.min_success_frac;
    auto target = [&](const char* name, double threshold, const LogHistogram& h) {
      if (threshold <= 0.0) return;
      SloTarget t{name, threshold, h.quantile(k.slo.percentile), false};
      // No samples (e.g. TPOT of one-token outputs) cannot violate a target.
      t.met = h.count() == 0 || t.value_s <= threshold;
      r.met = r.met && t.met;
      r.targets.push_back(t);
    };
    target("ttft_s", k.slo.ttft_s, c.ttft_s);
    target("tpot_s", k.slo.tpot_s, c.tpot_s);
    target("e2e_s", k.slo.e2e_s, c.e2e_s);
    out.met = out.met && r.met;
    out.defined = out.defined || r.defined;
    arrived += c.arrived;
    completed += c.completed;
    met_requests += c.slo_met;
    out.classes.push_back(r);
  }
  out.success_frac = arrived > 0 ? static_cast<double>(completed) / static_cast<double>(arrived) : 1.0;
  out.goodput_requests_per_s = duration_s > 0.0 ? static_cast<double>(met_requests) / duration_s : 0.0;
  return out;
}

}  // namespace servesim
