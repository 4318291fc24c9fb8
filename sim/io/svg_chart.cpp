// SVG chart rendering; see svg_chart.hpp. Layout: title and legend on top, y axis on the left,
// x axis at the bottom; data clipped to the plot area.
#include "sim/io/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace servesim::svg {

namespace {

constexpr double kLeft = 66, kRight = 18, kTop = 64, kBottom = 46;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

struct Scale {
  bool log = false;
  double lo = 0, hi = 1;      // data range (positive on a log axis)
  double p0 = 0, p1 = 1;      // pixel range
  double at(double v) const {
    if (log) {
      const double l = std::log10(std::max(v, lo * 1e-3));
      return p0 + (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (p1 - p0);
    }
    return p0 + (v - lo) / (hi - lo) * (p1 - p0);
  }
};

// 1-2-5 steps giving about `target` ticks.
double nice_step(double span, int target) {
  const double raw = span / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  return (r < 1.5 ? 1.0 : r < 3.5 ? 2.0 : r < 7.5 ? 5.0 : 10.0) * mag;
}

std::vector<double> ticks(const Scale& s, int target) {
  std::vector<double> out;
  if (s.log) {
    const int a = static_cast<int>(std::ceil(std::log10(s.lo) - 1e-9));
    const int b = static_cast<int>(std::floor(std::log10(s.hi) + 1e-9));
    const int stride = std::max(1, (b - a + 1) / std::max(1, target));
    for (int e = a; e <= b; e += stride) out.push_back(std::pow(10.0, e));
    if (out.size() < 2) {  // less than a decade: 1-2-5 within it
      out.clear();
      for (int e = a - 1; e <= b; ++e) {
        for (const double m : {1.0, 2.0, 5.0}) {
          const double v = m * std::pow(10.0, e);
          if (v >= s.lo * (1 - 1e-9) && v <= s.hi * (1 + 1e-9)) out.push_back(v);
        }
      }
    }
    return out;
  }
  const double step = nice_step(s.hi - s.lo, target);
  for (double v = std::ceil(s.lo / step - 1e-9) * step; v <= s.hi + step * 1e-9; v += step) {
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

// Data range of an axis: explicit bounds win; a linear axis starts at 0 for non-negative data;
// a log axis spans whole decades around positive data.
Scale make_scale(const Axis& axis, double dmin, double dmax, double p0, double p1) {
  Scale s;
  s.log = axis.log;
  s.p0 = p0;
  s.p1 = p1;
  if (!std::isfinite(dmin) || !std::isfinite(dmax)) {
    dmin = axis.log ? 1.0 : 0.0;
    dmax = axis.log ? 10.0 : 1.0;
  }
  if (axis.log) {
    dmin = std::max(dmin, 1e-12);
    dmax = std::max(dmax, dmin);
    s.lo = axis.min.value_or(std::pow(10.0, std::floor(std::log10(dmin))));
    s.hi = axis.max.value_or(std::pow(10.0, std::ceil(std::log10(dmax))));
    if (s.hi <= s.lo) s.hi = s.lo * 10.0;
    return s;
  }
  s.lo = axis.min.value_or(dmin >= 0.0 ? 0.0 : dmin);
  double hi = axis.max.value_or(dmax);
  if (hi <= s.lo) hi = s.lo + (s.lo == 0.0 ? 1.0 : std::fabs(s.lo));
  if (!axis.max) hi = std::ceil(hi / nice_step(hi - s.lo, 5) - 1e-9) * nice_step(hi - s.lo, 5);
  s.hi = hi;
  return s;
}

void open_svg(std::ostringstream& os, const std::string& id, int w, int h, const std::string& title, const std::string& subtitle) {
  os << "<svg id=\"" << escape(id) << "\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << w << ' ' << h
     << "\" width=\"" << w << "\" height=\"" << h << "\" role=\"img\" aria-label=\"" << escape(title) << "\">\n";
  os << "<title>" << escape(title) << "</title>\n";
  os << "<rect x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h << "\" fill=\"#ffffff\"/>\n";
  os << "<text x=\"12\" y=\"20\" class=\"ct\">" << escape(title) << "</text>\n";
  if (!subtitle.empty()) os << "<text x=\"12\" y=\"36\" class=\"cs\">" << escape(subtitle) << "</text>\n";
}

void legend(std::ostringstream& os, const std::vector<LegendItem>& items, double x, double y) {
  for (const auto& it : items) {
    os << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 9) << "\" width=\"12\" height=\"10\" fill=\"" << escape(it.color) << "\"/>";
    os << "<text x=\"" << num(x + 16) << "\" y=\"" << num(y) << "\" class=\"lg\">" << escape(it.name) << "</text>\n";
    x += 16 + 7.0 * static_cast<double>(it.name.size()) + 18;
  }
}

}  // namespace

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  const double a = std::fabs(v);
  char buf[32];
  const char* suffix = "";
  double x = v;
  if (a >= 1e15) { x = v / 1e15; suffix = "P"; }
  else if (a >= 1e12) { x = v / 1e12; suffix = "T"; }
  else if (a >= 1e9) { x = v / 1e9; suffix = "G"; }
  else if (a >= 1e6) { x = v / 1e6; suffix = "M"; }
  else if (a >= 1e4) { x = v / 1e3; suffix = "k"; }
  // 1000..9999 in full ("2500", not "2.5e+03").
  const double ax = std::fabs(x);
  std::snprintf(buf, sizeof buf, ax >= 1e3 && ax < 1e4 ? "%.4g%s" : "%.3g%s", x, suffix);
  return buf;
}

namespace {

// The plot area in pixels: x from px0 (left) to px1, y from py0 (bottom) to py1 (top).
struct Frame {
  double px0, px1, py0, py1;
};

// Grid lines, tick labels, the frame and the axis labels.
void draw_axes(std::ostream& os, const Chart& c, const Scale& sx, const Scale& sy, const Frame& f) {
  const double px0 = f.px0, px1 = f.px1, py0 = f.py0, py1 = f.py1;
  os << "<g class=\"axis\">\n";
  for (const double t : ticks(sy, 5)) {
    const double y = sy.at(t);
    os << "<line x1=\"" << num(px0) << "\" x2=\"" << num(px1) << "\" y1=\"" << num(y) << "\" y2=\"" << num(y) << "\" class=\"grid\"/>";
    os << "<text x=\"" << num(px0 - 6) << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\" class=\"tk\">" << format_number(t) << "</text>\n";
  }
  for (const double t : ticks(sx, 6)) {
    const double x = sx.at(t);
    os << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(py0) << "\" y2=\"" << num(py1) << "\" class=\"grid\"/>";
    os << "<text x=\"" << num(x) << "\" y=\"" << num(py0 + 16) << "\" text-anchor=\"middle\" class=\"tk\">" << format_number(t) << "</text>\n";
  }
  os << "<rect x=\"" << num(px0) << "\" y=\"" << num(py1) << "\" width=\"" << num(px1 - px0) << "\" height=\"" << num(py0 - py1)
     << "\" fill=\"none\" stroke=\"#888\"/>\n";
  os << "<text x=\"" << num((px0 + px1) / 2) << "\" y=\"" << num(c.height - 8.0) << "\" text-anchor=\"middle\" class=\"al\">" << escape(c.x.label)
     << "</text>\n";
  os << "<text transform=\"translate(14," << num((py0 + py1) / 2) << ") rotate(-90)\" text-anchor=\"middle\" class=\"al\">"
     << escape(c.y.label) << "</text>\n";
  os << "</g>\n";
}

// The series (polylines, optional markers) and the reference lines.
void draw_series(std::ostream& os, const Chart& c, const Scale& sx, const Scale& sy, const Frame& f) {
  for (const auto& s : c.series) {
    if (s.points.empty()) continue;
    os << "<polyline fill=\"none\" stroke=\"" << escape(s.color) << "\" stroke-width=\"1.8\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "")
       << " points=\"";
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      if (s.step && i > 0) os << num(sx.at(p.x)) << ',' << num(sy.at(s.points[i - 1].y)) << ' ';
      os << num(sx.at(p.x)) << ',' << num(sy.at(p.y)) << ' ';
    }
    os << "\"><title>" << escape(s.name) << "</title></polyline>\n";
    if (s.markers) {
      for (const auto& p : s.points) {
        os << "<circle cx=\"" << num(sx.at(p.x)) << "\" cy=\"" << num(sy.at(p.y)) << "\" r=\"3\" fill=\"" << escape(s.color) << "\"><title>"
           << escape(s.name) << ": " << format_number(p.x) << ", " << format_number(p.y) << "</title></circle>\n";
      }
    }
  }
  for (const auto& h : c.hlines) {
    const double y = sy.at(h.value);
    os << "<line x1=\"" << num(f.px0) << "\" x2=\"" << num(f.px1) << "\" y1=\"" << num(y) << "\" y2=\"" << num(y) << "\" stroke=\""
       << escape(h.color) << "\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"><title>" << escape(h.label) << "</title></line>\n";
  }
  for (const auto& v : c.vlines) {
    const double x = sx.at(v.value);
    os << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(f.py0) << "\" y2=\"" << num(f.py1) << "\" stroke=\""
       << escape(v.color) << "\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"><title>" << escape(v.label) << "</title></line>\n";
  }
}

// Marked points with their labels, placed greedily beside their point, moved up or down to avoid
// earlier labels, and left out (the tooltip remains) when no place is free.
void draw_marks(std::ostream& os, const Chart& c, const Scale& sx, const Scale& sy, const Frame& f) {
  struct Box {
    double x0, y0, x1, y1;
  };
  std::vector<Box> placed;
  for (const auto& m : c.marks) {
    const double x = sx.at(m.x), y = sy.at(m.y);
    os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"4\" fill=\"" << escape(m.color)
       << "\" stroke=\"#fff\" stroke-width=\"0.8\"><title>" << escape(m.tooltip.empty() ? m.label : m.tooltip) << "</title></circle>";
    if (!m.label.empty()) {
      const double w = 5.6 * static_cast<double>(m.label.size());
      for (const double dy : {0.0, 11.0, -11.0, 22.0, -22.0, 33.0, -33.0}) {
        const double lx = x + 6 > f.px1 - w ? x - 6 - w : x + 6;
        const Box b{lx, y - 14 + dy, lx + w, y - 3 + dy};
        const bool clash = std::any_of(placed.begin(), placed.end(), [&](const Box& o) {
          return b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1;
        });
        if (clash || b.y0 < f.py1) continue;
        placed.push_back(b);
        os << "<text x=\"" << num(lx) << "\" y=\"" << num(y - 5 + dy) << "\" class=\"mk\">" << escape(m.label) << "</text>";
        break;
      }
    }
    os << "\n";
  }
}

}  // namespace

std::string render(const Chart& c) {
  std::ostringstream os;
  open_svg(os, c.id, c.width, c.height, c.title, c.subtitle);
  const Frame f{kLeft, c.width - kRight, c.height - kBottom, kTop};

  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  auto take = [&](double x, double y) {
    if (std::isfinite(x) && (!c.x.log || x > 0)) xmin = std::min(xmin, x), xmax = std::max(xmax, x);
    if (std::isfinite(y) && (!c.y.log || y > 0)) ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  };
  bool any = false;
  for (const auto& s : c.series) {
    for (const auto& p : s.points) take(p.x, p.y), any = true;
  }
  for (const auto& m : c.marks) take(m.x, m.y), any = true;
  for (const auto& h : c.hlines) take(NAN, h.value);
  for (const auto& v : c.vlines) take(v.value, NAN);
  const Scale sx = make_scale(c.x, xmin, xmax, f.px0, f.px1);
  const Scale sy = make_scale(c.y, ymin, ymax, f.py0, f.py1);

  // Legend (series, then reference lines).
  std::vector<LegendItem> items;
  for (const auto& s : c.series) {
    if (!s.name.empty()) items.push_back({s.name, s.color});
  }
  for (const auto& h : c.hlines) items.push_back({h.label, h.color});
  for (const auto& v : c.vlines) items.push_back({v.label, v.color});
  legend(os, items, 12, c.subtitle.empty() ? 40 : 52);

  draw_axes(os, c, sx, sy, f);
  const std::string clip = c.id + "-clip";
  os << "<clipPath id=\"" << escape(clip) << "\"><rect x=\"" << num(f.px0) << "\" y=\"" << num(f.py1) << "\" width=\"" << num(f.px1 - f.px0)
     << "\" height=\"" << num(f.py0 - f.py1) << "\"/></clipPath>\n";
  os << "<g clip-path=\"url(#" << escape(clip) << ")\">\n";
  draw_series(os, c, sx, sy, f);
  draw_marks(os, c, sx, sy, f);
  os << "</g>\n";
  if (!any) {
    os << "<text x=\"" << num((f.px0 + f.px1) / 2) << "\" y=\"" << num((f.py0 + f.py1) / 2) << "\" text-anchor=\"middle\" class=\"cs\">no data</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

std::string render(const Gantt& g) {
  constexpr double row_h = 13, left = 80, right = 18, top = 64, bottom = 46;
  const double height = top + bottom + row_h * static_cast<double>(std::max<std::size_t>(1, g.rows.size()));
  std::ostringstream os;
  open_svg(os, g.id, g.width, static_cast<int>(height), g.title, g.subtitle);
  legend(os, g.legend, 12, g.subtitle.empty() ? 40 : 52);
  double t0 = INFINITY, t1 = -INFINITY;
  for (const auto& r : g.rows) {
    for (const auto& b : r.bars) t0 = std::min(t0, b.start), t1 = std::max(t1, b.end);
  }
  Axis axis;
  axis.min = std::isfinite(t0) ? t0 : 0.0;
  const Scale sx = make_scale(axis, t0, t1, left, g.width - right);
  const double py0 = height - bottom;
  os << "<g class=\"axis\">\n";
  for (const double t : ticks(sx, 8)) {
    const double x = sx.at(t);
    os << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << num(top) << "\" y2=\"" << num(py0) << "\" class=\"grid\"/>";
    os << "<text x=\"" << num(x) << "\" y=\"" << num(py0 + 16) << "\" text-anchor=\"middle\" class=\"tk\">" << format_number(t) << "</text>\n";
  }
  os << "<text x=\"" << num((left + g.width - right) / 2) << "\" y=\"" << num(height - 8) << "\" text-anchor=\"middle\" class=\"al\">"
     << escape(g.x_label) << "</text>\n</g>\n";
  for (std::size_t i = 0; i < g.rows.size(); ++i) {
    const double y = top + row_h * static_cast<double>(i);
    os << "<text x=\"" << num(left - 6) << "\" y=\"" << num(y + row_h - 3) << "\" text-anchor=\"end\" class=\"tk\">" << escape(g.rows[i].label)
       << "</text>";
    for (const auto& b : g.rows[i].bars) {
      const double x0 = sx.at(b.start), x1 = sx.at(b.end);
      os << "<rect x=\"" << num(x0) << "\" y=\"" << num(y + 1.5) << "\" width=\"" << num(std::max(1.0, x1 - x0)) << "\" height=\""
         << num(row_h - 3) << "\" fill=\"" << escape(b.color) << "\"><title>" << escape(b.tooltip) << "</title></rect>";
    }
    os << "\n";
  }
  if (g.rows.empty()) {
    os << "<text x=\"" << num(g.width / 2.0) << "\" y=\"" << num(top + 10) << "\" text-anchor=\"middle\" class=\"cs\">no requests sampled</text>\n";
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace servesim::svg
