// Measured efficiency tables from calibration. Each stores, per calibrated shape, the fraction of
// the roofline a real kernel reached:  frac = roofline_time / (measured_time - kernel_overhead),
// so one number covers both the memory-bound (small M, decode) and compute-bound regimes and
// transfers to nearby shapes that were not measured.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "sim/hw/efficiency_table.hpp"

namespace servesim {

// GEMM C[m,n] = A[m,k] W[k,n]: one curve over m for each calibrated weight shape (n, k).
struct GemmShapeCurve {
  double n = 0.0, k = 0.0;
  EfficiencyTable frac_by_m;
};

class GemmTable {
 public:
  GemmTable() = default;
  explicit GemmTable(std::vector<GemmShapeCurve> shapes) : shapes_(std::move(shapes)), id_(next_id()) {
    // Logs of the calibrated shapes once, not on every lookup: frac() runs for every GEMM of
    // every simulated iteration.
    for (const auto& s : shapes_) log_nk_.emplace_back(std::log(s.n), std::log(s.k));
  }
  bool empty() const { return shapes_.empty(); }
  const std::vector<GemmShapeCurve>& shapes() const { return shapes_; }

  // Roofline fraction at (m, n, k), each curve interpolated in log m: a calibrated shape's own
  // curve, else a blend of the kNeighbours nearest calibrated shapes in (log n, log k), weighted
  // 1 / (distance + kSoften)^2. Why a blend and not the nearest: tile shapes, split-K and wave
  // quantisation make efficiency jump between shapes, so any one neighbour can be far off; left
  // out one shape at a time from the H200 calibration (41 shapes x 15 M), the nearest curve
  // predicts bf16 GEMMs to a median 4.6% (worst 208%), a blend of 3 to 3.8% (worst 70%); fp8
  // 5.5% (122%) against 4.3% (61%). See docs/validation.md.
  double frac(double m, double n, double k) const {
    const Blend& b = blend(n, k);
    if (b.exact < shapes_.size()) return shapes_[b.exact].frac_by_m.at(m);
    double sum = 0.0;
    for (std::size_t j = 0; j < b.count; ++j) sum += b.weight[j] * shapes_[b.index[j]].frac_by_m.at(m);
    return b.sum_w > 0.0 ? sum / b.sum_w : 1.0;
  }

 private:
  static constexpr std::size_t kNeighbours = 3;
  // What frac() takes from (n, k) alone: the shape whose curve it is (exact < shapes), else the
  // neighbours' indices and weights, in the order frac() adds them. The search over every
  // calibrated shape (~2,700 instructions on the H200 table) runs once per (n, k): a model has a
  // few GEMM shapes, and a new token count (a prefill memo miss) times every one of them again.
  struct Blend {
    std::uint64_t table = 0;  // id_ of the table it was made for (0: none)
    double n = 0.0, k = 0.0;
    std::size_t exact = static_cast<std::size_t>(-1);
    std::size_t count = 0;
    std::array<std::size_t, kNeighbours> index{};
    std::array<double, kNeighbours> weight{};
    double sum_w = 0.0;
  };
  Blend make_blend(double n, double k) const {
    static constexpr double kSoften = 0.05;
    Blend b;
    b.table = id_;
    b.n = n;
    b.k = k;
    const double log_n = std::log(n), log_k = std::log(k);
    std::array<std::pair<double, std::size_t>, kNeighbours> best;
    best.fill({std::numeric_limits<double>::infinity(), 0});
    for (std::size_t i = 0; i < shapes_.size(); ++i) {
      const double dn = log_n - log_nk_[i].first, dk = log_k - log_nk_[i].second;
      const double d = dn * dn + dk * dk;
      if (d == 0.0) {
        b.exact = i;
        return b;
      }
      if (d < best.back().first) {
        best.back() = {d, i};
        std::sort(best.begin(), best.end());
      }
    }
    for (const auto& [d2, i] : best) {
      if (!std::isfinite(d2)) break;
      const double w = 1.0 / ((std::sqrt(d2) + kSoften) * (std::sqrt(d2) + kSoften));
      b.sum_w += w;
      b.index[b.count] = i;
      b.weight[b.count++] = w;
    }
    return b;
  }
  // Blends are kept per thread, keyed by the table's id (unique to each constructed table, so a
  // table made later at the same address does not find another's), so the table itself stays
  // read-only: one hardware profile serves every thread of a sweep.
  const Blend& blend(double n, double k) const {
    thread_local std::array<Blend, 64> memo;
    std::uint64_t nb, kb;
    std::memcpy(&nb, &n, sizeof nb);
    std::memcpy(&kb, &k, sizeof kb);
    const std::uint64_t key = id_ * 0x9E3779B97F4A7C15ull ^ nb ^ ((kb << 29) | (kb >> 35));
    Blend& b = memo[(key * 0x9E3779B97F4A7C15ull) >> 58];
    if (b.table != id_ || b.n != n || b.k != k || id_ == 0) b = make_blend(n, k);
    return b;
  }
  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> ids{0};
    return ++ids;
  }

  std::vector<GemmShapeCurve> shapes_;
  std::vector<std::pair<double, double>> log_nk_;  // (log n, log k) per shape
  std::uint64_t id_ = 0;                            // 0: default-constructed (no shapes)
};

// Decode-attention efficiency measured on a (parallel units = sequences x KV heads, context)
// grid, re-expressed over (units x context = KV head-tokens per launch, context). Why: at one
// context, efficiency grows with the work in the launch and saturates; indexing by total work
// lets a launch with far more units than were measured take the saturated value instead of the
// value at the largest measured unit count (which, at short contexts, is a small launch).
// `by_units[context]` holds (units, frac) points; the x axis is log-spaced, 4 per decade.
class LogGrid2D;
LogGrid2D decode_grid_by_work(const std::vector<std::pair<double, std::vector<std::pair<double, double>>>>& by_context);

// A value over a rectangular grid (x, y), bilinear in (log x, log y), clamped at the edges.
class LogGrid2D {
 public:
  LogGrid2D() = default;
  LogGrid2D(std::vector<double> xs, std::vector<double> ys, std::vector<double> values)
      : xs_(std::move(xs)), ys_(std::move(ys)), values_(std::move(values)),
        log_steps_x_(log_steps(xs_)), log_steps_y_(log_steps(ys_)) {}
  bool empty() const { return values_.empty(); }
  const std::vector<double>& xs() const { return xs_; }
  const std::vector<double>& ys() const { return ys_; }
  const std::vector<double>& values() const { return values_; }
  double value(std::size_t i, std::size_t j) const { return values_[i * ys_.size() + j]; }

  // at(x, y, hint) starts each axis' search from the cell of the previous call: the same cell and
  // arithmetic as at(x, y), so the same value. For a caller whose points move little from call to
  // call (a decode run: the context grows by one token a step); the hint is the caller's state, so
  // the grid stays read-only (a profile is shared by sweep threads).
  struct Hint {
    std::size_t x = 0, y = 0;  // 0: none yet
  };
  double at(double x, double y) const {
    Hint none;
    return at(x, y, none);
  }
  double at(double x, double y, Hint& hint) const {
    const auto [i0, i1, fx] = locate(xs_, log_steps_x_, x, hint.x);
    const auto [j0, j1, fy] = locate(ys_, log_steps_y_, y, hint.y);
    const double a = value(i0, j0) + fy * (value(i0, j1) - value(i0, j0));
    const double b = value(i1, j0) + fy * (value(i1, j1) - value(i1, j0));
    return a + fx * (b - a);
  }

 private:
  struct Span {
    std::size_t lo, hi;
    double f;
  };
  // steps[i] = log(axis[i] / axis[i - 1]), once here: at() runs for every decode iteration
  // (the decode attention op is re-timed each step), and the same expression evaluated once
  // gives bit-identical interpolation with half the logs.
  static std::vector<double> log_steps(const std::vector<double>& axis) {
    std::vector<double> steps(axis.size(), 0.0);
    for (std::size_t i = 1; i < axis.size(); ++i) steps[i] = std::log(axis[i] / axis[i - 1]);
    return steps;
  }
  // The cell of v: hi is the first point at or above v (after the first). It is `hint` when
  // axis[hint - 1] < v <= axis[hint] (the axis increases), else a binary search finds it (the
  // linear scan it replaced found the same point but cost ~190 instructions a decode step on the
  // A100 grid) and leaves it in `hint`.
  static Span locate(const std::vector<double>& axis, const std::vector<double>& steps, double v, std::size_t& hint) {
    if (axis.size() == 1 || v <= axis.front()) return {0, 0, 0.0};
    if (v >= axis.back()) return {axis.size() - 1, axis.size() - 1, 0.0};
    std::size_t hi = hint;
    if (hi == 0 || hi >= axis.size() || !(axis[hi - 1] < v && v <= axis[hi])) {
      hi = static_cast<std::size_t>(std::lower_bound(axis.begin() + 1, axis.end(), v) - axis.begin());
      hint = hi;
    }
    const double f = std::log(v / axis[hi - 1]) / steps[hi];
    return {hi - 1, hi, f};
  }
  std::vector<double> xs_, ys_, values_;
  std::vector<double> log_steps_x_, log_steps_y_;
};

inline LogGrid2D decode_grid_by_work(
    const std::vector<std::pair<double, std::vector<std::pair<double, double>>>>& by_context) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  for (const auto& [context, pts] : by_context) {
    for (const auto& [units, frac] : pts) {
      lo = std::min(lo, units * context);
      hi = std::max(hi, units * context);
    }
  }
  std::vector<double> xs;
  for (double e = std::floor(std::log10(lo) * 4.0); e <= std::ceil(std::log10(hi) * 4.0); e += 1.0) xs.push_back(std::pow(10.0, e / 4.0));
  std::vector<double> ys, values(xs.size() * by_context.size());
  for (std::size_t j = 0; j < by_context.size(); ++j) {
    const auto& [context, pts] = by_context[j];
    ys.push_back(context);
    const EfficiencyTable by_units(pts);
    // Below the fewest units measured at this context the launch is latency-bound: its time
    // holds at the smallest launch's, so the fraction falls with the work.
    const double min_units = by_units.points().front().first;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double units = xs[i] / context;
      values[i * by_context.size() + j] = units < min_units ? by_units.at(min_units) * units / min_units : by_units.at(units);
    }
  }
  return LogGrid2D(std::move(xs), std::move(ys), std::move(values));
}

}  // namespace servesim

