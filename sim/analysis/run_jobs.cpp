// See run_jobs.hpp.
#include "sim/analysis/run_jobs.hpp"

#include <atomic>
#include <mutex>

#include <tbb/parallel_for.h>

#include "sim/core/error.hpp"

namespace servesim {

std::vector<std::size_t> jobs_here(std::size_t n, const JobSplit* split) {
  std::vector<std::size_t> jobs;
  for (std::size_t i = 0; i < n; ++i) {
    if (!split || split->owns(i)) jobs.push_back(i);
  }
  return jobs;
}

void run_here(const std::vector<std::size_t>& jobs, bool parallel, const std::function<void(std::size_t)>& run, const JobHooks& hooks,
              JobFailure* failure) {
  // `at`: the job being worked on when something threw (a failure is kept, not thrown, when
  // `failure` is given: the caller hands it to the other processes).
  std::size_t at = 0;
  std::mutex mu;
  const auto record = [&](const std::exception& e, std::size_t job) {
    const std::lock_guard<std::mutex> lock(mu);
    if (failure->what.empty() || job < failure->job) *failure = {dynamic_cast<const InputError*>(&e) != nullptr, e.what(), job};
  };
  try {
    if (hooks.prepare) {
      for (std::size_t i : jobs) {
        at = i;
        hooks.prepare(i);
      }
    }
    at = jobs.empty() ? 0 : jobs.back() + 1;
    if (hooks.before_runs) hooks.before_runs();
  } catch (const std::exception& e) {
    if (!failure) throw;
    record(e, at);
    return;
  }
  std::atomic<std::size_t> done{0};
  std::atomic<bool> failed{false};
  auto one = [&](std::size_t k) {
    if (failed) return;  // the rest would be thrown away
    try {
      run(jobs[k]);
    } catch (const std::exception& e) {
      if (!failure) throw;
      record(e, jobs[k]);
      failed = true;
      return;
    }
    const std::size_t d = ++done;
    if (hooks.progress) hooks.progress(d, jobs.size());
  };
  if (parallel) {
    tbb::parallel_for(std::size_t{0}, jobs.size(), one);
  } else {
    for (std::size_t k = 0; k < jobs.size(); ++k) one(k);
  }
}

void decode_results(const std::vector<nlohmann::json>& results, const JobSplit& split,
                    const std::function<void(std::size_t, const nlohmann::json&, const JobOrigin&)>& decode) {
  for (std::size_t i = 0; i < results.size(); ++i) decode(i, results[i], split.origin(i));
}

}  // namespace servesim
