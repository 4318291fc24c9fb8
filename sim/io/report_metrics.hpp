// The run's figures by their path in report.json ("latency.ttft_s.p99", "slo.goodput_requests_per_s"):
// one registry for everything that names a report figure. Each figure is declared once, in
// report_metrics.cpp: its path, its meaning (with the unit when the name does not carry it), when it
// is written, and how it is computed from the run. make_report (report_io) writes the figures from
// this table; `list metrics`, summaries, sweep --metrics and compare read the same table, and names
// given on a command line are checked against it before anything runs. Adding a figure is one entry
// there. tests/unit checks the registry against the reports the writer produces, both ways.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct Scenario;
struct RunMetrics;
struct MemoryPlan;
struct SimResult;
struct ColdStart;
struct SloResult;
class LogHistogram;

struct ReportMetric {
  std::string path;     // dotted path in report.json
  std::string meaning;  // one line, with the unit when the name does not carry it
  std::string present;  // "" when every report has it, else when it is written
};

// Every fleet-level scalar of report.json (numbers and booleans outside the echoed inputs
// scenario/model/hardware and outside arrays), in report order.
const std::vector<ReportMetric>& report_metrics();
std::vector<std::string> report_metric_paths();

// What the figures are computed from. Run figures are written at the top level for the fleet
// (metrics summed over the replicas) and again under each replica (its own metrics and memory);
// fleet figures once, at the top level.
struct ReportSource {
  const Scenario& scenario;
  const RunMetrics& metrics;  // the fleet's or one replica's
  const MemoryPlan& memory;   // per GPU
  double replicas;            // GPU-time fractions divide by it: two busy replicas are 100% busy, not 200%
  double duration_s;          // simulated time
  const SimResult& result;    // the whole run (fleet figures)
  const ColdStart& cold_start;
  const SloResult& slo;
};

enum class FigureScope { run, fleet };

// One figure of report.json as the writer produces it. A histogram figure is an object of summary
// statistics (histogram_summary); the registry lists each statistic as its own metric.
struct ReportFigure {
  std::string path;     // dotted path in report.json (under replicas.<i> too, for run figures)
  std::string meaning;  // one line, with the unit when the name does not carry it
  nlohmann::json (*value)(const ReportSource&);
  std::string present = "";                       // "" when every report has it, else when it is written
  bool (*written)(const ReportSource&) = nullptr;  // the `present` condition; null: always written
  bool histogram = false;
  FigureScope scope = FigureScope::run;
};

// Every figure the writer produces from the tables, run figures first.
const std::vector<ReportFigure>& report_figures();

// Sets every figure of `scope` that `source` has into `report` at its path (creating the objects on
// the way); the report's other fields (names, time series, echoed inputs) are report_io's.
// `only`, when given, picks the figures by path.
void write_report_figures(nlohmann::json& report, const ReportSource& source, FigureScope scope,
                          const std::function<bool(const std::string& path)>& only = {});

// A streaming histogram as the report writes it: count, mean, p50, p95, p99, max, jitter
// (standard deviation / mean).
nlohmann::json histogram_summary(const LogHistogram& h);

// InputError naming `where` (e.g. "--metrics") for the first name that is not a report metric,
// listing the close ones.
void check_report_metrics(const std::vector<std::string>& names, const std::string& where);

// Every numeric leaf of a report keyed by path (booleans as 0/1), for drift comparison: the
// registry's scalars, plus the replicas (replicas.<i>.<path>) and SLO classes
// (slo.classes.<name>.<path>). Skipped: the echoed inputs (scenario, model, hardware), time
// series (arrays of numbers, whose length follows the run) and sim.wall_s (the machine's speed,
// in reports written before it moved to the printed summary).
std::map<std::string, double> flatten_report(const nlohmann::json& report);

}  // namespace servesim
