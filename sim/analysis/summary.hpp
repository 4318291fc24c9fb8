// The figures of one run by their report.json paths ("latency.ttft_s.p99",
// "slo.goodput_requests_per_s"; the registry is sim/io/report_metrics), for sweeps, replications,
// saturate and plan.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.hpp"
#include "sim/dist/job_split.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

using Metrics = std::vector<std::pair<std::string, double>>;

// Every registered report metric the run's report has (a conditional one may be absent).
Metrics summarize_run(const Scenario& scenario, const SimResult& result);
double metric(const Metrics& m, const std::string& name);  // NaN when absent
// Mean prompt and output lengths of the completed requests (0 when none completed).
double mean_prompt_tokens(const RunMetrics& m);
double mean_output_tokens(const RunMetrics& m);

// Why a run's report would say nothing (no request arrived, or every request of a class was
// turned away), naming the key to change; empty when the run served requests. `run` refuses such
// a run rather than writing an empty report.
std::string empty_run_reason(const Scenario& scenario, const SimResult& result);

// Mean, sample standard deviation and the 95% confidence half-width (Student t) of a sample.
struct Interval {
  double mean = 0.0, stddev = 0.0, ci95_half = 0.0, min = 0.0, max = 0.0;
  int n = 0;
};
Interval interval(const std::vector<double>& xs);

// Seed of replication i: the scenario's seed for i = 0, then fresh streams derived from it.
std::uint64_t replication_seed(std::uint64_t base, int i);

// Metrics whose spread across seeds `--replications` reports.
const std::vector<std::string>& replicated_metrics();

// Runs `scenarios` (independent simulations) across cores with TBB; results in input order.
// parallel = false runs them one after another (same results, for checking). `on_done`, when set,
// is called after each simulation, from the thread that ran it.
std::vector<Metrics> run_all(const std::vector<Scenario>& scenarios, bool parallel, std::vector<SimResult>* keep = nullptr,
                             const std::function<void()>& on_done = {});

// Metrics as they cross processes (run_jobs.hpp): [[name, value], ...], values exact. Read back,
// each name must be a report metric and each value a count, size, time, rate or fraction of one
// run: finite, in [0, 1e18] (InputError naming `at` and the item `item` of it otherwise).
nlohmann::json metrics_to_json(const Metrics& m);
Metrics metrics_from_json(const nlohmann::json& j, const JobOrigin& at, const std::string& item);

}  // namespace servesim
