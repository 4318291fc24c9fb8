// A measured or derived efficiency curve: y (a fraction of peak) against x (a size: tokens,
// bytes), interpolated linearly in log(x) and clamped at both ends.
#pragma once
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace servesim {

class EfficiencyTable {
 public:
  EfficiencyTable() = default;
  // Points must have x > 0 strictly increasing and y in (0, 1]; the parser checks this.
  explicit EfficiencyTable(std::vector<std::pair<double, double>> points) : points_(std::move(points)) {
    // log(x_i) once here rather than twice per lookup: at() is on the simulator's hot path and
    // std::log is deterministic, so the interpolated values are bit-identical either way.
    log_x_.reserve(points_.size());
    for (const auto& p : points_) {
      log_x_.push_back(std::log(p.first));
      max_y_ = std::max(max_y_, p.second);
    }
  }

  bool empty() const { return points_.empty(); }
  const std::vector<std::pair<double, double>>& points() const { return points_; }
  double max_value() const { return points_.empty() ? 1.0 : max_y_; }  // the curve's plateau

  double at(double x) const {
    if (points_.empty()) return 1.0;
    if (x <= points_.front().first) return points_.front().second;
    if (x >= points_.back().first) return points_.back().second;
    const auto hi = std::lower_bound(points_.begin(), points_.end(), x,
                                     [](const std::pair<double, double>& p, double v) { return p.first < v; });
    const auto lo = hi - 1;
    const auto i = static_cast<std::size_t>(lo - points_.begin());
    const double f = (std::log(x) - log_x_[i]) / (log_x_[i + 1] - log_x_[i]);
    return lo->second + f * (hi->second - lo->second);
  }

 private:
  std::vector<std::pair<double, double>> points_;
  std::vector<double> log_x_;  // log(points_[i].first)
  double max_y_ = 0.0;
};

}  // namespace servesim
