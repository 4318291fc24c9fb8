// Tensor- and pipeline-parallel iteration cost: one replica's iteration over tp x pp GPUs, the
// same model for `servesim step --tp/--pp` and for the simulator's replicas.
//  - TP: ops for one GPU's shard plus two all-reduces per layer (build_iteration_ops with tp).
//  - PP: layers split into pp stages (ceil(L/pp) on the largest; embedding on the first, LM head
//    on the last); the batch is split into m = min(num_micro_batches, sequences) micro-batches
//    that flow through the stages with activations sent stage to stage (send/recv). In steady
//    state (vLLM/TRT-LLM keep pp micro-batches in flight) every sequence advances one token per
//    max(m, pp) stage slots, so the iteration takes host + max(m, pp) x (stage time + send/recv)
//    and a fraction 1 - m / max(m, pp) of the stage slots is bubble. The stage time is the slower
//    end stage's ops for one micro-batch through the same launch queue as a tp-only step
//    (combine_step: eager launches or the graph launch, kernels, dependent-kernel gaps).
#pragma once
#include <string>
#include <memory>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/hw/cost_model.hpp"

namespace servesim {

// "" when (tp, pp) can run `model`, else why not: heads must split evenly over tp, KV heads must
// split evenly or be replicated evenly (vLLM's rules), and every stage needs at least one layer.
std::string parallel_config_error(const ModelSpec& model, std::int64_t tp, std::int64_t pp);
// "" when `ep` GPUs can split `model`'s routed experts (a mixture-of-experts model whose expert
// count ep divides), else why not. That ep divides tensor_parallel_size is checked where it is read.
std::string expert_parallel_error(const ModelSpec& model, std::int64_t ep);

// The link a pipeline stage boundary crosses for a replica of tp x pp GPUs packed onto nodes.
LinkScope pipeline_link(const HwProfile& hw, std::int64_t tp, std::int64_t pp);

// Attention data parallelism (ParallelConfig::enable_attention_dp): the busiest rank's share of
// the replica's batch `b`, which sets the step. Ranks are dealt sequences: the busiest holds
// attention_dp_rank_seqs of the prefilling and of the decoding sequences, with those sequences'
// share of the tokens and context sums (a prompt is prefilled whole by the rank holding its
// request). `b` itself without attention DP.
BatchShape attention_dp_rank(const BatchShape& b, const ParallelConfig& parallel);
// The sequences the busiest rank's host prepares a step for (of `seqs` in the replica's batch).
std::int64_t attention_dp_rank_seqs(std::int64_t seqs, const ParallelConfig& parallel);

// Wall time of one iteration of `shape` on one replica; `ops` receives the op list of one GPU
// (for pp > 1: one stage's ops for one micro-batch), reused across calls. `cache`, if given,
// must be for (hw, precision.weights). Under attention DP `shape` is one rank's
// (attention_dp_rank): the caller splits the batch.
StepTime estimate_iteration(const ModelSpec& model, const HwProfile& hw, const Precision& precision,
                            const KernelPlan& plan, const ParallelConfig& parallel, const BatchShape& shape, const LaunchConfig& launch,
                            std::int64_t batch_seqs, std::vector<Op>& ops, KernelTimeCache* cache = nullptr);

// The op-list memos of IterationTimer for one (scenario, parallel layout): a memo per shape
// class (token and sampled counts, prefill or decode present; see IterationTimer) holding the
// step's ops cut into pieces. A memo only saves work: a step priced through one is bit-identical
// to a step priced without it, whoever filled it, so the replicas of a fleet that price steps the
// same way share one set (StepCaches): memory stays that of one replica's memos (bounded near
// 30 MB) instead of growing with replicas and requests served, and a prompt length one replica
// priced is a hit for the others.
class IterationMemos {
 public:
  struct Memo {
    bool valid = false;
    BatchShape shape;   // what the pieces were last built or refreshed for
    StepPieces pieces;  // ops cut into summarised runs and context ops (combine_step's fold)
    // A decode-only class's steps priced from the KV tokens alone, where it applies: made with
    // the pieces (IterationTimer::time_with).
    DecodeStepForm decode_form;
  };
  // The memo for `shape`'s class. It stays where it is until the table of shapes with a prefill
  // grows (generation() changes then), which drops or moves that table's memos.
  Memo& memo_for(const BatchShape& shape);
  std::uint64_t generation() const { return generation_; }

 private:
  void grow_prefill_memos();
  std::vector<std::unique_ptr<Memo>> decode_memos_;  // decode-only shapes, by batch size (bounded by max_num_seqs)
  std::vector<std::unique_ptr<Memo>> other_memos_;   // shapes with a prefill: direct-mapped by token count
  unsigned memo_bits_ = 0;       // other_memos_ has 2^memo_bits_ slots (grow_prefill_memos)
  std::size_t memos_made_ = 0;   // of them holding a memo
  std::uint64_t generation_ = 0;
};

// What the replicas of a simulation (of one thread's group of fleet lanes: fleet_lanes.hpp) share
// to price steps: kernel times per hardware profile, and op-list memos per (scenario, parallel
// layout). Neither changes a result (a hit is the value a miss computes), so sharing is safe
// wherever the sharers run on one thread at a time.
class StepCaches {
 public:
  KernelTimeCaches kernel_times;
  // The memos of timers built for `scenario` (matched by address: the draft model of speculative
  // decoding is another scenario) and `parallel`, made at first use.
  IterationMemos& memos(const Scenario& scenario, const ParallelConfig& parallel);

 private:
  struct Slot {
    const Scenario* scenario;
    ParallelConfig parallel;
    std::unique_ptr<IterationMemos> memos;
  };
  std::vector<Slot> slots_;
};

// A replica's iteration timer: estimate_iteration with the kernel-time cache and a memo of op
// lists and their kernel times. Only attention (depends_on_context) depends on how the batch's
// tokens split into sequences and contexts; every other op depends on the token and sampled
// counts alone. So a memo per (tokens, sampled, prefill or decode present) keeps those ops and
// their times, and an iteration rebuilds and re-times only its attention ops: a decode step of
// the same batch size (every step one token longer) or a prefill of the same token count finds
// the rest done. The values and the order of summation are estimate_iteration's, so results are
// bit-identical (a test compares). Pipeline-parallel replicas take estimate_iteration unmemoised.
class IterationTimer {
 public:
  // `shared`: the simulation's caches and memos (its replicas share them); without, the timer
  // keeps its own.
  IterationTimer(const Scenario& scenario, const ParallelConfig& parallel, StepCaches* shared = nullptr);
  StepTime time(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs);
  // The exact reference: estimate() for every kernel, no cache, no memo.
  StepTime time_uncached(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs);
  // The steps of a decode run (StepCostModel::begin_decode_run): decode-only shapes equal but for
  // decode_kv_tokens; decode_run_step(kv) == time(shape with decode_kv_tokens = kv, launch,
  // batch_seqs), bit for bit, with the shape's memo found once per run.
  void begin_decode_run(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs);
  StepTime decode_run_step(double decode_kv_tokens);

 private:
  using Memo = IterationMemos::Memo;
  // time() with the shape's memo found: fills it on a miss, else re-times its context ops (decode
  // attention from `decode_rates` when given: set_decode_attention_work's constants for the shape).
  // The memo may have been filled for another shape of its class by another replica's timer.
  StepTime time_with(Memo& m, const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs,
                     const AttentionWorkRates* decode_rates = nullptr);

  const Scenario& scenario_;
  ParallelConfig parallel_;
  ModelSpec sharded_model_;  // the slice one GPU of the tensor-parallel group holds
  std::unique_ptr<StepCaches> own_caches_;  // made when the constructor is given none
  KernelTimeCache& cache_;
  // Context ops other than decode attention (prefill attention, the KV concat) re-timed on a
  // memo hit. A fresh prompt's prefill attention depends on its length alone, and lengths recur;
  // kept apart from cache_ so these entries do not evict the step's GEMMs.
  KernelTimeCache& context_cache_;
  IterationMemos& memos_;
  DecodeAttentionCursor decode_cursor_;  // decode attention's grid and last cell, between steps
  std::vector<Op> scratch_ops_;     // op list of the step being built or timed unmemoised
  std::vector<KernelTime> scratch_times_;
  // The decode run: its shape, launch and host sequences, and its memo once the first step found
  // it (found again if the memos' generation changed: another replica's prefill grew the table).
  BatchShape run_shape_;
  LaunchConfig run_launch_;
  std::int64_t run_batch_seqs_ = 0;
  Memo* run_memo_ = nullptr;
  std::uint64_t run_generation_ = 0;
  AttentionWorkRates run_rates_;  // decode attention's work constants for the run's batch
  bool run_has_rates_ = false;    // false: refresh_context_op (MLA, sliding windows)
  // The run memo's decode_form once a step found it ready: the run's later steps are priced by
  // it alone (nothing else prices with this thread's memos between two steps of one run).
  const DecodeStepForm* run_form_ = nullptr;
  LogGrid2D::Hint form_hint_;  // the grid cell of this timer's last DecodeStepForm::price
};

}  // namespace servesim
