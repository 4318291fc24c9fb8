// Replica iteration cycle: schedule -> cost model -> commit.
#include "sim/serve/replica.hpp"

#include <algorithm>

namespace servesim {

Replica::Replica(const Scenario& scenario, std::int64_t kv_blocks, std::vector<Request>& requests, RunMetrics& metrics)
    : scenario_(scenario),
      state_(scenario.engine, kv_blocks, requests),
      scheduler_(make_scheduler(scenario.engine.scheduler)),
      metrics_(metrics) {
  metrics_.kv_capacity_blocks += kv_blocks;
}

void Replica::enqueue(std::uint32_t request_index, TimeNs /*now*/) {
  const Request& r = state_.requests[request_index];
  Sequence seq;
  seq.request = request_index;
  seq.target_tokens = r.prompt_tokens;
  state_.waiting.push_back(seq);
}

void Replica::note_kv_usage(TimeNs now) {
  metrics_.kv_used_block_seconds += static_cast<double>(kv_used_) * ns_to_seconds(now - kv_since_ns_);
  kv_since_ns_ = now;
  kv_used_ = state_.kv.used_blocks();
  metrics_.kv_peak_used_blocks = std::max(metrics_.kv_peak_used_blocks, kv_used_);
}

void Replica::expire(TimeNs now) {
  // A client that gave up is gone from the engine: waiting or running, its blocks are freed.
  // Checked at iteration boundaries (the engine notices an abort between steps, as vLLM does).
  const double timeout_s = scenario_.workload.request_timeout_s;
  if (timeout_s <= 0.0) return;
  const TimeNs timeout_ns = seconds_to_ns(timeout_s);
  auto expired = [&](const Sequence& seq) { return now - state_.requests[seq.request].arrival_ns >= timeout_ns; };
  auto drop = [&](const Sequence& seq) {
    Request& r = state_.requests[seq.request];
    r.state = RequestState::timed_out;
    metrics_.timed_out += 1;
    metrics_.classes[r.cls].timed_out += 1;
  };
  std::erase_if(state_.waiting, [&](const Sequence& seq) {
    if (!expired(seq)) return false;
    drop(seq);
    return true;
  });
  std::erase_if(state_.running, [&](const Sequence& seq) {
    if (!expired(seq)) return false;
    state_.release(seq);
    drop(seq);
    return true;
  });
}

std::optional<TimeNs> Replica::start_iteration(TimeNs now) {
  if (busy_) return std::nullopt;
  expire(now);
  plan_.clear();
  const std::int64_t preemptions_before = state_.preemptions;
  scheduler_->schedule(state_, plan_);
  metrics_.preemptions += state_.preemptions - preemptions_before;
  note_kv_usage(now);
  if (plan_.items.empty()) return std::nullopt;

  build_iteration_ops(scenario_.model, plan_.shape, scenario_.precision, ops_);
  // CUDA graphs are captured for decode only (vLLM); prefill iterations launch kernels eagerly.
  LaunchConfig launch = scenario_.engine.launch;
  if (plan_.shape.prefill_seqs > 0) launch.cuda_graphs = false;
  const StepTime step = estimate_step(ops_, scenario_.hw, scenario_.precision.weights, launch, plan_.shape.total_seqs());

  const auto seqs = static_cast<std::int64_t>(plan_.items.size());
  metrics_.iterations += 1;
  if (plan_.shape.prefill_seqs > 0) metrics_.prefill_iterations += 1;
  if (step.launch_bound) metrics_.launch_bound_iterations += 1;
  metrics_.batch_seqs_sum += static_cast<double>(seqs);
  metrics_.max_batch_seqs = std::max(metrics_.max_batch_seqs, seqs);
  metrics_.busy_s += step.time_s;
  metrics_.gpu_s += step.gpu_s;
  metrics_.bytes_moved += step.bytes;
  busy_ = true;
  // At least 1 ns so time always advances.
  return std::max<TimeNs>(1, seconds_to_ns(step.time_s));
}

void Replica::emit_token(Request& r, TimeNs now) {
  r.generated_tokens += 1;
  if (r.first_token_ns < 0) {
    r.first_token_ns = now;
    metrics_.ttft_s.add(ns_to_seconds(now - r.arrival_ns));
  } else {
    metrics_.itl_s.add(ns_to_seconds(now - r.last_token_ns));
  }
  r.last_token_ns = now;
}

void Replica::record_class(const Request& r, double ttft_s, double tpot_s, double e2e_s) {
  ClassMetrics& c = metrics_.classes[r.cls];
  const SloConfig& slo = scenario_.workload.classes[r.cls].slo;
  c.completed += 1;
  c.output_tokens += r.output_tokens;
  c.ttft_s.add(ttft_s);
  c.e2e_s.add(e2e_s);
  if (r.output_tokens > 1) c.tpot_s.add(tpot_s);
  const bool met = (slo.ttft_s <= 0.0 || ttft_s <= slo.ttft_s) && (slo.tpot_s <= 0.0 || tpot_s <= slo.tpot_s) &&
                   (slo.e2e_s <= 0.0 || e2e_s <= slo.e2e_s);
  if (met) c.slo_met += 1;
}

void Replica::finish_iteration(TimeNs now) {
  busy_ = false;
  auto& running = state_.running;
  for (const PlannedItem& item : plan_.items) {
    Sequence& seq = running[item.running_index];
    seq.computed_tokens += item.new_tokens;
    if (seq.prefilled()) emit_token(state_.requests[seq.request], now);
  }
  // Stable compaction: finished sequences leave, the rest keep admission order.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < running.size(); ++i) {
    Request& r = state_.requests[running[i].request];
    if (r.generated_tokens >= r.output_tokens) {
      r.state = RequestState::completed;
      state_.release(running[i]);
      metrics_.completed += 1;
      metrics_.prompt_tokens += r.prompt_tokens;
      metrics_.output_tokens += r.output_tokens;
      if (r.preemptions > 0) metrics_.preempted_requests += 1;
      const double e2e = ns_to_seconds(now - r.arrival_ns);
      metrics_.e2e_s.add(e2e);
      const double ttft = ns_to_seconds(r.first_token_ns - r.arrival_ns);
      double tpot = 0.0;
      if (r.output_tokens > 1) {
        tpot = ns_to_seconds(now - r.first_token_ns) / static_cast<double>(r.output_tokens - 1);
        metrics_.tpot_s.add(tpot);
      }
      record_class(r, ttft, tpot, e2e);
    } else {
      running[kept++] = running[i];
    }
  }
  running.resize(kept);
  metrics_.recomputed_tokens = state_.recomputed_tokens;
  note_kv_usage(now);
}

}  // namespace servesim
