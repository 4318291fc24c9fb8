// Inline SVG charts for report.html, generated here so the report needs no script or network:
// line/area charts with linear or log axes, reference lines and labelled points (roofline), and
// a Gantt chart of request phases. Output is deterministic text for the same input.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace servesim::svg {

struct XY {
  double x, y;
};

struct Series {
  std::string name, color;
  std::vector<XY> points;
  bool dashed = false;
  bool markers = false;  // a dot at each point (for sparse series such as load sweeps)
  bool step = false;     // draw as a step function (value holds until the next point)
};

// A horizontal (on the y axis) or vertical (on the x axis) reference line, e.g. an SLO.
struct RefLine {
  double value;
  std::string label, color;
};

// A labelled point, e.g. one op on the roofline. The tooltip shows on hover.
struct Mark {
  double x, y;
  std::string label, color, tooltip;
};

struct Axis {
  std::string label;
  bool log = false;
  std::optional<double> min, max;  // default: the data's range (from 0 on a linear axis)
};

struct Chart {
  std::string id;  // the <svg> element's id
  std::string title, subtitle;
  Axis x, y;
  std::vector<Series> series;
  std::vector<RefLine> hlines, vlines;
  std::vector<Mark> marks;
  int width = 580, height = 300;
};

std::string render(const Chart& chart);

struct GanttBar {
  double start, end;
  std::string color, tooltip;
};
struct GanttRow {
  std::string label;
  std::vector<GanttBar> bars;
};
struct LegendItem {
  std::string name, color;
};
struct Gantt {
  std::string id, title, subtitle, x_label;
  std::vector<GanttRow> rows;
  std::vector<LegendItem> legend;
  int width = 1140;
};

std::string render(const Gantt& gantt);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string escape(const std::string& s);
// Short human form: 3 significant digits, k/M/G/T/P suffixes from 1e4 up.
std::string format_number(double v);

}  // namespace servesim::svg
