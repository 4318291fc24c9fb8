// KV offload tiers against a published multi-turn measurement with and without a CPU tier
// (data/validation/kv_offload_published.json, held out, source cited there; issue 38 item 4):
// each row's workload run with and without engine.kv_offload, the mean job completion time of
// each, and the ratio offload / no offload against the published one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct OffloadRowResult {
  double jobs_per_s = 0.0;
  std::int64_t jobs = 0;
  double published_jct_s = 0.0, published_offload_jct_s = 0.0;
  double predicted_jct_s = 0.0, predicted_offload_jct_s = 0.0;
  double published_ratio = 0.0, predicted_ratio = 0.0;
  double ratio_error = 0.0;  // predicted_ratio / published_ratio - 1
  // What the offload run saw: prompt tokens found in the GPU cache and loaded from the CPU tier,
  // over those looked up; and the run without offload's GPU hits.
  double gpu_hit_ratio = 0.0, cpu_hit_ratio = 0.0, baseline_hit_ratio = 0.0;
  bool all_jobs_completed = false;
};

// Every row of `doc` (read from `file`); InputError naming the file and key on a malformed one.
std::vector<OffloadRowResult> run_offload_rows(const nlohmann::json& doc, const std::string& file);

// data/validation/kv_offload_published.json in the bundled data folder.
std::string default_offload_rows_file();

}  // namespace servesim
