// compare: per-metric drift of a report against a baseline, for CI. Drift is relative,
// (new - base) / |base| (absolute when base is 0); a metric crosses when |drift| > its threshold.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace servesim {

struct Drift {
  std::string metric;
  double base = 0.0, value = 0.0, drift = 0.0, threshold = 0.0;
  bool crossed = false;
};

struct CompareOptions {
  double threshold = 0.05;                     // default for every metric
  std::map<std::string, double> per_metric;    // exact metric name or a prefix ending in '.'
};

// Compares the metrics both maps have (plus those only one has, drift = inf, crossed).
std::vector<Drift> compare_metrics(const std::map<std::string, double>& base, const std::map<std::string, double>& value,
                                   const CompareOptions& options);

}  // namespace servesim
