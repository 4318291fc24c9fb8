// Continuous batching as vLLM (v0 scheduler, chunked prefill off) does it: waiting prompts are
// admitted in queue order while max_num_seqs, max_num_batched_tokens and free KV blocks (above a
// watermark) allow, and an iteration with new prompts runs only those prompts (prefill-
// prioritised). Otherwise every running sequence decodes one token; when a block cannot be found
// the youngest running sequence is preempted (recompute or swap). While sequences are swapped out
// no new prompt is admitted, and they come back in a step that preempts nothing (as vLLM).
//
// Multi-step scheduling (engine.num_scheduler_steps = K > 1; vLLM 0.5.5-0.6.x
// --num-scheduler-steps, RFC vllm-project/vllm#6854, PR #7000). What vLLM's V0 engine does, read
// in vllm-project/vllm (stored versions of the files: vllm/engine/llm_engine.py @1473f741,
// vllm/core/scheduler.py @0dce2b29, vllm/worker/multi_step_model_runner.py @047281df,
// vllm/engine/arg_utils.py; later V0 than 0.6.0 -- they add multi-step with chunked prefill,
// which 0.6.0 refused -- but the parts below are those of PR #7000):
//  (a) LLMEngine.step() calls scheduler.schedule() only when the cached batch has no remaining
//      steps (_has_remaining_steps: every sequence group's state.remaining_steps, set by
//      init_multi_step(num_steps = num_lookahead_slots + 1)); otherwise it re-runs the cached
//      schedule. So prompts are admitted once per window: one that arrives mid-window waits for
//      its end.
//  (b) A prefill is one step: Scheduler._get_num_lookahead_slots(is_prefill) returns 0 for a
//      prefill (chunking off), and step() caches the schedule for more steps only when
//      scheduler_outputs.num_lookahead_slots > 0. A decode batch gets num_lookahead_slots =
//      num_scheduler_steps - 1 (arg_utils create_engine_config: max(num_lookahead_slots,
//      num_scheduler_steps - 1)), i.e. K steps. As in single-step V0, a step with prompts runs
//      only prompts.
//  (c) Outputs reach the client at the window's end: step() returns ctx.request_outputs without
//      processing while steps remain ("Multi-step case"), and appends the outputs to the output
//      queue (is_last_step=True) only after the last one; the model runner returns the
//      pythonized outputs of all K steps at its last step (_final_process_outputs). So the K
//      tokens of a window arrive together, at its end: TTFT of a prefill step is its end, later
//      tokens come in bursts of K.
//  (d) A sequence that finishes mid-window (EOS or max_tokens) is found only when the window's
//      outputs are processed (the output processor stops appending at its stop token); the
//      batch's cached metadata, and so every GPU step of the window, still includes it, and its
//      blocks are freed at the window's end.
//  (e) KV: at the window's start each decoding sequence gets 1 + num_lookahead_slots = K slots
//      (_append_slots -> block_manager.append_slots(seq, num_lookahead_slots); can_append_slots
//      checks the same, so preemption makes room for all K).
// Here a decode window is one iteration of K priced steps (IterationPlan::decode_steps): every
// running sequence costs K steps, its tokens (up to its output length) are committed at the
// window's end. vLLM 0.6.0's async output processing (_allow_async_output_proc: the CPU
// processes a window's outputs while the next one runs) and the per-step host work saved by not
// scheduling are not modelled: each step is priced as a single-step decode step.
#include "sim/sched/continuous.hpp"

namespace servesim {

void ContinuousScheduler::schedule(ReplicaState& st, IterationPlan& plan) {
  const EngineConfig& cfg = st.config;
  st.drop_expired();

  // 1. Prefill: admit waiting prompts.
  if (st.swapped.empty()) {
    std::int64_t budget = cfg.max_num_batched_tokens;
    while (!st.waiting.empty()) {
      const Sequence& head = st.waiting.front();
      const PrefixProbe probe = st.probe_prefix(head);
      const std::int64_t tokens = head.target_tokens - probe.hit_blocks * st.kv.block_size_tokens();
      if (!head_fits(st, head, probe, tokens, budget) || !admit_ok(st, head)) break;
      const std::size_t index = st.admit_front(probe, tokens);
      plan.add_prefill(index, tokens, st.running[index]);
      budget -= tokens;
    }
    if (!plan.items.empty()) return;
  }

  // 2. Decode: each running sequence appends one token, oldest first; under multi-step, K
  // tokens in one window.
  if (cfg.num_scheduler_steps > 1) {
    st.decode_window(plan, cfg.num_scheduler_steps);
  } else {
    st.decode_all(plan);
  }
}

bool ContinuousScheduler::head_fits(const ReplicaState& st, const Sequence& head, const PrefixProbe& probe,
                                    std::int64_t tokens, std::int64_t budget) {
  return tokens <= budget && static_cast<std::int64_t>(st.running.size()) < st.config.max_num_seqs &&
         st.fits_with_watermark(st.admission_blocks(head, probe, tokens));
}

bool ContinuousScheduler::decodes_only(const ReplicaState& st) const {
  // Multi-step windows are planned and committed per window (decode_window), not by quiet runs.
  if (st.config.num_scheduler_steps > 1) return false;
  if (!st.swapped.empty()) return false;
  if (st.waiting.empty()) return true;
  if (st.config.scheduler.max_waiting_time_s > 0.0) return false;
  // schedule()'s first admission test, which fails alike at every step of the run.
  const Sequence& head = st.waiting.front();
  const PrefixProbe probe = st.probe_prefix(head);
  return !head_fits(st, head, probe, head.target_tokens - probe.hit_blocks * st.kv.block_size_tokens(),
                    st.config.max_num_batched_tokens);
}

}  // namespace servesim
