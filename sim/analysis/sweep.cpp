// See sweep.hpp.
#include "sim/analysis/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/analysis/run_jobs.hpp"
#include "sim/core/error.hpp"
#include "sim/io/report_metrics.hpp"

namespace servesim {

GridAxis parse_grid(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError("--grid", "", "expected key=v1,v2,... got '" + text + "'");
  GridAxis a;
  a.key = text.substr(0, eq);
  std::string rest = text.substr(eq + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string v = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (v.empty()) throw InputError("--grid", a.key, "empty value in '" + text + "'");
    a.values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return a;
}

namespace {
const std::vector<std::string>& default_metrics() {
  static const std::vector<std::string> m = {
      "requests.completed", "requests.rejected", "requests.timed_out", "latency.ttft_s.p50", "latency.ttft_s.p99",
      "latency.tpot_s.p50", "latency.tpot_s.p99", "latency.e2e_s.p99", "throughput.requests_per_s",
      "throughput.output_tokens_per_s", "kv_cache.peak_used_frac", "batch.mean_size", "gpu.hbm_bw_util_frac",
      "slo.success_frac", "slo.goodput_requests_per_s", "slo.met"};
  return m;
}
}  // namespace

const std::vector<std::string>& sweep_default_metrics() { return default_metrics(); }

void add_replication_columns(Table& t, std::size_t row, const std::vector<Metrics>& reps) {
  if (reps.size() < 2) return;
  bool identical = true;  // every figure the same in every replication (NaN: absent in all)
  for (const auto& name : replicated_metrics()) {
    std::vector<double> xs;
    for (const auto& r : reps) xs.push_back(metric(r, name));
    for (const double x : xs) identical = identical && (x == xs.front() || (std::isnan(x) && std::isnan(xs.front())));
    const Interval iv = interval(xs);
    t.set(row, name + ".mean", iv.mean);
    t.set(row, name + ".ci95", iv.ci95_half);
    t.set(row, name + ".stddev", iv.stddev);
    t.set(row, name + ".min", iv.min);
    t.set(row, name + ".max", iv.max);
  }
  t.set(row, "identical_replications", identical);
}

namespace {
// One simulation's figures and its seed (the table's seed column), as they cross processes.
struct SweepRun {
  std::uint64_t seed = 0;
  Metrics metrics;
};
const JobCodec<SweepRun> sweep_run_codec = {
    [](const SweepRun& r) { return nlohmann::json::array({r.seed, metrics_to_json(r.metrics)}); },
    [](const nlohmann::json& j, const JobOrigin& at) {
      const KeyRange seeds{0.0, 9007199254740992.0, false, false};  // the scenario key seed's range
      const auto seed = static_cast<std::uint64_t>(at.integer(at.element(j, 0, 2, "", "a seed and its metrics"), seeds, "[0]"));
      return SweepRun{seed, metrics_from_json(j[1], at, "[1]")};
    }};
}  // namespace

Table run_sweep(const ScenarioFactory& make, const std::vector<GridAxis>& grid, const SweepOptions& o) {
  check_report_metrics(o.metrics, "--metrics");  // before any scenario is built or run
  // Combinations in odometer order: the last axis varies fastest.
  std::size_t combos = 1;
  for (const auto& a : grid) combos *= a.values.size();
  const std::size_t reps = static_cast<std::size_t>(std::max(1, o.replications));
  std::vector<std::vector<std::string>> assignments(combos);
  for (std::size_t c = 0; c < combos; ++c) {
    std::size_t rest = c;
    for (std::size_t i = grid.size(); i-- > 0;) {
      const auto& a = grid[i];
      assignments[c].insert(assignments[c].begin(), a.key + "=" + a.values[rest % a.values.size()]);
      rest /= a.values.size();
    }
  }
  // Simulation c * reps + r is replication r of combination c. Its scenario is built (and
  // validated) up front, serially, so a bad value fails before any run; with a split, only the
  // simulations this process runs (building takes as long as a short simulation).
  std::vector<Scenario> scenarios;
  std::vector<std::size_t> slot(combos * reps);  // simulation -> its scenario in `scenarios`
  std::optional<Scenario> first;                 // replication 0 of the combination being built
  std::size_t first_of = combos;
  const auto build = [&](std::size_t i) {
    const std::size_t c = i / reps, r = i % reps;
    if (first_of != c) {
      first = make(assignments[c], -1);
      first_of = c;
    }
    slot[i] = scenarios.size();
    scenarios.push_back(r == 0 ? *first : make(assignments[c], static_cast<long long>(replication_seed(first->seed, static_cast<int>(r)))));
  };
  JobHooks hooks;
  hooks.prepare = build;
  if (o.before_runs) hooks.before_runs = [&] { o.before_runs(scenarios); };
  hooks.progress = o.progress;
  const std::vector<SweepRun> results = run_jobs<SweepRun>(
      combos * reps,
      [&](std::size_t i) {
        const Scenario& s = scenarios[slot[i]];
        return SweepRun{s.seed, summarize_run(s, simulate(s))};
      },
      o.parallel, o.split, sweep_run_codec, hooks);
  const auto& names = o.metrics.empty() ? default_metrics() : o.metrics;
  Table t;
  for (const auto& a : grid) t.column(a.key);
  for (std::size_t c = 0; c < combos; ++c) {
    for (std::size_t i = 0; i < grid.size(); ++i) {
      const std::string& as = assignments[c][i];
      t.set(c, grid[i].key, as.substr(as.find('=') + 1));
    }
    t.set(c, "seed", static_cast<std::int64_t>(results[c * reps].seed));
    const Metrics& m = results[c * reps].metrics;
    for (const auto& n : names) {
      const double v = metric(m, n);
      if (std::isnan(v)) {
        t.set(c, n, Cell{});  // a figure this run's report does not have (report_metrics: `present`)
      } else if (n == "slo.met") {
        t.set(c, n, v > 0.5);
      } else {
        t.set(c, n, v);
      }
    }
    if (reps > 1) {
      t.set(c, "replications", static_cast<std::int64_t>(reps));
      std::vector<Metrics> reps_metrics;
      for (std::size_t r = 0; r < reps; ++r) reps_metrics.push_back(results[c * reps + r].metrics);
      add_replication_columns(t, c, reps_metrics);
    }
  }
  return t;
}

}  // namespace servesim
