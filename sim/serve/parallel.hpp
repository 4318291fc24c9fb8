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
  // `shared`: the simulation's kernel-time caches (its replicas share them); without, the timer
  // keeps its own.
  IterationTimer(const Scenario& scenario, const ParallelConfig& parallel, KernelTimeCaches* shared = nullptr);
  StepTime time(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs);
  // The exact reference: estimate() for every kernel, no cache, no memo.
  StepTime time_uncached(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs);
  // The steps of a decode run (StepCostModel::begin_decode_run): decode-only shapes equal but for
  // decode_kv_tokens; decode_run_step(kv) == time(shape with decode_kv_tokens = kv, launch,
  // batch_seqs), bit for bit, with the shape's memo found once per run.
  void begin_decode_run(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs);
  StepTime decode_run_step(double decode_kv_tokens);

 private:
  // What a step of a memoised shape needs, in one block: the pieces hold the context ops
  // themselves, so the full op list and its times are built only when a memo is (re)filled.
  struct Memo {
    bool valid = false;
    BatchShape shape;   // what the pieces were last built or refreshed for
    StepPieces pieces;  // ops cut into summarised runs and context ops (combine_step's fold)
  };
  Memo& memo_for(const BatchShape& shape);
  // time() with the shape's memo found: fills it on a miss, else re-times its context ops (decode
  // attention from `decode_rates` when given: set_decode_attention_work's constants for the shape).
  StepTime time_with(Memo& m, const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs,
                     const AttentionWorkRates* decode_rates = nullptr);

  const Scenario& scenario_;
  ParallelConfig parallel_;
  ModelSpec sharded_model_;  // the slice one GPU of the tensor-parallel group holds
  KernelTimeCaches own_caches_;  // used when the constructor is given none
  KernelTimeCache& cache_;
  // Context ops other than decode attention (prefill attention, the KV concat) re-timed on a
  // memo hit. A fresh prompt's prefill attention depends on its length alone, and lengths recur;
  // kept apart from cache_ so these entries do not evict the step's GEMMs.
  KernelTimeCache& context_cache_;
  DecodeAttentionCursor decode_cursor_;  // decode attention's grid and last cell, between steps
  std::vector<Op> scratch_ops_;     // op list of the step being built or timed unmemoised
  std::vector<KernelTime> scratch_times_;
  std::vector<Memo> decode_memos_;  // decode-only shapes, by batch size (bounded by max_num_seqs)
  std::vector<std::unique_ptr<Memo>> other_memos_;  // shapes with a prefill: direct-mapped by token count
  unsigned memo_bits_ = 0;       // other_memos_ has 2^memo_bits_ slots (grow_prefill_memos)
  std::size_t memos_made_ = 0;   // of them holding a memo
  void grow_prefill_memos();
  // The decode run: its shape, launch and host sequences, and its memo once the first step found it
  // (no other shape is timed until the run ends, so the memo stays where it is).
  BatchShape run_shape_;
  LaunchConfig run_launch_;
  std::int64_t run_batch_seqs_ = 0;
  Memo* run_memo_ = nullptr;
  AttentionWorkRates run_rates_;  // decode attention's work constants for the run's batch
  bool run_has_rates_ = false;    // false: refresh_context_op (MLA, sliding windows)
};

}  // namespace servesim
