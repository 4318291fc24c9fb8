// KV offload tiers against a published multi-turn measurement (data/validation/kv_offload_published.json,
// held out, source cited there): Llama-3.1-8B on H100, 8-turn agent jobs, vLLM with and without
// LMCache's CPU tier. The ratio of mean job completion times (with offload / without) is compared
// per arrival rate; bounds kv-offload/* in data/validation/bounds.json, set before the first run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "sim/io/json_reader.hpp"
#include "sim/validate/bounds.hpp"
#include "sim/validate/offload_set.hpp"

using namespace servesim;

TEST_CASE("KV offload: JCT with / without a CPU tier against the published multi-turn runs") {
  const auto rows = run_offload_rows(load_json_file(default_offload_rows_file()), default_offload_rows_file());
  std::printf("\nKV offload, held out (data/validation/kv_offload_published.json): mean JCT (s) without / with a CPU tier\n");
  std::printf("  %-6s %-5s %-22s %-22s %-20s %s\n", "jobs/s", "jobs", "published", "servesim", "ratio pub / sim", "hits: no tier | GPU + CPU");
  std::vector<double> errors;
  for (const OffloadRowResult& r : rows) {
    std::printf("  %-6.0f %-5lld %8.2f / %-11.2f %8.2f / %-11.2f %5.3f / %-5.3f %+6.1f%%  %4.1f%% | %4.1f%% + %4.1f%%\n", r.jobs_per_s,
                static_cast<long long>(r.jobs), r.published_jct_s, r.published_offload_jct_s, r.predicted_jct_s,
                r.predicted_offload_jct_s, r.published_ratio, r.predicted_ratio, 100 * r.ratio_error, 100 * r.baseline_hit_ratio,
                100 * r.gpu_hit_ratio, 100 * r.cpu_hit_ratio);
    CHECK(r.all_jobs_completed);  // the JCT formula needs every job's 8 turns
    errors.push_back(std::fabs(r.ratio_error));
  }
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  REQUIRE(n > 0);
  const double median = n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
  const double worst = errors.back();
  const double median_bound = validation_bound("kv-offload/h100-jct-ratio-median");
  const double worst_bound = validation_bound("kv-offload/h100-jct-ratio-worst");
  std::printf("  JCT ratio |error|: n %zu, median %.1f%% (bound %.0f%%), worst %.1f%% (bound %.0f%%)\n", n, 100 * median,
              100 * median_bound, 100 * worst, 100 * worst_bound);
  CHECK(median <= median_bound);
  CHECK(worst <= worst_bound);
}
