// SLO evaluation of a finished run, per request class and overall: each latency target is met
// when the class's latency at the SLO percentile is within it, and the class meets its SLO when
// every target is met and at least min_success_frac of its requests completed (rejected and timed
// out requests count as failures). Goodput is the rate of completed requests that met every target.
#pragma once
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/metrics/run_metrics.hpp"

namespace servesim {

struct SloTarget {
  std::string metric;  // ttft_s, tpot_s, e2e_s
  double threshold_s = 0.0;
  double value_s = 0.0;  // the class's latency at the SLO percentile
  bool met = false;
};

struct ClassSloResult {
  std::string name;
  std::vector<SloTarget> targets;  // only the targets the SLO sets
  double success_frac = 0.0;       // completed / arrived
  double slo_attained_frac = 0.0;  // requests that met every target / arrived
  double goodput_requests_per_s = 0.0;
  bool defined = false;  // the class has a latency target (without one there is no SLO to meet)
  bool met = false;
};

struct SloResult {
  std::vector<ClassSloResult> classes;
  double success_frac = 0.0;
  double goodput_requests_per_s = 0.0;
  bool defined = false;  // some class has a latency target; reports say "no SLO" otherwise
  bool met = false;      // every class met its SLO (its targets and min_success_frac)
  // "met", "not met" or "none" (no latency target anywhere), as every report says it.
  const char* status() const { return !defined ? "none" : met ? "met" : "not met"; }
};

SloResult evaluate_slo(const WorkloadConfig& workload, const RunMetrics& metrics);

}  // namespace servesim
