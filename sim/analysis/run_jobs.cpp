// See run_jobs.hpp.
#include "sim/analysis/run_jobs.hpp"

#include <atomic>

#include <tbb/parallel_for.h>

#include "sim/core/error.hpp"

namespace servesim {

void for_each_job(std::size_t n, bool parallel, const std::function<bool(std::size_t)>& mine,
                  const std::function<void(std::size_t)>& run, const std::function<void(std::size_t, std::size_t)>& progress) {
  std::vector<std::size_t> jobs;
  for (std::size_t i = 0; i < n; ++i) {
    if (!mine || mine(i)) jobs.push_back(i);
  }
  std::atomic<std::size_t> done{0};
  auto one = [&](std::size_t k) {
    run(jobs[k]);
    const std::size_t d = ++done;
    if (progress) progress(d, jobs.size());
  };
  if (parallel) {
    tbb::parallel_for(std::size_t{0}, jobs.size(), one);
  } else {
    for (std::size_t k = 0; k < jobs.size(); ++k) one(k);
  }
}

JobFailure job_failure(const std::exception& e) {
  return {dynamic_cast<const InputError*>(&e) != nullptr, e.what()};
}

void decode_results(const std::vector<nlohmann::json>& results, const std::function<void(std::size_t, const nlohmann::json&)>& decode) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    try {
      decode(i, results[i]);
    } catch (const nlohmann::json::exception& e) {
      throw InputError("the result of run " + std::to_string(i) + " does not read back (" + e.what() + ")");
    }
  }
}

}  // namespace servesim
