// ReplicaState helpers and the one place where scheduling policies are registered by name.
#include "sim/sched/scheduler.hpp"

#include <stdexcept>

#include "sim/sched/continuous.hpp"

namespace servesim {

ReplicaState::ReplicaState(const EngineConfig& cfg, std::int64_t kv_capacity_blocks, std::vector<Request>& table)
    : config(cfg), kv(kv_capacity_blocks, cfg.block_size), requests(table) {}

std::uint32_t ReplicaState::take_slot() {
  if (free_slots.empty()) return slots_created++;
  const std::uint32_t s = free_slots.back();
  free_slots.pop_back();
  return s;
}

void ReplicaState::release(const Sequence& seq) {
  kv.free(seq.slot);
  free_slots.push_back(seq.slot);
}

void ReplicaState::preempt_to_waiting_front(Sequence seq) {
  release(seq);
  Request& r = requests[seq.request];
  r.state = RequestState::waiting;
  r.preemptions += 1;
  preemptions += 1;
  preempted_ids.push_back(seq.request);
  recomputed_tokens += seq.computed_tokens;
  // Recompute: the prompt and every token generated so far are prefilled again.
  seq.target_tokens = r.prompt_tokens + r.generated_tokens;
  seq.computed_tokens = 0;
  waiting.push_front(seq);
}

std::unique_ptr<BatchScheduler> make_scheduler(const SchedulerConfig& config) {
  if (config.impl == "continuous") return std::make_unique<ContinuousScheduler>();
  throw std::logic_error("unknown scheduler " + config.impl);  // the parser rejects unknown names first
}

std::vector<PolicyInfo> list_policies() {
  return {
      {"continuous",
       "vLLM-style continuous batching: admit waiting prompts FCFS while limits and free KV blocks allow; "
       "prefill-prioritised iterations; preemption by recompute when blocks run out",
       {{"engine.max_num_seqs", "integer", "256", "most sequences in one iteration"},
        {"engine.max_num_batched_tokens", "integer", "max(max_model_len, 2048)", "most tokens in one iteration"},
        {"engine.block_size", "integer", "16", "tokens per KV block"},
        {"engine.gpu_memory_utilization", "number", "0.9", "fraction of GPU memory for weights, activations and KV"},
        {"engine.watermark_frac", "number", "0.01", "KV blocks kept free when admitting prompts"}}},
  };
}

}  // namespace servesim
