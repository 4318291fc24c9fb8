// The speculative step cost model; see speculative_step.hpp.
#include "sim/serve/speculative_step.hpp"

#include <utility>

#include "sim/model/speculative.hpp"
#include "sim/serve/parallel.hpp"

namespace servesim {

BatchShape speculative_verify_shape(const BatchShape& planned, std::int64_t k) {
  BatchShape v = planned;
  if (planned.decode_seqs == 0) return v;
  v.decode_query_tokens = k + 1;
  // The context the scheduler counted (each sequence's cache plus its one new token) grows by the k drafts.
  v.decode_kv_tokens += static_cast<double>(planned.decode_seqs * k);
  return v;
}

Scenario drafter_scenario(const Scenario& target) {
  Scenario d = target;
  const SpeculativeConfig& sp = target.engine.speculative;
  d.model = sp.drafter;
  d.precision = sp.precision(target.precision);
  d.engine.speculative = SpeculativeConfig{};
  return d;
}

namespace {

// Adds what `part` ran on the GPU to `into` (the step's counters, not its host work).
void add_gpu_work(StepTime& into, const StepTime& part) {
  into.time_s += part.time_s;
  into.gpu_s += part.gpu_s;
  into.launch_s += part.launch_s;
  into.launch_wait_s += part.launch_wait_s;
  into.roofline_s += part.roofline_s;
  into.bytes += part.bytes;
  into.flops += part.flops;
  into.comm_s += part.comm_s;
  into.kernels += part.kernels;
}

class SpeculativeStepCost final : public StepCostModel {
 public:
  SpeculativeStepCost(std::unique_ptr<StepCostModel> target, const Scenario& s, const ParallelConfig& parallel)
      : target_(std::move(target)),
        k_(s.engine.speculative.num_speculative_tokens),
        draft_(std::make_unique<Scenario>(drafter_scenario(s))),
        draft_parallel_(drafter_parallel(parallel)),
        timer_(*draft_, draft_parallel_),
        fc_cache_(s.hw, draft_->precision.weights),
        has_fc_(s.engine.speculative.shares_embeddings) {
    // Draft steps run inside the iteration the host already prepared: no host work of their own.
    LaunchConfig& l = draft_launch_;
    l = s.engine.launch;
    l.host_overhead_per_step_s = l.host_overhead_per_decode_step_s = l.host_overhead_per_seq_s = 0.0;
    l.host_overhead_per_step_per_tp_worker_s = 0.0;
    l.overlap_host = false;
  }

  StepTime step_time(const BatchShape& planned) override {
    StepTime t = target_->step_time(speculative_verify_shape(planned, k_));
    if (planned.decode_seqs == 0) {
      if (planned.prefill_tokens > 0) add_gpu_work(t, draft_step(planned));  // the drafter's own prefill
      return t;
    }
    BatchShape step;
    step.decode_seqs = planned.decode_seqs;
    for (std::int64_t j = 0; j < k_; ++j) {
      // Draft j reads the cache the scheduler counted plus the j drafts before it.
      step.decode_kv_tokens = planned.decode_kv_tokens + static_cast<double>(planned.decode_seqs * j);
      if (j == 0) {
        BatchShape first = planned;
        first.decode_kv_tokens = step.decode_kv_tokens;
        add_gpu_work(t, draft_step(first));
      } else {
        add_gpu_work(t, draft_step(step));
      }
    }
    return t;
  }

 private:
  static ParallelConfig drafter_parallel(ParallelConfig p) {
    p.pipeline_parallel_size = 1;  // the drafter sits on the last stage, whole
    p.num_micro_batches = 0;
    return p;
  }

  // One drafter forward pass of `shape`, graph-padded as the engine captures it, plus a head's fc.
  StepTime draft_step(const BatchShape& shape) {
    BatchShape padded = attention_dp_rank(shape, draft_parallel_);  // one attention-DP rank's drafts
    LaunchConfig launch = draft_launch_;
    apply_cuda_graphs(launch, draft_->engine.profile.cuda_graph_batch_sizes, padded, draft_->engine.profile.cuda_graph_mode);
    StepTime d = timer_.time(padded, launch, 0);
    if (has_fc_) {
      const Op fc = make_gemm_op("draft_fc", 1, padded.total_tokens(), draft_->model.hidden_size, 2 * draft_->model.hidden_size,
                                 Precision{draft_->precision.weights, draft_->precision.activations, draft_->precision.kv_cache});
      const KernelTime& ft = fc_cache_.get(fc);
      StepTime fc_step;
      fc_step.time_s = fc_step.gpu_s = ft.time_s;
      fc_step.roofline_s = ft.roofline_s;
      fc_step.bytes = ft.bytes;
      fc_step.flops = fc.flops;
      fc_step.kernels = ft.launches;
      add_gpu_work(d, fc_step);
    }
    return d;
  }

  std::unique_ptr<StepCostModel> target_;
  std::int64_t k_;
  std::unique_ptr<Scenario> draft_;  // owned here: timer_ keeps a reference
  ParallelConfig draft_parallel_;
  IterationTimer timer_;
  KernelTimeCache fc_cache_;
  bool has_fc_;
  LaunchConfig draft_launch_;
};

}  // namespace

std::unique_ptr<StepCostModel> make_speculative_step_cost(std::unique_ptr<StepCostModel> target, const Scenario& scenario,
                                                          const ParallelConfig& parallel) {
  return std::make_unique<SpeculativeStepCost>(std::move(target), scenario, parallel);
}

}  // namespace servesim
