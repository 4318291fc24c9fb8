// The one place where batch scheduling policies are registered by name (see batch_scheduler.hpp).
#include <stdexcept>

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

std::vector<PolicyInfo> list_policies() {
  const std::vector<PolicyParam> common = {
      {"engine.max_num_seqs", "integer", "256", "most sequences in one iteration"},
      {"engine.max_num_batched_tokens", "integer", "max(max_model_len, 2048)", "most tokens in one iteration"},
      {"engine.block_size", "integer", "16", "tokens per KV block"},
      {"engine.gpu_memory_utilization", "number", "0.9", "fraction of GPU memory for weights, activations and KV"},
      {"engine.watermark_frac", "number", "0.01", "KV blocks kept free when admitting prompts"},
      {"engine.kv_reservation", "paged|contiguous|token", "paged",
       "KV reservation: blocks on demand, max_model_len per sequence at admission, or one-token units"},
      {"engine.enable_prefix_caching", "boolean", "false", "share full blocks by chained content hash (paged only)"},
      {"engine.preemption_mode", "recompute|swap", "recompute", "what preemption does with a victim's KV"},
      {"engine.swap_space_bytes", "number", "4 GiB", "host memory for swapped KV (full: recompute instead)"},
      {"engine.scheduler.scheduling_policy", "fcfs|priority", "fcfs", "queue order: arrival, or priority class then arrival"},
      {"engine.scheduler.max_queue_size", "integer", "unbounded", "arrivals finding this many waiting are rejected"},
      {"engine.scheduler.max_waiting_time_s", "number", "none", "requests not started by then are dropped (rejected)"}};
  const auto with = [&](std::vector<PolicyParam> own) {
    own.insert(own.end(), common.begin(), common.end());
    return own;
  };
  return {
      {"static",
       "static batching: a fixed batch of batch_size rows starts when full or when the oldest request has waited "
       "batch_timeout_s; prompts are padded to the longest, rows decode until the longest output is done "
       "(finished and empty rows compute padding); nothing joins a running batch",
       with({{"engine.scheduler.batch_size", "integer", "8", "rows in every batch (<= max_num_seqs)"},
             {"engine.scheduler.batch_timeout_s", "number", "0.1", "longest wait for a full batch"}})},
      {"dynamic",
       "Triton-style dynamic batching: a batch of up to max_batch_size requests forms when full or when the oldest "
       "has waited max_queue_delay_s, then runs to completion without padding (finished rows leave)",
       with({{"engine.scheduler.max_batch_size", "integer", "8", "most requests in one batch (<= max_num_seqs)"},
             {"engine.scheduler.max_queue_delay_s", "number", "0.01", "batching window after the oldest arrival"}})},
      {"continuous",
       "vLLM-style continuous batching: admit waiting prompts while limits and free KV blocks allow; "
       "prefill-prioritised iterations; preemption of the youngest when blocks run out",
       with({})},
      {"chunked-prefill",
       "Sarathi / vLLM v1 chunked prefill: one token budget (max_num_batched_tokens) per iteration, decodes first, "
       "then running prompts' chunks, then new prompts' chunks fill the rest",
       with({{"engine.scheduler.long_prefill_token_threshold", "integer", "none", "largest chunk one prompt takes per iteration"}})},
      {"inflight",
       "TensorRT-LLM in-flight batching without context chunking: every iteration runs all decodes, then whole "
       "waiting prompts in queue order while max_num_batched_tokens and max_num_seqs allow (a prompt that does not "
       "fit waits; one longer than max_num_batched_tokens is rejected)",
       with({})},
      {"token-level",
       "LightLLM-style: admit a prompt only if the KV tokens of all running requests, each grown to its estimated "
       "final length, never exceed capacity at any future step; prefill-prioritised like continuous",
       with({{"engine.scheduler.expected_output_tokens", "integer", "512",
              "output length assumed per request at admission (LightLLM: max_new_tokens)"}})},
  };
}

}  // namespace servesim
