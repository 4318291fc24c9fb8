// KV offload tiers against a published multi-turn measurement: see offload_set.hpp.
#include "sim/validate/offload_set.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

namespace {

double positive(const nlohmann::json& j, const char* key, const std::string& file, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0.0)) {
    throw InputError(file, where.empty() ? std::string(key) : where + "." + key, "must be a number > 0");
  }
  return j[key].get<double>();
}

// One run of sessions: its mean job completion time. A job's turns run one after another with
// think_time_s between them, so when every job completed, the mean over jobs is turns x the mean
// request latency plus the pauses.
struct RunOutcome {
  double jct_s = 0.0, prefix_hit_ratio = 0.0, gpu_hit_ratio = 0.0, cpu_hit_ratio = 0.0;
  bool all_completed = false;
};

RunOutcome run_jobs(const nlohmann::json& doc, const std::string& file) {
  const Scenario s = parse_scenario(doc, file);
  const nlohmann::json r = make_report(s, simulate(s));
  RunOutcome o;
  const auto turns = static_cast<double>(s.workload.sessions.turns);
  o.jct_s = turns * r["latency"]["e2e_s"]["mean"].get<double>() + (turns - 1.0) * s.workload.sessions.think_time_s;
  o.all_completed = r["requests"]["completed"].get<std::int64_t>() == s.workload.num_requests;
  o.prefix_hit_ratio = r["kv_cache"]["prefix_hit_ratio"].get<double>();
  if (r.contains("kv_offload")) {
    o.gpu_hit_ratio = r["kv_offload"]["gpu_hit_ratio"].get<double>();
    o.cpu_hit_ratio = r["kv_offload"]["cpu_hit_ratio"].get<double>();
  }
  return o;
}

}  // namespace

std::vector<OffloadRowResult> run_offload_rows(const nlohmann::json& doc, const std::string& file) {
  for (const char* key : {"base", "offload", "rows"}) {
    if (!doc.contains(key)) throw InputError(file, key, "missing");
  }
  if (!doc["rows"].is_array() || doc["rows"].empty()) throw InputError(file, "rows", "must be a non-empty array");
  const double window_s = positive(doc, "arrival_window_s", file, "");
  std::vector<OffloadRowResult> out;
  for (std::size_t i = 0; i < doc["rows"].size(); ++i) {
    const nlohmann::json& row = doc["rows"][i];
    const std::string where = "rows[" + std::to_string(i) + "]";
    OffloadRowResult res;
    res.jobs_per_s = positive(row, "jobs_per_s", file, where);
    res.published_jct_s = positive(row, "jct_s", file, where);
    res.published_offload_jct_s = positive(row, "offload_jct_s", file, where);
    res.jobs = std::max<std::int64_t>(1, std::llround(res.jobs_per_s * window_s));
    nlohmann::json scenario = doc["base"];
    const std::int64_t turns = scenario["workload"]["sessions"]["turns"].get<std::int64_t>();
    scenario["workload"]["arrival"]["rate_per_s"] = res.jobs_per_s;
    scenario["workload"]["num_requests"] = res.jobs * turns;
    const RunOutcome plain = run_jobs(scenario, file);
    scenario["engine"]["kv_offload"] = doc["offload"];
    const RunOutcome offload = run_jobs(scenario, file);
    res.predicted_jct_s = plain.jct_s;
    res.predicted_offload_jct_s = offload.jct_s;
    res.published_ratio = res.published_offload_jct_s / res.published_jct_s;
    res.predicted_ratio = res.predicted_offload_jct_s / res.predicted_jct_s;
    res.ratio_error = res.predicted_ratio / res.published_ratio - 1.0;
    res.gpu_hit_ratio = offload.gpu_hit_ratio;
    res.cpu_hit_ratio = offload.cpu_hit_ratio;
    res.baseline_hit_ratio = plain.prefix_hit_ratio;
    res.all_jobs_completed = plain.all_completed && offload.all_completed;
    out.push_back(res);
  }
  return out;
}

std::string default_offload_rows_file() {
  return (std::filesystem::path(data_dir()) / "data" / "validation" / "kv_offload_published.json").string();
}

}  // namespace servesim
