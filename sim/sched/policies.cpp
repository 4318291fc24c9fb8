// The one place where batch scheduling policies are registered by name (see batch_scheduler.hpp).
#include <stdexcept>

#include "sim/config/scenario_keys.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "sim/sched/chunked_prefill.hpp"
#include "sim/sched/continuous.hpp"
#include "sim/sched/run_to_completion.hpp"
#include "sim/sched/token_level.hpp"

namespace servesim {

bool has_name(const std::vector<PolicyInfo>& infos, const std::string& name) {
  for (const auto& i : infos) {
    if (i.name == name) return true;
  }
  return false;
}

std::string names_of(const std::vector<PolicyInfo>& infos) {
  std::string names;
  for (const auto& i : infos) names += (names.empty() ? "" : ", ") + i.name;
  return names;
}

std::unique_ptr<BatchScheduler> make_scheduler(const SchedulerConfig& config) {
  if (config.impl == "continuous") return std::make_unique<ContinuousScheduler>();
  if (config.impl == "static") return std::make_unique<RunToCompletionScheduler>(RunToCompletionScheduler::Mode::static_padded, config);
  if (config.impl == "dynamic") return std::make_unique<RunToCompletionScheduler>(RunToCompletionScheduler::Mode::dynamic, config);
  if (config.impl == "chunked-prefill") return std::make_unique<ChunkedPrefillScheduler>(config, true);
  if (config.impl == "inflight") return std::make_unique<ChunkedPrefillScheduler>(config, false);
  if (config.impl == "token-level") return std::make_unique<TokenLevelScheduler>(config);
  throw std::logic_error("unknown scheduler " + config.impl);  // the parser rejects unknown names first
}

PolicyParam policy_param(const std::string& key) {
  const ScenarioKey* k = find_scenario_key(key);
  if (!k) throw std::logic_error("policy parameter " + key + " is not a declared scenario key");
  return {k->path, k->choices.empty() ? key_type_name(k->type) : k->choices, k->default_text, k->help};
}

std::vector<PolicyInfo> list_policies() {
  // The keys a policy reads are declared in config/scenario_keys.cpp (type, default, help): its
  // own settings (declared for its impl), then the engine keys every policy reads.
  const auto params = [](const std::string& policy) {
    std::vector<PolicyParam> out;
    for (const ScenarioKey* k : keys_in("engine.scheduler")) {
      if (k->when == policy) out.push_back(policy_param(k->path));
    }
    for (const char* key : {"engine.max_num_seqs", "engine.max_num_batched_tokens", "engine.block_size", "engine.gpu_memory_utilization",
                            "engine.watermark_frac", "engine.kv_reservation", "engine.enable_prefix_caching", "engine.preemption_mode",
                            "engine.swap_space_bytes", "engine.scheduler.scheduling_policy", "engine.scheduler.max_queue_size",
                            "engine.scheduler.max_waiting_time_s"}) {
      out.push_back(policy_param(key));
    }
    return out;
  };
  return {
      {"static",
       "static batching: a fixed batch of batch_size rows starts when full or when the oldest request has waited "
       "batch_timeout_s; prompts are padded to the longest, rows decode until the longest output is done "
       "(finished and empty rows compute padding); nothing joins a running batch",
       params("static")},
      {"dynamic",
       "Triton-style dynamic batching: a batch of up to max_batch_size requests forms when full or when the oldest "
       "has waited max_queue_delay_s, then runs to completion without padding (finished rows leave)",
       params("dynamic")},
      {"continuous",
       "vLLM-style continuous batching: admit waiting prompts while limits and free KV blocks allow; "
       "prefill-prioritised iterations; preemption of the youngest when blocks run out",
       params("continuous")},
      {"chunked-prefill",
       "Sarathi / vLLM v1 chunked prefill: one token budget (max_num_batched_tokens) per iteration, decodes first, "
       "then running prompts' chunks, then new prompts' chunks fill the rest",
       params("chunked-prefill")},
      {"inflight",
       "TensorRT-LLM in-flight batching without context chunking: every iteration runs all decodes, then whole "
       "waiting prompts in queue order while max_num_batched_tokens and max_num_seqs allow (a prompt that does not "
       "fit waits; one longer than max_num_batched_tokens is rejected)",
       params("inflight")},
      {"token-level",
       "LightLLM-style: admit a prompt only if the KV tokens of all running requests, each grown to its estimated "
       "final length, never exceed capacity at any future step; prefill-prioritised like continuous",
       params("token-level")},
  };
}

}  // namespace servesim
