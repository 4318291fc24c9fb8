// See compare.hpp.
#include "sim/analysis/compare.hpp"

#include <cmath>
#include <limits>

namespace servesim {

namespace {
double threshold_for(const std::string& metric, const CompareOptions& o) {
  double t = o.threshold;
  std::size_t best = 0;
  for (const auto& [key, v] : o.per_metric) {
    const bool match = key == metric || (!key.empty() && key.back() == '.' && metric.rfind(key, 0) == 0);
    if (match && key.size() > best) {
      best = key.size();
      t = v;
    }
  }
  return t;
}
}  // namespace

std::vector<Drift> compare_metrics(const std::map<std::string, double>& base, const std::map<std::string, double>& value,
                                   const CompareOptions& o) {
  std::vector<Drift> out;
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& [k, b] : base) {
    Drift d;
    d.metric = k;
    d.base = b;
    d.threshold = threshold_for(k, o);
    const auto it = value.find(k);
    if (it == value.end()) {
      d.value = std::numeric_limits<double>::quiet_NaN();
      d.drift = inf;
    } else {
      d.value = it->second;
      d.drift = b != 0.0 ? (d.value - b) / std::abs(b) : d.value - b;
    }
    d.crossed = std::abs(d.drift) > d.threshold;
    out.push_back(d);
  }
  for (const auto& [k, v] : value) {
    if (base.count(k)) continue;
    out.push_back({k, std::numeric_limits<double>::quiet_NaN(), v, inf, threshold_for(k, o), true});
  }
  return out;
}

}  // namespace servesim
