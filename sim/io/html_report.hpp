// report.html: one self-contained page (inline CSS and SVG, no script, nothing fetched) for a run
// (write_run_html) and for load analyses such as sweep and saturate (write_load_html).
#pragma once
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"
#include "sim/io/load_data.hpp"
#include "sim/metrics/run_recorder.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

// A latency objective drawn on the charts: `metric` (ttft_s, tpot_s, itl_s or e2e_s) at
// percentile `percentile` (50, 95 or 99) must be at most `threshold_s`. Not metrics/slo.hpp's
// SloTarget (the evaluated result): two classes of one name broke the one-definition rule, and
// ASan caught the vector code of one writing past the other's allocation.
struct SloLine {
  std::string metric;
  double percentile = 99.0;
  double threshold_s = 0.0;
};

// The lines the HTML charts draw: the first class's SLO (the scenario-wide one unless classes
// set their own).
std::vector<SloLine> slo_lines(const Scenario& scenario);

// The run page: summary cards from `report` (make_report's output) with each SLO checked,
// latency CDFs from the result's histograms, the recorder's timelines and request sample, and the
// model's ops on the hardware's roofline for the run's mean prefill and decode batches.
void write_run_html(std::ostream& os, const Scenario& scenario, const SimResult& result, const nlohmann::json& report,
                    const RunRecorder& recorder, const std::vector<SloLine>& slos = {});

// Reads a LoadPoint from one run's report.json (latency.*.p50/p99, throughput.*).
LoadPoint load_point_from_report(double load, const nlohmann::json& report);

// One configuration on the cost-against-latency chart (plan: its binding latency at the target
// rate over the SLO target, and its $ per million output tokens).
struct CostPoint {
  std::string name;
  double latency = 0.0, cost = 0.0;
  std::string tooltip;
};
// Which points no other point beats: none has a latency and a cost both at most this one's with
// one of them lower. Equal points are on the front together.
std::vector<bool> pareto_front(const std::vector<CostPoint>& points);

struct LoadPage {
  std::string title;                     // e.g. "saturate: llama-3-8b on h100-sxm"
  std::string load_label = "arrival rate (req/s)";
  std::vector<std::pair<std::string, std::string>> facts;  // summary card rows (name, value)
  std::vector<LoadPoint> points;         // any order; drawn sorted by load
  std::vector<SloLine> slos;           // drawn as reference lines on the latency charts
  std::optional<double> marked_load;     // e.g. the stable QPS found by saturate
  std::string marked_label = "stable QPS";
  // A page over several configurations (plan, per_configuration): per curve its TTFT and TPOT
  // p50/p99 against load, the SLO lines and its stable rate (marked_label), under its name and note.
  bool per_configuration = false;
  std::vector<LoadCurve> curves;
  // Cost against latency, one point per configuration, the Pareto front (pareto_front) drawn.
  std::vector<CostPoint> costs;
  std::string cost_label, latency_label, costs_note;
};

// The sweep/saturate page: latency (p50, p99) and throughput against load; with curves, the plan
// page: the cost chart, then each configuration's latency against load.
void write_load_html(std::ostream& os, const LoadPage& page);

// `servesim roofline --html`: one step's ops on the hardware's roofline (the run page's chart).
struct RooflinePoint {
  std::string name;
  double intensity = 0.0, flops_per_s = 0.0;  // FLOP/byte; attained FLOP/s (cost model)
  std::string tip;                            // hover text
};
struct RooflinePage {
  std::string title;
  const HwProfile* hw = nullptr;  // not owned
  Dtype dtype = Dtype::bf16;
  std::vector<std::pair<std::string, std::string>> facts;  // summary card rows
  std::vector<std::string> why;
  std::vector<RooflinePoint> points;
};
void write_roofline_html(std::ostream& os, const RooflinePage& page);

}  // namespace servesim
