// Measured efficiency tables from calibration. Each stores, per calibrated shape, the fraction of
// the roofline a real kernel reached:  frac = roofline_time / (measured_time - kernel_overhead),
// so one number covers both the memory-bound (small M, decode) and compute-bound regimes and
// transfers to nearby shapes that were not measured.
#pragma once
#include <cmath>
#include <limits>
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
  explicit GemmTable(std::vector<GemmShapeCurve> shapes) : shapes_(std::move(shapes)) {}
  bool empty() const { return shapes_.empty(); }
  const std::vector<GemmShapeCurve>& shapes() const { return shapes_; }

  // Roofline fraction at (m, n, k): the curve of the nearest calibrated shape in (log n, log k),
  // interpolated in log m. Why nearest and not a blend: tile shapes, split-K and wave
  // quantisation make efficiency jump between shapes; a neighbour's curve is a better guess than
  // an average of unrelated ones.
  double frac(double m, double n, double k) const {
    const GemmShapeCurve* best = nullptr;
    double best_d = std::numeric_limits<double>::infinity();
    for (const auto& s : shapes_) {
      const double dn = std::log(n / s.n), dk = std::log(k / s.k);
      const double d = dn * dn + dk * dk;
      if (d < best_d) {
        best_d = d;
        best = &s;
      }
    }
    return best ? best->frac_by_m.at(m) : 1.0;
  }

 private:
  std::vector<GemmShapeCurve> shapes_;
};

// A value over a rectangular grid (x, y), bilinear in (log x, log y), clamped at the edges.
class LogGrid2D {
 public:
  LogGrid2D() = default;
  LogGrid2D(std::vector<double> xs, std::vector<double> ys, std::vector<double> values)
      : xs_(std::move(xs)), ys_(std::move(ys)), values_(std::move(values)) {}
  bool empty() const { return values_.empty(); }
  const std::vector<double>& xs() const { return xs_; }
  const std::vector<double>& ys() const { return ys_; }
  const std::vector<double>& values() const { return values_; }
  double value(std::size_t i, std::size_t j) const { return values_[i * ys_.size() + j]; }

  double at(double x, double y) const {
    const auto [i0, i1, fx] = locate(xs_, x);
    const auto [j0, j1, fy] = locate(ys_, y);
    const double a = value(i0, j0) + fy * (value(i0, j1) - value(i0, j0));
    const double b = value(i1, j0) + fy * (value(i1, j1) - value(i1, j0));
    return a + fx * (b - a);
  }

 private:
  struct Span {
    std::size_t lo, hi;
    double f;
  };
  static Span locate(const std::vector<double>& axis, double v) {
    if (axis.size() == 1 || v <= axis.front()) return {0, 0, 0.0};
    if (v >= axis.back()) return {axis.size() - 1, axis.size() - 1, 0.0};
    std::size_t hi = 1;
    while (axis[hi] < v) ++hi;
    const double f = std::log(v / axis[hi - 1]) / std::log(axis[hi] / axis[hi - 1]);
    return {hi - 1, hi, f};
  }
  std::vector<double> xs_, ys_, values_;
};

}  // namespace servesim
