// Real vLLM V1 serving runs (vLLM 0.15.1 on H100 under inference-perf's constant-rate stages:
// data/validation/vllm_v1_runs.json, figures from the public repository inference-sim/training)
// replayed as scenarios on an engine profile, and servesim's TTFT / TPOT / E2E percentiles
// against theirs. Development data (docs/validation.md section 6 says which choices saw them).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/analysis/error_bands.hpp"
#include "sim/config/scenario.hpp"

namespace servesim {

struct VllmRunsOptions {
  std::string profile = "vllm";   // the engine profile every run is replayed on
  std::string only;               // keep runs whose id contains this ("" = all)
  double max_failure_frac = 0.10; // runs with more client failures are overloaded and skipped
  double time_scale = 1.0;        // < 1 shortens every stage (tests; the figures use 1)
};

// One stage of one run: measured and predicted percentiles (seconds). TPOT is the time between
// a request's output tokens: the harness (inference-perf v0.2.0) stamped two stream events per
// token, so its reported TPOT percentiles are half of it and are doubled here.
struct VllmRunStage {
  std::string run_id, model, stage;
  std::int64_t tp = 1;
  double rate_per_s = 0.0;
  std::string skip;  // why it is not compared ("" = compared)
  struct Pair {
    const char* metric;  // ttft_p50 ...
    double measured = 0.0, predicted = 0.0;
    double error() const { return measured > 0.0 ? (predicted - measured) / measured : 0.0; }
  };
  std::vector<Pair> pairs;  // ttft_p50, ttft_p90, tpot_p50, tpot_p90, e2e_p50, e2e_p90, in this order
  // The simulation ran for more than the stage and its slowest measured request together: its
  // queue grew for the whole stage (servesim's capacity below the offered rate).
  bool predicted_saturated = false;
  bool measured_saturated = false;  // the real server's TTFT p50 over 10 s: its queue grew too
  double drain_s = 0.0;            // simulated end minus stage end
};

std::vector<VllmRunStage> validate_vllm_runs(const nlohmann::json& doc, const std::string& file, const VllmRunsOptions& options);

// The one number fitted to these runs: the front end's latency per request
// (host.frontend_latency_s), the median over `stages` (compared, the real server not saturated,
// model != exclude_model) of measured TTFT p50 minus the prediction without it. `used_s` is the
// latency the stages were simulated with. A constant front-end delay shifts TTFT and E2E by
// exactly itself (every arrival moves by it; tests/validation checks this), so no rerun is needed.
double fit_frontend_latency(const std::vector<VllmRunStage>& stages, double used_s, const std::string& exclude_model = "");

// The front-end latency the runs are simulated with (the options' engine profile's).
double used_frontend_latency(const VllmRunsOptions& options);

// Leave-one-model-out: each model's stages with the front-end latency fitted to the other models'.
std::vector<VllmRunStage> leave_one_model_out(const std::vector<VllmRunStage>& stages, double used_s);

// The scenario one stage replays (exposed for `servesim validate --rows` and the tests).
Scenario vllm_run_scenario(const nlohmann::json& run, const nlohmann::json& stage, const std::string& file,
                           const VllmRunsOptions& options);

// The bands plan shows for the engine on H100 (error_bands.json): one per metric (ttft-p50 ...),
// from the leave-one-model-out errors of the stages compared.
std::vector<ErrorBand> vllm_runs_error_bands(const std::vector<VllmRunStage>& lomo, const std::string& engine);

std::string default_vllm_runs_file();

}  // namespace servesim
