// vLLM V1 runs replayed as scenarios: see vllm_runs.hpp.
#include "sim/validate/vllm_runs.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include <tbb/parallel_for.h>

#include "sim/core/median.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/simulation.hpp"

namespace servesim {

namespace {

// Hugging Face ids of the runs -> bundled cards (bundled_model_for: Mixtral's card is the Instruct
// release, the same architecture as the base model the runs served).
std::string card_for(const std::string& model_id, const std::string& file, const std::string& where) {
  const std::string card = bundled_model_for(model_id);
  if (card.empty()) throw InputError(file, where + ".model_id", "no bundled card for '" + model_id + "'");
  return card;
}

double stat(const nlohmann::json& stage, const char* metric, const char* which) { return stage.at(metric).at(which).get<double>(); }

}  // namespace

// The load one stage sent: inference-perf's shared_prefix data (num_groups system prompts of
// system_prompt_len random tokens, num_prompts_per_group questions of question_len random tokens
// each, the 100 prompts shuffled once and sent in that order again and again; every request asks
// for output_len tokens with ignore_eos) at a constant rate for the stage's duration. The prompts
// were random token ids decoded to text, so the server's token counts are the measured prompt
// lengths (the client counted them with the same tokenizer, BOS included), not the configured
// ones: the question lengths follow the measured distribution, and the prefix keeps its share of
// the measured mean.
Scenario vllm_run_scenario(const nlohmann::json& run, const nlohmann::json& stage, const std::string& file,
                           const VllmRunsOptions& options) {
  const std::string where = "runs[" + run.at("id").get<std::string>() + "]";
  const nlohmann::json& g = run.at("load_generator");
  const nlohmann::json& len = stage.at("prompt_len");
  const double mean = len.at("mean").get<double>();
  const double configured = g.at("system_prompt_len").get<double>() + g.at("question_len").get<double>();
  const auto prefix = static_cast<std::int64_t>(std::lround(1.0 + g.at("system_prompt_len").get<double>() * (mean - 1.0) / configured));
  const double spread = std::max(1.0, (len.at("p90").get<double>() - len.at("p10").get<double>()) / 2.5631);
  nlohmann::json doc = {
      {"name", run.at("id").get<std::string>()},
      {"seed", 1},
      {"model", card_for(run.at("model_id").get<std::string>(), file, where)},
      {"hardware", "h100-sxm"},
      {"dtype", "bf16"},
      {"parallel", {{"tensor_parallel_size", run.at("tensor_parallel_size")}}},
      {"engine",
       {{"profile", options.profile},
        {"max_model_len", run.at("max_model_len")},
        {"max_num_batched_tokens", run.at("max_num_batched_tokens")},
        {"max_num_seqs", run.at("max_num_seqs")},
        // V1 always chunks prefills; the key lets an older profile replay the same runs.
        {"scheduler", {{"impl", "chunked-prefill"}}}}},
      {"workload",
       {{"duration_s", stage.at("duration_s").get<double>() * options.time_scale},
        {"arrival", {{"impl", "constant"}, {"rate_per_s", stage.at("rate_per_s")}}},
        {"prompt_tokens",
         {{"impl", "normal"},
          {"mean_tokens", mean - static_cast<double>(prefix)},
          {"stddev_tokens", spread},
          {"min_tokens", len.at("min").get<std::int64_t>() - prefix},
          {"max_tokens", len.at("max").get<std::int64_t>() - prefix}}},
        {"output_tokens", {{"impl", "fixed"}, {"value_tokens", g.at("output_len")}}},
        {"shared_prefix",
         {{"num_prefixes", g.at("num_groups")}, {"prefix_tokens", prefix}, {"prompts_per_prefix", g.at("num_prompts_per_group")}}}}}};
  return parse_scenario(doc, file + ": " + where);
}

std::vector<VllmRunStage> validate_vllm_runs(const nlohmann::json& doc, const std::string& file, const VllmRunsOptions& options) {
  if (!doc.is_object() || doc.value("schema", "") != "servesim-vllm-runs/1") {
    throw InputError(file, "schema", "must be servesim-vllm-runs/1");
  }
  if (!doc.contains("runs") || !doc["runs"].is_array()) throw InputError(file, "runs", "missing array");
  std::vector<VllmRunStage> out;
  std::vector<std::optional<Scenario>> scenarios;
  std::vector<double> stage_s, slowest_s;
  for (const nlohmann::json& run : doc["runs"]) {
    const std::string id = run.at("id").get<std::string>();
    if (!options.only.empty() && id.find(options.only) == std::string::npos) continue;
    double successes = 0.0, failures = 0.0;
    for (const nlohmann::json& st : run.at("stages")) {
      successes += st.at("successes").get<double>();
      failures += st.at("failures").get<double>();
    }
    const bool overloaded = failures > options.max_failure_frac * (successes + failures);
    const nlohmann::json& stages = run.at("stages");
    for (std::size_t k = 0; k < stages.size(); ++k) {
      const nlohmann::json& st = stages[k];
      VllmRunStage r;
      r.run_id = id;
      r.model = card_for(run.at("model_id").get<std::string>(), file, "runs[" + id + "]");
      r.stage = std::to_string(k);
      r.tp = run.at("tensor_parallel_size").get<std::int64_t>();
      r.rate_per_s = st.at("rate_per_s").get<double>();
      r.measured_saturated = stat(st, "ttft_s", "median") > 10.0;
      if (overloaded) {
        char why[96];
        std::snprintf(why, sizeof why, "overloaded: %.0f%% of requests failed", 100.0 * failures / (successes + failures));
        r.skip = why;
      }
      r.pairs = {{"ttft_p50", stat(st, "ttft_s", "median")}, {"ttft_p90", stat(st, "ttft_s", "p90")},
                 {"tpot_p50", 2.0 * stat(st, "tpot_reported_s", "median")}, {"tpot_p90", 2.0 * stat(st, "tpot_reported_s", "p90")},
                 {"e2e_p50", stat(st, "e2e_s", "median")}, {"e2e_p90", stat(st, "e2e_s", "p90")}};
      scenarios.push_back(r.skip.empty() ? std::optional<Scenario>(vllm_run_scenario(run, st, file, options)) : std::nullopt);
      stage_s.push_back(st.at("duration_s").get<double>() * options.time_scale);
      slowest_s.push_back(stat(st, "e2e_s", "p99"));
      out.push_back(std::move(r));
    }
  }
  tbb::parallel_for(std::size_t{0}, out.size(), [&](std::size_t i) {
    if (!scenarios[i]) return;
    const SimResult res = simulate(*scenarios[i]);
    const RunMetrics& m = res.metrics;
    VllmRunStage& r = out[i];
    const double q[] = {0.5, 0.9};
    for (int j = 0; j < 2; ++j) {
      r.pairs[j].predicted = m.ttft_s.quantile(q[j]);
      r.pairs[2 + j].predicted = m.tpot_s.quantile(q[j]);
      r.pairs[4 + j].predicted = m.e2e_s.quantile(q[j]);
    }
    r.drain_s = ns_to_seconds(m.end_ns) - stage_s[i];
    r.predicted_saturated = r.drain_s > std::max(30.0, 5.0 * slowest_s[i]);
  });
  return out;
}

double fit_frontend_latency(const std::vector<VllmRunStage>& stages, double used_s, const std::string& exclude_model) {
  std::vector<double> residuals;
  for (const VllmRunStage& s : stages) {
    if (!s.skip.empty() || s.measured_saturated || s.model == exclude_model) continue;
    residuals.push_back(s.pairs[0].measured - (s.pairs[0].predicted - used_s));
  }
  return residuals.empty() ? used_s : std::max(0.0, median(residuals));
}

std::vector<VllmRunStage> leave_one_model_out(const std::vector<VllmRunStage>& stages, double used_s) {
  std::vector<VllmRunStage> out = stages;
  for (VllmRunStage& s : out) {
    if (!s.skip.empty()) continue;
    const double shift = fit_frontend_latency(stages, used_s, s.model) - used_s;
    for (int j : {0, 1, 4, 5}) s.pairs[j].predicted += shift;  // TTFT and E2E; TPOT (2, 3) does not move
  }
  return out;
}

std::vector<ErrorBand> vllm_runs_error_bands(const std::vector<VllmRunStage>& lomo, const std::string& engine) {
  std::vector<ErrorBand> out;
  for (std::size_t j = 0; j < 6; ++j) {
    std::vector<double> errors;
    for (const VllmRunStage& s : lomo) {
      if (s.skip.empty()) errors.push_back(std::abs(s.pairs[j].error()));
    }
    if (errors.empty()) continue;
    ErrorBand b;
    b.hw = "h100-sxm";
    b.engine = engine;
    b.phase = lomo.front().pairs[j].metric;
    b.phase[b.phase.find('_')] = '-';
    b.n = errors.size();
    b.median_abs = median(errors);
    b.worst_abs = *std::max_element(errors.begin(), errors.end());
    b.source = "real vLLM 0.15.1 serving runs on H100 (data/validation/vllm_v1_runs.json, inference-sim/training), each model scored "
               "with the front-end latency fitted to the other models: development data, not held out";
    out.push_back(std::move(b));
  }
  return out;
}

double used_frontend_latency(const VllmRunsOptions& options) {
  return load_engine_profile(options.profile, "vllm runs", "--profile").frontend_latency_s;
}

std::string default_vllm_runs_file() {
  return (std::filesystem::path(data_dir()) / "data" / "validation" / "vllm_v1_runs.json").string();
}

}  // namespace servesim
