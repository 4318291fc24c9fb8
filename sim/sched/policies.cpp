// The registry of batch scheduling policies: one entry per policy (see batch_scheduler.hpp). A new
// policy is its own files beside this one, one entry here and its test.
#include <stdexcept>
#include <utility>

#include "sim/config/scenario_keys.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "sim/sched/chunked_prefill.hpp"
#include "sim/sched/continuous.hpp"
#include "sim/sched/run_to_completion.hpp"
#include "sim/sched/token_level.hpp"

namespace servesim {

namespace {

// The engine keys every policy reads, listed after a policy's own settings.
const char* const kCommonKeys[] = {"engine.max_num_seqs", "engine.max_num_batched_tokens", "engine.block_size",
                                   "engine.gpu_memory_utilization", "engine.watermark_frac", "engine.kv_reservation",
                                   "engine.enable_prefix_caching", "engine.preemption_mode", "engine.swap_space_bytes",
                                   "engine.scheduler.scheduling_policy", "engine.scheduler.max_queue_size",
                                   "engine.scheduler.max_waiting_time_s"};

// An entry: `settings` are the engine.scheduler keys only this policy reads (declared in
// config/scenario_keys.cpp with their type, range, default and help).
PolicyEntry policy(std::string name, std::string description, std::vector<std::string> settings,
                   std::unique_ptr<BatchScheduler> (*make)(const SchedulerConfig&)) {
  PolicyEntry e;
  e.name = std::move(name);
  e.description = std::move(description);
  for (const std::string& s : settings) {
    e.own_keys.push_back("engine.scheduler." + s);
    e.params.push_back(key_param(e.own_keys.back()));
  }
  for (const char* key : kCommonKeys) e.params.push_back(key_param(key));
  e.make = make;
  return e;
}

std::vector<PolicyEntry> build() {
  return {
      policy("static",
             "static batching: a fixed batch of batch_size rows starts when full or when the oldest request has waited "
             "batch_timeout_s; prompts are padded to the longest, rows decode until the longest output is done "
             "(finished and empty rows compute padding); nothing joins a running batch",
             {"batch_size", "batch_timeout_s"},
             [](const SchedulerConfig& c) -> std::unique_ptr<BatchScheduler> {
               return std::make_unique<RunToCompletionScheduler>(RunToCompletionScheduler::Mode::static_padded, c);
             }),
      policy("dynamic",
             "Triton-style dynamic batching: a batch of up to max_batch_size requests forms when full or when the oldest "
             "has waited max_queue_delay_s, then runs to completion without padding (finished rows leave)",
             {"max_batch_size", "max_queue_delay_s"},
             [](const SchedulerConfig& c) -> std::unique_ptr<BatchScheduler> {
               return std::make_unique<RunToCompletionScheduler>(RunToCompletionScheduler::Mode::dynamic, c);
             }),
      policy("continuous",
             "vLLM-style continuous batching: admit waiting prompts while limits and free KV blocks allow; "
             "prefill-prioritised iterations; preemption of the youngest when blocks run out",
             {}, [](const SchedulerConfig&) -> std::unique_ptr<BatchScheduler> { return std::make_unique<ContinuousScheduler>(); }),
      policy("chunked-prefill",
             "Sarathi / vLLM v1 chunked prefill: one token budget (max_num_batched_tokens) per iteration, decodes first, "
             "then running prompts' chunks, then new prompts' chunks fill the rest",
             {"long_prefill_token_threshold"},
             [](const SchedulerConfig& c) -> std::unique_ptr<BatchScheduler> { return std::make_unique<ChunkedPrefillScheduler>(c, true); }),
      policy("inflight",
             "TensorRT-LLM in-flight batching without context chunking: every iteration runs all decodes, then whole "
             "waiting prompts in queue order while max_num_batched_tokens and max_num_seqs allow (a prompt that does not "
             "fit waits; one longer than max_num_batched_tokens is rejected)",
             {}, [](const SchedulerConfig& c) -> std::unique_ptr<BatchScheduler> { return std::make_unique<ChunkedPrefillScheduler>(c, false); }),
      policy("token-level",
             "LightLLM-style: admit a prompt only if the KV tokens of all running requests, each grown to its estimated "
             "final length, never exceed capacity at any future step; prefill-prioritised like continuous",
             {"expected_output_tokens"},
             [](const SchedulerConfig& c) -> std::unique_ptr<BatchScheduler> { return std::make_unique<TokenLevelScheduler>(c); }),
  };
}

}  // namespace

const Registry<PolicyEntry>& scheduler_policies() {
  static const Registry<PolicyEntry> registry("scheduler", build());
  return registry;
}

std::unique_ptr<BatchScheduler> make_scheduler(const SchedulerConfig& config) {
  const PolicyEntry* e = scheduler_policies().find(config.impl);
  if (!e) throw std::logic_error(scheduler_policies().unknown(config.impl));  // the parser rejects unknown names first
  return e->make(config);
}

std::string policies_with(bool (BatchScheduler::*trait)() const) {
  std::vector<std::string> names;
  for (const PolicyEntry& e : scheduler_policies()) {
    SchedulerConfig defaults;
    defaults.impl = e.name;
    if ((*e.make(defaults).*trait)()) names.push_back(e.name);
  }
  return join_names(names);
}

bool policy_reads(const std::string& impl, const std::string& path) {
  if (scheduler_policies().readers_of(path).empty()) return true;  // a setting every policy reads
  const PolicyEntry* e = scheduler_policies().find(impl);
  return e && e->owns(path);
}

}  // namespace servesim
