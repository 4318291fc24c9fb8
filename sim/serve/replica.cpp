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

std::optional<TimeNs> Replica::start_iteration(TimeNs now) {
  if (busy_) return std::nullopt;
  plan_.clear();
  const std::int64_t preemptions_before = state_.preemptions;
  scheduler_->schedule(state_, plan_);
  metrics_.preemptions += state_.preemptions - preemptions_before;
  note_kv_usage(now);
  if (plan_.items.empty()) return std::nullopt;

  // CUDA graphs are captured for decode only (vLLM); prefill iterations launch kernels eagerly.
  // A decode batch runs in the graph of the next captured size (padded), or eagerly above them.
  const EngineConfig& engine = scenario_.engine;
  LaunchConfig launch = engine.launch;
  BatchShape shape = plan_.shape;
  if (shape.prefill_seqs > 0) {
    launch.cuda_graphs = false;
  } else if (launch.cuda_graphs) {
    const std::int64_t padded = graph_batch_size(engine.profile.cuda_graph_batch_sizes, shape.decode_seqs);
    if (padded == 0) launch.cuda_graphs = false;
    for (std::int64_t i = shape.decode_seqs; i < padded; ++i) shape.add_decode(0);
  }
  build_iteration_ops(scenario_.model, shape, scenario_.precision, ops_, engine.profile.kernels);
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
  metrics_.launch_wait_s += step.launch_wait_s;
  metrics_.kernels += step.kernels;
  metrics_.sampled_tokens += plan_.shape.sampled_seqs();
  metrics_.hbm_bw_util_frac.add(step.bytes / (step.time_s * scenario_.hw.hbm_bandwidth_bytes_per_s));
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
      if (r.output_tokens > 1) {
        metrics_.tpot_s.add(ns_to_seconds(now - r.first_token_ns) / static_cast<double>(r.output_tokens - 1));
      }
    } else {
      running[kept++] = running[i];
    }
  }
  running.resize(kept);
  metrics_.recomputed_tokens = state_.recomputed_tokens;
  note_kv_usage(now);
}

}  // namespace servesim
