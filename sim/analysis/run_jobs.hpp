// Runs a command's independent jobs (a sweep's simulations, a plan's options, a saturate probe's
// replications): this process's jobs across its cores with TBB, the others on the processes of a
// JobSplit (sim/dist/job_split.hpp) when there is one, and every result back in job order. With a
// split, results cross processes as JSON (`encode`/`decode`, numbers exact), and every process
// decodes them all, its own included, so a split run and a single process build their rows from
// the same values.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/dist/job_split.hpp"

namespace servesim {

// Calls run(i) for each i with mine(i) (all when `mine` is empty), across cores when `parallel`.
// `progress(done, total)` after each, total = the jobs run here. Exceptions propagate.
void for_each_job(std::size_t n, bool parallel, const std::function<bool(std::size_t)>& mine,
                  const std::function<void(std::size_t)>& run, const std::function<void(std::size_t, std::size_t)>& progress);

// The failure a job threw, as it crosses processes.
JobFailure job_failure(const std::exception& e);
// `decode` of every result; a result that does not read back (an edited partial file) is InputError.
void decode_results(const std::vector<nlohmann::json>& results, const std::function<void(std::size_t, const nlohmann::json&)>& decode);

template <class T>
struct JobCodec {
  std::function<nlohmann::json(const T&)> encode;
  std::function<T(const nlohmann::json&)> decode;
};

// job(i) for i in [0, n), results in job order. `split` null: every job here.
template <class T>
std::vector<T> run_jobs(std::size_t n, const std::function<T(std::size_t)>& job, bool parallel, JobSplit* split,
                        const JobCodec<T>& codec, const std::function<void(std::size_t, std::size_t)>& progress = {}) {
  std::vector<T> out(n);
  if (!split) {
    for_each_job(n, parallel, {}, [&](std::size_t i) { out[i] = job(i); }, progress);
    return out;
  }
  std::vector<std::optional<nlohmann::json>> encoded(n);
  JobShare share;
  try {
    for_each_job(n, parallel, [&](std::size_t i) { return split->owns(i); }, [&](std::size_t i) { encoded[i] = codec.encode(job(i)); },
                 progress);
    for (std::size_t i = 0; i < n; ++i) {
      if (encoded[i]) share.results.emplace_back(i, std::move(*encoded[i]));
    }
  } catch (const std::exception& e) {
    share.results.clear();
    share.failure = job_failure(e);  // every process stops with it, after the exchange
  }
  const std::vector<nlohmann::json> all = split->exchange(n, std::move(share));
  decode_results(all, [&](std::size_t i, const nlohmann::json& j) { out[i] = codec.decode(j); });
  return out;
}

}  // namespace servesim
