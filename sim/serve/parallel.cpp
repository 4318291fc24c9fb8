// Tensor/pipeline-parallel iteration cost; see parallel.hpp for the model.
#include "sim/serve/parallel.hpp"

#include <algorithm>
#include <cmath>

namespace servesim {

std::string parallel_config_error(const ModelSpec& m, std::int64_t tp, std::int64_t pp) {
  if (tp < 1 || pp < 1) return "parallel sizes must be >= 1";
  if (m.num_attention_heads % tp != 0) {
    return "tensor_parallel_size " + std::to_string(tp) + " does not divide the " +
           std::to_string(m.num_attention_heads) + " attention heads of " + m.name;
  }
  if (m.num_kv_heads % tp != 0 && tp % m.num_kv_heads != 0) {
    return "tensor_parallel_size " + std::to_string(tp) + " neither divides nor is a multiple of the " +
           std::to_string(m.num_kv_heads) + " KV heads of " + m.name;
  }
  if (pp > m.num_layers) {
    return "pipeline_parallel_size " + std::to_string(pp) + " exceeds the " + std::to_string(m.num_layers) + " layers of " + m.name;
  }
  return "";
}

std::string expert_parallel_error(const ModelSpec& m, std::int64_t ep) {
  if (ep <= 1) return "";
  if (!m.is_moe()) return "expert parallelism needs a mixture-of-experts model; " + m.name + " is dense";
  if (m.moe.num_experts % ep != 0) {
    return "expert_parallel_size " + std::to_string(ep) + " does not divide the " + std::to_string(m.moe.num_experts) +
           " experts of " + m.name;
  }
  return "";
}

LinkScope pipeline_link(const HwProfile& hw, std::int64_t tp, std::int64_t pp) {
  const Interconnect& ic = hw.interconnect;
  const std::int64_t gpus = tp * pp;
  if (gpus > ic.gpus_per_node) return LinkScope::inter_node;
  return gpus <= ic.nvlink_domain_gpus ? LinkScope::nvlink : LinkScope::pcie;
}

namespace {

// One of m equal micro-batches of `b` (rounded up: the largest one sets the stage time).
BatchShape micro_batch(const BatchShape& b, std::int64_t m) {
  if (m <= 1) return b;
  const auto up = [m](std::int64_t v) { return (v + m - 1) / m; };
  const double md = static_cast<double>(m);
  BatchShape s;
  s.prefill_seqs = up(b.prefill_seqs);
  s.prefill_tokens = up(b.prefill_tokens);
  s.prefill_attn_pairs = b.prefill_attn_pairs / md;
  s.prefill_kv_tokens = b.prefill_kv_tokens / md;
  s.prefill_sampled = up(b.prefill_sampled);
  s.decode_seqs = up(b.decode_seqs);
  s.decode_kv_tokens = b.decode_kv_tokens / md;
  s.decode_query_tokens = b.decode_query_tokens;
  return s;
}

// One slot of a pipeline stage: the stage's ops for one micro-batch (`ops` less those placed on the
// other end stage, `skip`) through the launch queue, from an idle GPU.
StepTime stage_slot(const std::vector<Op>& ops, Placement skip, const HwProfile& hw, Dtype base, const LaunchConfig& launch,
                    KernelTimeCache* cache) {
  thread_local std::vector<Op> stage_ops;  // reused: this runs twice per pipeline-parallel iteration
  thread_local std::vector<KernelTime> times;
  stage_ops.clear();
  for (const Op& op : ops) {
    if (op.placement != skip) stage_ops.push_back(op);
  }
  time_kernels(stage_ops, hw, base, cache, times);
  return combine_step(stage_ops, times, hw, launch, 0);
}

}  // namespace

BatchShape attention_dp_rank(const BatchShape& b, const ParallelConfig& parallel) {
  const std::int64_t dp = parallel.attention_dp_size();
  if (dp <= 1) return b;
  // Ranks are dealt sequences, not tokens: a prompt (or its chunk) is prefilled by the rank that
  // holds its request, and a decoding sequence's KV lives on one rank. The busiest rank holds its
  // share of the sequences (rounded up) and those sequences' share of the tokens and context.
  const auto seqs = [&parallel](std::int64_t n) { return std::min(n, attention_dp_rank_seqs(n, parallel)); };
  const auto frac = [](std::int64_t part, std::int64_t whole) { return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; };
  BatchShape s;
  s.prefill_seqs = seqs(b.prefill_seqs);
  const double pf = frac(s.prefill_seqs, b.prefill_seqs);
  s.prefill_tokens = static_cast<std::int64_t>(std::ceil(static_cast<double>(b.prefill_tokens) * pf));
  s.prefill_attn_pairs = b.prefill_attn_pairs * pf;
  s.prefill_kv_tokens = b.prefill_kv_tokens * pf;
  s.prefill_sampled = std::min(s.prefill_seqs, static_cast<std::int64_t>(std::ceil(static_cast<double>(b.prefill_sampled) * pf)));
  s.decode_seqs = seqs(b.decode_seqs);
  s.decode_kv_tokens = b.decode_kv_tokens * frac(s.decode_seqs, b.decode_seqs);
  s.decode_query_tokens = b.decode_query_tokens;
  return s;
}

std::int64_t attention_dp_rank_seqs(std::int64_t seqs, const ParallelConfig& parallel) {
  const std::int64_t dp = parallel.attention_dp_size();
  if (dp <= 1) return seqs;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(seqs) * parallel.attention_dp_load_imbalance / static_cast<double>(dp)));
}

StepTime estimate_iteration(const ModelSpec& model, const HwProfile& hw, const Precision& precision,
                            const KernelPlan& plan, const ParallelConfig& par, const BatchShape& shape, const LaunchConfig& launch,
                            std::int64_t batch_seqs, std::vector<Op>& ops, KernelTimeCache* cache) {
  // Under attention DP the op list is one rank's (no tensor-parallel split outside the experts).
  const std::int64_t tp = par.attention_tp(), pp = par.pipeline_parallel_size;
  if (pp <= 1) {
    build_iteration_ops(model, shape, precision, ops, plan, tp, par.moe_routing());
    return estimate_step(ops, hw, precision.weights, launch, batch_seqs, cache);
  }
  const std::int64_t m = std::max<std::int64_t>(1, std::min(par.micro_batches(), shape.total_seqs()));
  const BatchShape mb = micro_batch(shape, m);
  const ModelSpec stage_model = model.stage((model.num_layers + pp - 1) / pp);
  build_iteration_ops(stage_model, mb, precision, ops, plan, tp, par.moe_routing());

  // One stage slot (one stage's ops for one micro-batch) goes through the launch queue as a whole
  // tp-only step does (combine_step: launches, kernels, the dependent-kernel gap, the graph launch).
  // The host work before and after the iteration counts once, outside the slots.
  LaunchConfig slot_launch = launch;
  slot_launch.host_overhead_per_step_s = 0.0;
  slot_launch.host_overhead_per_seq_s = 0.0;
  slot_launch.overlap_host = false;
  const StepTime first = stage_slot(ops, Placement::last_stage, hw, precision.weights, slot_launch, cache);
  const StepTime last = stage_slot(ops, Placement::first_stage, hw, precision.weights, slot_launch, cache);
  const StepTime& stage = first.time_s >= last.time_s ? first : last;  // the slower end stage sets the pace
  const double act_bytes = static_cast<double>(mb.total_tokens()) * static_cast<double>(model.hidden_size) *
                           dtype_bytes(precision.activations);
  const double p2p_s = hw.interconnect.time_s(Collective::send_recv, act_bytes, 2, pipeline_link(hw, tp, pp));
  const double slots = static_cast<double>(std::max(m, pp));
  const double md = static_cast<double>(m);

  StepTime s;
  s.gpu_s = slots * (stage.gpu_s + p2p_s);
  s.comm_s = slots * (stage.comm_s + p2p_s);
  s.roofline_s = slots * stage.roofline_s;
  s.bytes = md * stage.bytes;  // HBM bytes one stage GPU moves over the iteration
  s.flops = md * stage.flops;
  s.kernels = m * stage.kernels;
  s.launch_s = slots * stage.launch_s;
  s.launch_wait_s = slots * stage.launch_wait_s;
  s.launch_bound = stage.launch_bound;
  s.host_s = launch.host_overhead_per_step_s + static_cast<double>(batch_seqs) * launch.host_overhead_per_seq_s;
  s.bubble_frac = 1.0 - md / slots;
  s.time_s = s.host_s + slots * (stage.time_s + p2p_s);
  return s;
}

namespace {
// The same ops but for the context ops: equal token and sampled counts, prefill and decode
// attention both present or both absent.
bool same_but_context(const BatchShape& a, const BatchShape& b) {
  return a.total_tokens() == b.total_tokens() && a.sampled_seqs() == b.sampled_seqs() &&
         (a.prefill_seqs > 0) == (b.prefill_seqs > 0) && (a.decode_seqs > 0) == (b.decode_seqs > 0) &&
         a.decode_query_tokens == b.decode_query_tokens;
}
// Memos of shapes with a prefill, direct-mapped by a hash of what same_but_context compares.
// A memo is one StepPieces (about 1.3 KB, no heap): at most ~22 MB when every slot is used
// (bench/million.sh 1M requests: peak RSS 34 MB). Prompts of equal length recur within a run,
// and one token count comes with different sequence counts (one long prompt, or two short ones):
// indexed by token count alone (8192 slots), 23% of the bench's prefill steps missed, nearly all
// collisions of equal token counts; hashed with the sampled count into 2^14 slots, 4.2% miss
// (34,687 of 833,073 prefill steps at 1M requests). Those rates were counted with temporary
// counters in time(), not kept; the rerunnable effect is bench/million.sh and bench/instructions.sh.
// With the sampled count capped at 7 in the key, a prompt arriving at a batch of n decodes shared
// its slot with every (prompt + n) of equal total: at 10 req/s a replica (batch ~19) missed 29% of
// its memo lookups (58,187 of 261,113, 50 replicas x 200,000 requests); the whole sampled count in
// the key: 18,451 (callgrind counts of the rebuild).
constexpr unsigned kPrefillMemoBits = 14;
constexpr unsigned kInitialPrefillMemoBits = 6;
std::size_t prefill_memo_slot(const BatchShape& s, unsigned bits) {
  // Dense keys (token count, then the sampled count in the low 12 bits) spread best under
  // Fibonacci hashing: consecutive keys land far apart.
  const std::uint64_t key = (static_cast<std::uint64_t>(s.total_tokens()) << 12) ^ static_cast<std::uint64_t>(s.sampled_seqs());
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}
}  // namespace

IterationMemos& StepCaches::memos(const Scenario& scenario, const ParallelConfig& parallel) {
  for (Slot& s : slots_) {
    if (s.scenario == &scenario && s.parallel == parallel) return *s.memos;
  }
  slots_.push_back({&scenario, parallel, std::make_unique<IterationMemos>()});
  return *slots_.back().memos;
}

IterationTimer::IterationTimer(const Scenario& scenario, const ParallelConfig& parallel, StepCaches* shared)
    : scenario_(scenario),
      parallel_(parallel),
      sharded_model_(scenario.model.sharded(parallel.attention_tp(), parallel.expert_parallel_size)),
      own_caches_(shared ? nullptr : std::make_unique<StepCaches>()),
      cache_((shared ? shared : own_caches_.get())
                 ->kernel_times.get(scenario.hw, scenario.precision.weights, KernelTimeCaches::Purpose::step_ops)),
      context_cache_((shared ? shared : own_caches_.get())
                         ->kernel_times.get(scenario.hw, scenario.precision.weights, KernelTimeCaches::Purpose::context_ops)),
      memos_((shared ? shared : own_caches_.get())->memos(scenario, parallel)) {}

StepTime IterationTimer::time_uncached(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs) {
  return estimate_iteration(scenario_.model, scenario_.hw, scenario_.precision, scenario_.engine.profile.kernels,
                            parallel_, shape, launch, batch_seqs, scratch_ops_, nullptr);
}

IterationMemos::Memo& IterationMemos::memo_for(const BatchShape& shape) {
  if (shape.prefill_seqs == 0 && shape.decode_seqs <= 4096) {
    const auto n = static_cast<std::size_t>(shape.decode_seqs);
    if (decode_memos_.size() <= n) decode_memos_.resize(n + 1);
    if (!decode_memos_[n]) decode_memos_[n] = std::make_unique<Memo>();
    return *decode_memos_[n];
  }
  // Slots hold pointers, a Memo made at a slot's first use: a table of 2^14 Memos (24 MB)
  // zero-filled up front cost a short run more than its prefills did. The table starts at 64
  // slots and doubles while more than half are taken, up to 2^kPrefillMemoBits: a replica of a
  // large fleet that prefills a few prompts keeps a few hundred bytes, not 64 KB of pointers.
  if (other_memos_.empty()) {
    memo_bits_ = kInitialPrefillMemoBits;
    other_memos_.resize(std::size_t{1} << memo_bits_);
  }
  std::unique_ptr<Memo>* slot = &other_memos_[prefill_memo_slot(shape, memo_bits_)];
  if (!*slot && 2 * (memos_made_ + 1) > other_memos_.size() && memo_bits_ < kPrefillMemoBits) {
    grow_prefill_memos();
    slot = &other_memos_[prefill_memo_slot(shape, memo_bits_)];
  }
  if (!*slot) {
    *slot = std::make_unique<Memo>();
    ++memos_made_;
  }
  return **slot;
}

void IterationMemos::grow_prefill_memos() {
  // Each memo moves to its shape's slot in a table twice the size; of two that land together the
  // later stays (a memo only saves work: the step's time is the same without it).
  std::vector<std::unique_ptr<Memo>> old;
  old.swap(other_memos_);
  memo_bits_ += 1;
  generation_ += 1;
  other_memos_.resize(std::size_t{1} << memo_bits_);
  memos_made_ = 0;
  for (auto& m : old) {
    if (!m || !m->valid) continue;
    std::unique_ptr<Memo>& to = other_memos_[prefill_memo_slot(m->shape, memo_bits_)];
    memos_made_ += !to;
    to = std::move(m);
  }
}

StepTime IterationTimer::time(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs) {
  const Scenario& s = scenario_;
  const KernelPlan& plan = s.engine.profile.kernels;
  if (parallel_.pipeline_parallel_size > 1) {
    return estimate_iteration(s.model, s.hw, s.precision, plan, parallel_, shape, launch, batch_seqs, scratch_ops_, &cache_);
  }
  return time_with(memos_.memo_for(shape), shape, launch, batch_seqs);
}

StepTime IterationTimer::time_with(Memo& m, const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs,
                                   const AttentionWorkRates* decode_rates) {
  const Scenario& s = scenario_;
  const KernelPlan& plan = s.engine.profile.kernels;
  const std::int64_t tp = parallel_.attention_tp();
  const double per_kernel_s = launch.per_kernel_s(s.hw);
  // The runs' queue maps hold the launch cost (CUDA graphs or eager): rebuilt when it changes.
  if (!m.valid || !same_but_context(shape, m.shape) || m.pieces.per_kernel_s != per_kernel_s) {
    build_iteration_ops(s.model, shape, s.precision, scratch_ops_, plan, tp, parallel_.moe_routing());
    time_kernels(scratch_ops_, s.hw, s.precision.weights, &cache_, scratch_times_);
    summarize_step(scratch_ops_, scratch_times_, per_kernel_s, s.hw.dependent_kernel_gap_s, m.pieces);
    // A decode-only class of one query token per sequence: refresh_context_op's decode attention
    // is set_decode_attention_work with these rates (decode_attention_rates), which the form takes.
    m.decode_form.clear();
    AttentionWorkRates rates;
    if (shape.prefill_seqs == 0 && shape.prefill_tokens == 0 && shape.decode_query_tokens == 1 &&
        decode_attention_rates(sharded_model_, shape.decode_seqs, s.precision, plan, rates)) {
      m.decode_form.build(m.pieces, s.hw, s.precision.weights, rates, shape.decode_seqs);
    }
  } else if (m.decode_form.ready() && shape.decode_seqs == m.decode_form.decode_seqs()) {
    // The class's memo is this shape's (same_but_context: no prefill, one query token, so the
    // same batch size too; checked all the same): the pieces' fold with decode attention at its KV tokens.
    m.shape = shape;
    return m.decode_form.price(shape.decode_kv_tokens, launch, batch_seqs, form_hint_);
  } else {
    // Decode attention's context grows every step and seldom repeats: estimated directly,
    // through the cursor (its grid and last cell kept from the step before). The other context
    // ops (prefill attention) through context_cache_: a hit returns what estimate() computes.
    for (std::size_t i = 0; i < m.pieces.num_context; ++i) {
      StepPieces::ContextOp& ctx = m.pieces.context[i];
      const bool decode = ctx.op.kind == OpKind::attention_decode;
      if (decode && decode_rates != nullptr) {
        set_decode_attention_work(ctx.op, *decode_rates, shape.decode_seqs, shape.decode_kv_tokens);
      } else {
        refresh_context_op(sharded_model_, shape, s.precision, ctx.op, plan);
      }
      ctx.time = decode ? estimate_decode_attention(ctx.op, s.hw, s.precision.weights, decode_cursor_) : context_cache_.get(ctx.op);
    }
  }
  m.shape = shape;
  m.valid = true;
  return combine_pieces(m.pieces, s.hw, launch, batch_seqs);
}

void IterationTimer::begin_decode_run(const BatchShape& shape, const LaunchConfig& launch, std::int64_t batch_seqs) {
  run_shape_ = shape;
  run_launch_ = launch;
  run_batch_seqs_ = batch_seqs;
  run_memo_ = nullptr;
  run_form_ = nullptr;
}

StepTime IterationTimer::decode_run_step(double decode_kv_tokens) {
  // time_with's DecodeStepForm branch, without finding the memo and checking its class again.
  if (run_form_ != nullptr) return run_form_->price(decode_kv_tokens, run_launch_, run_batch_seqs_, form_hint_);
  run_shape_.decode_kv_tokens = decode_kv_tokens;
  if (parallel_.pipeline_parallel_size > 1) return time(run_shape_, run_launch_, run_batch_seqs_);
  if (run_memo_ == nullptr) {
    run_has_rates_ = decode_attention_rates(sharded_model_, run_shape_.decode_seqs, scenario_.precision,
                                            scenario_.engine.profile.kernels, run_rates_);
  }
  if (run_memo_ == nullptr || run_generation_ != memos_.generation()) {
    run_memo_ = &memos_.memo_for(run_shape_);
    run_generation_ = memos_.generation();
  }
  const StepTime step = time_with(*run_memo_, run_shape_, run_launch_, run_batch_seqs_, run_has_rates_ ? &run_rates_ : nullptr);
  if (run_memo_->decode_form.ready() && run_memo_->decode_form.decode_seqs() == run_shape_.decode_seqs) {
    run_form_ = &run_memo_->decode_form;
  }
  return step;
}

}  // namespace servesim
