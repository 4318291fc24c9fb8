// Runs a command's independent jobs (a sweep's simulations, a plan's options, a saturate probe's
// replications): this process's jobs across its cores with TBB, the others on the processes of a
// JobSplit (sim/dist/job_split.hpp) when there is one, and every result back in job order. With a
// split, results cross processes as JSON (`encode`/`decode`, numbers exact), and every process
// decodes them all, its own included, so a split run and a single process build their rows from
// the same values. Whatever a process throws before the exchange (a bad value while preparing, a
// work limit, a failed run) reaches every process through it: none is left waiting.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/dist/job_split.hpp"

namespace servesim {

// A job's result as it crosses processes. `decode` reads it back strictly (types and ranges,
// through the JobOrigin's readers, so an error names the partial file and key it came from).
template <class T>
struct JobCodec {
  std::function<nlohmann::json(const T&)> encode;
  std::function<T(const nlohmann::json&, const JobOrigin&)> decode;
};

// Optional steps around the jobs this process runs.
struct JobHooks {
  // Called for each job run here, one after another in job order, before any job runs (a sweep
  // builds and checks its scenarios here, so a bad value fails before any simulation).
  std::function<void(std::size_t job)> prepare;
  // After every prepare, before the first job (the place to refuse the work).
  std::function<void()> before_runs;
  // After each job, (jobs done, jobs run here), from the thread that ran it.
  std::function<void(std::size_t done, std::size_t total)> progress;
};

// The jobs of 0..n-1 that run here (all when split is null), ascending.
std::vector<std::size_t> jobs_here(std::size_t n, const JobSplit* split);
// Runs prepare, before_runs and then run(job) for each of `jobs` (across cores when `parallel`).
// Exceptions propagate; JobFailure's job says which job threw (jobs.size() past the end for
// before_runs), so that processes report the same first failure as one process would.
void run_here(const std::vector<std::size_t>& jobs, bool parallel, const std::function<void(std::size_t)>& run, const JobHooks& hooks,
              JobFailure* failure);
// `decode` of every result with its origin; a result that does not read back (an edited partial
// file) is an InputError naming the file and key.
void decode_results(const std::vector<nlohmann::json>& results, const JobSplit& split,
                    const std::function<void(std::size_t, const nlohmann::json&, const JobOrigin&)>& decode);

// job(i) for i in [0, n), results in job order. `split` null: every job here.
template <class T>
std::vector<T> run_jobs(std::size_t n, const std::function<T(std::size_t)>& job, bool parallel, JobSplit* split,
                        const JobCodec<T>& codec, const JobHooks& hooks = {}) {
  std::vector<T> out(n);
  const std::vector<std::size_t> mine = jobs_here(n, split);
  if (!split) {
    run_here(mine, parallel, [&](std::size_t i) { out[i] = job(i); }, hooks, nullptr);
    return out;
  }
  std::vector<std::optional<nlohmann::json>> encoded(n);
  JobShare share;
  JobFailure failure;
  run_here(mine, parallel, [&](std::size_t i) { encoded[i] = codec.encode(job(i)); }, hooks, &failure);
  if (!failure.what.empty()) {
    share.failure = failure;  // every process stops with the first one, after the exchange
  } else {
    for (std::size_t i : mine) share.results.emplace_back(i, std::move(*encoded[i]));
  }
  const std::vector<nlohmann::json> all = split->exchange(n, std::move(share));
  decode_results(all, *split, [&](std::size_t i, const nlohmann::json& j, const JobOrigin& at) { out[i] = codec.decode(j, at); });
  return out;
}

}  // namespace servesim
