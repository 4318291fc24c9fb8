// The run's figures by their path in report.json ("latency.ttft_s.p99", "slo.goodput_requests_per_s"):
// one registry for everything that names a report figure. make_report (report_io) computes every
// value; this file says which fleet-level scalar paths exist and what each means, reads them back
// out of a report, and checks names given on a command line against them (sweep --metrics,
// compare --threshold) before anything runs. tests/unit checks the registry against the reports
// the writer produces, both ways.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct ReportMetric {
  std::string path;     // dotted path in report.json
  std::string meaning;  // one line, with the unit when the name does not carry it
  std::string present;  // "" when every report has it, else when it is written
};

// Every fleet-level scalar of report.json (numbers and booleans outside the echoed inputs
// scenario/model/hardware and outside arrays), in report order.
const std::vector<ReportMetric>& report_metrics();
std::vector<std::string> report_metric_paths();

// InputError naming `where` (e.g. "--metrics") for the first name that is not a report metric,
// listing the close ones.
void check_report_metrics(const std::vector<std::string>& names, const std::string& where);

// Every numeric leaf of a report keyed by path (booleans as 0/1), for drift comparison: the
// registry's scalars, plus the replicas (replicas.<i>.<path>) and SLO classes
// (slo.classes.<name>.<path>). Skipped: the echoed inputs (scenario, model, hardware), time
// series (arrays of numbers, whose length follows the run) and sim.wall_s (the machine's speed).
std::map<std::string, double> flatten_report(const nlohmann::json& report);

}  // namespace servesim
