// sweep: every combination of grid values, one row each (grid values then the run's metrics),
// simulations spread across cores with TBB (and processes: run_jobs.hpp), rows in grid order
// whatever the timing.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "sim/analysis/summary.hpp"
#include "sim/dist/job_split.hpp"
#include "sim/io/table.hpp"

namespace servesim {

struct GridAxis {
  std::string key;                  // scenario key path, e.g. engine.max_num_seqs
  std::vector<std::string> values;  // as written (JSON when they parse, else strings)
};

// Builds the scenario for one combination: `overrides` are "key=value" assignments; `seed` replaces
// the scenario's seed when >= 0. Throws InputError for bad values.
using ScenarioFactory = std::function<Scenario(const std::vector<std::string>& overrides, long long seed)>;

struct SweepOptions {
  int replications = 1;
  bool parallel = true;
  std::vector<std::string> metrics;  // empty: a default selection
  // Optional: after each simulation, (simulations done, total), from the thread that ran it
  // (with a split: those of this process).
  std::function<void(std::size_t done, std::size_t total)> progress;
  // Optional: other processes run part of the simulations (--mpi, --shard); null: all run here.
  JobSplit* split = nullptr;
  // Optional: called with every simulation's scenario once all are built, before any runs (the
  // place to refuse the work; see work_estimate.hpp). With a split, those this process runs.
  std::function<void(const std::vector<Scenario>&)> before_runs;
};

// "key=v1,v2,..." -> GridAxis; InputError on a missing '=' or empty value list.
GridAxis parse_grid(const std::string& text);

Table run_sweep(const ScenarioFactory& make, const std::vector<GridAxis>& grid, const SweepOptions& options);

// The report paths a sweep shows when --metrics is not given.
const std::vector<std::string>& sweep_default_metrics();

// Adds `name.mean`, `.ci95` (and `.stddev`, `.min`, `.max`) columns for each replicated metric.
void add_replication_columns(Table& t, std::size_t row, const std::vector<Metrics>& reps);

}  // namespace servesim
