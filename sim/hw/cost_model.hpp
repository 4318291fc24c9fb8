// CostModel: op -> seconds. Pure functions, checkable by hand:
//   t = max(flops / (peak[dtype] * eff_compute), bytes / (hbm_bw * eff_bw)) + kernel_overhead
// per launch, with efficiencies interpolated from the profile's tables; quantized GEMMs pick a
// kernel (see GemmKernel) and a step is a max-plus recursion of host launches and GPU kernels.
// Communication ops (tensor-parallel all-reduce/all-gather) take the interconnect's time instead
// (interconnect.hpp).
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "sim/hw/hw_profile.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

enum class Bound { compute, memory, launch, interconnect };
const char* bound_name(Bound b);

// Which GEMM kernel runs an op:
//   dense            16-bit tensor-core GEMM
//   w8a8             fp8/int8 tensor-core GEMM (the GPU has the format)
//   w8a8_emulated    the GPU lacks the format (fp8 on Ampere): weights stored in 8 bits are
//                    converted to 16 bits by a pass, then the dense GEMM runs: memory shrinks,
//                    time does not improve
//   weight_only_fused  GEMV-style kernel (small M): reads 4/8-bit weights and dequantizes them in
//                    registers, once per 16-row tile of M (Marlin/exllama/AWQ-GEMV style)
//   dequant_gemm     large M: a pass writes the 16-bit weights, then the dense GEMM runs
enum class GemmKernel { dense, w8a8, w8a8_emulated, weight_only_fused, dequant_gemm };
const char* gemm_kernel_name(GemmKernel k);

// Largest M the fused weight-only kernel takes before the engine switches to dequant-then-GEMM:
// GPTQ 50 (exllama's MAX_Q_GEMM_ROWS), AWQ 255 (vLLM awq.py: dequantize + matmul when
// num_tokens >= 256), W8A16 64 (assumed: Marlin-class tiles of 64 rows).
std::int64_t weight_only_fused_max_m(QuantScheme q);
GemmKernel choose_gemm_kernel(const Op& op, const HwProfile& hw);

struct KernelTime {
  double time_s = 0.0;     // one launch (both kernels for dequant_gemm / w8a8_emulated)
  double compute_s = 0.0;  // FLOPs (and dequantization) over achievable rate
  double memory_s = 0.0;   // bytes over achievable bandwidth
  double overhead_s = 0.0; // fixed per-kernel cost
  double roofline_s = 0.0; // max(FLOPs/peak, bytes/peak bandwidth): the datasheet floor
  double pass_s = 0.0;     // the conversion pass of dequant_gemm / w8a8_emulated (part of time_s)
  double bytes = 0.0;      // bytes actually moved (the conversion pass adds some)
  int launches = 1;        // kernels per op launch (2 with a conversion pass)
  GemmKernel gemm = GemmKernel::dense;
  Bound bound = Bound::memory;
};

// Time of one launch of `op` on `hw`; `base` is the 16-bit dtype of unquantized work.
KernelTime estimate(const Op& op, const HwProfile& hw, Dtype base);

// estimate() of a decode attention op, called again and again as its context changes (every
// decode step re-times it): the cursor keeps the measured grid of the op's kernel and head
// dimension and the grid cell of the last call, so a call looks up neither again when they hold.
// Bit-identical to estimate().
struct DecodeAttentionCursor {
  const LogGrid2D* grid = nullptr;  // null: not looked up yet
  AttentionKernel kernel = AttentionKernel::standard;
  std::int64_t head_dim = 0;        // the op the grid was looked up for
  LogGrid2D::Hint hint;
};
KernelTime estimate_decode_attention(const Op& op, const HwProfile& hw, Dtype base, DecodeAttentionCursor& cursor);

// How a step's kernels reach the GPU. Engine profiles (scenarios/engines/) fill it.
struct LaunchConfig {
  bool cuda_graphs = true;             // one graph launch per step instead of one launch per kernel
  double host_overhead_per_step_s = 0; // scheduling, input preparation: before the launches
  double host_overhead_per_decode_step_s = 0;  // more host work in a step without prefill (HF
                                               // generate()'s per-token loop), added by the caller
  double host_overhead_per_seq_s = 0;  // sampling, detokenisation per sequence, after the GPU
  double host_overhead_per_step_per_tp_worker_s = 0;  // more per-step host work for each tensor-
                                                      // parallel worker beyond the first (the
                                                      // driver feeds every worker each step),
                                                      // added by the caller (apply_tp_workers)
  bool overlap_host = false;           // host work of step i+1 overlaps the GPU of step i (SGLang)
  double dispatch_s_per_kernel = 0;    // framework's host cost per eager kernel; 0: the GPU profile's
                                       // kernel_launch_s (Python frameworks pay several times more)
  double per_kernel_s(const HwProfile& hw) const {
    if (cuda_graphs) return 0.0;
    return dispatch_s_per_kernel > 0 ? dispatch_s_per_kernel : hw.kernel_launch_s;
  }
};

struct StepTime {
  double time_s = 0.0;          // wall time of the iteration
  double gpu_s = 0.0;           // sum of kernel times
  double launch_s = 0.0;        // host time issuing kernels (overlaps the GPU)
  double launch_wait_s = 0.0;   // GPU idle inside the step waiting for launches
  double host_s = 0.0;          // host work serial with the GPU (or overlapped, see LaunchConfig)
  double roofline_s = 0.0;      // sum of datasheet floors
  double bytes = 0.0;           // total bytes moved
  double flops = 0.0;
  double comm_s = 0.0;          // part of gpu_s spent in collectives (tensor/pipeline parallel)
  double bubble_frac = 0.0;     // pipeline parallel: fraction of stage-time slots left idle
  std::int64_t kernels = 0;
  bool launch_bound = false;    // issuing the kernels takes the host longer than the GPU runs them
};

// Memo of estimate() for one (hw, base dtype): a direct-mapped table keyed by every Op field
// estimate() reads, so a hit returns exactly what estimate() computes. A replica's GEMMs, norms
// and elementwise ops repeat with the batch size, so most lookups hit and skip the log-space
// table interpolations (decode attention, whose context grows every step, mostly misses).
class KernelTimeCache {
 public:
  KernelTimeCache(const HwProfile& hw, Dtype base);
  const KernelTime& get(const Op& op);
  const HwProfile& hw() const { return hw_; }
  Dtype base() const { return base_; }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }

 private:
  // Exactly the Op fields estimate() reads (not name, count, per_layer, placement): plain data,
  // so an entry of all zero bytes is a valid empty one.
  struct Key {
    double flops, bytes, attn_kv_tokens, stream_efficiency, compute_efficiency, compute_plateau_frac, tile_padding;
    double attn_pqh_share, attn_pqh_context;
    std::int64_t m, n, k, attn_seqs, attn_kv_heads, attn_head_dim, groups;
    int comm_gpus;
    int attn_dequant_copies;
    int attn_pqh_group;
    bool comm_custom;
    OpKind kind;
    QuantScheme quant;
    QuantKernel quant_kernel;
    AttentionKernel attn_kernel;
    Dtype attn_kv_dtype;
  };
  struct Entry {
    Key key;
    KernelTime time;
    bool valid;
  };
  struct FreeEntries {
    void operator()(Entry* p) const;
  };
  static Key key_of(const Op& op);
  static bool same_kernel(const Key& key, const Op& op);
  void allocate(unsigned bits);
  void grow();
  std::size_t slot(const Op& op) const;
  const HwProfile& hw_;
  Dtype base_;
  // Direct-mapped, 2^bits_ slots, grown from 64 to 4096 as it fills (get()). Zeroed by calloc,
  // not constructed entry by entry: a fresh mapping's pages stay untouched until a lookup lands
  // in them.
  std::unique_ptr<Entry[], FreeEntries> entries_;
  unsigned bits_ = 0;
  std::size_t filled_ = 0;  // entries written since the last doubling (get())
  std::uint64_t hits_ = 0, misses_ = 0;
};

// The kernel-time caches of one simulation, shared by its replicas. estimate() depends on the op
// and (hw, base dtype) alone, so every replica on one hardware profile can use one memo: a hit is
// estimate()'s value whoever filled the entry, and reports stay bit-identical. Per-replica caches
// cost a 512-replica fleet 442 MB and 15% of its instructions zero-filling them as they grew
// (callgrind, issue 39; docs/scale.md). Single-threaded, as the event loop that uses it.
class KernelTimeCaches {
 public:
  // What the entries price: kept apart where one kind would evict the other (IterationTimer's
  // step ops and its context ops).
  enum class Purpose { step_ops, context_ops };
  // The cache for (hw, base, purpose), made at first use. hw is matched by address: the
  // scenario's profile, which outlives the simulation's replicas.
  KernelTimeCache& get(const HwProfile& hw, Dtype base, Purpose purpose);

 private:
  struct Slot {
    const HwProfile* hw;
    Dtype base;
    Purpose purpose;
    std::unique_ptr<KernelTimeCache> cache;
  };
  std::vector<Slot> slots_;
};

// The launch queue as a max-plus recursion: the host issues launch j at h_j = h_{j-1} + c (c = one
// eager launch; with CUDA graphs one graph launch up front and c = 0); the GPU runs kernels in
// order, f_j = max(f_{j-1}, h_j) + d_j. The identical layers are folded as a max-plus map
// f' = max(f + D, h + A); L layers of it are f' = max(f + L D, h + A + (L - 1) max(c_layer, D))
// with c_layer the host time of one layer's launches (closed form, not a loop). Step = host_pre + (f_n - host_pre) + host_post.
// With a cache (built for the same hw and base), kernel times come from it: same values, same
// summation order, so the result is bit-identical to the uncached call.
StepTime estimate_step(const std::vector<Op>& ops, const HwProfile& hw, Dtype base, const LaunchConfig& launch,
                       std::int64_t batch_seqs, KernelTimeCache* cache = nullptr);
// The two halves of estimate_step, for callers that keep kernel times between steps:
// times[j] = one launch of ops[j] (from the cache when given); the step from those times.
void time_kernels(const std::vector<Op>& ops, const HwProfile& hw, Dtype base, KernelTimeCache* cache,
                  std::vector<KernelTime>& times);
StepTime combine_step(const std::vector<Op>& ops, const std::vector<KernelTime>& times, const HwProfile& hw,
                      const LaunchConfig& launch, std::int64_t batch_seqs);

// The launch queue over a run of launches as one max-plus affine map of the state (h, f):
// h' = h + host_s, f' = max(f + gpu_s, h + reach_s). Runs compose (see compose()), so a run's
// map is computed once and applied in O(1); the identity has reach_s = -inf.
struct QueueMap {
  double host_s = 0.0;   // host time issuing the run's launches
  double gpu_s = 0.0;    // GPU time of the run's kernels
  double reach_s = -std::numeric_limits<double>::infinity();  // finish time when the GPU starts idle at h = 0
};

// Per-step totals that add over ops.
struct StepSums {
  double gpu_s = 0.0, roofline_s = 0.0, flops = 0.0, comm_s = 0.0, bytes = 0.0;
  std::int64_t kernels = 0;
};

// A step's op list cut into the pieces combine_step folds, in order: runs of ops that do not
// depend on the batch's contexts (summarised once: sums and queue map) and single context ops
// (attention, folded from their current time). combine_step builds the pieces and folds them;
// IterationTimer keeps each memo's pieces, so a step of a memoised shape re-times its context
// ops and folds a handful of pieces instead of every op, with the same arithmetic
// (bit-identical to combine_step).
// Self-contained and fixed-size (no heap): a memo is one contiguous block, so a step of a batch
// size last seen a while ago costs a few sequential cache lines, not a chain of pointer loads.
struct StepPieces {
  enum class Region : std::uint8_t { pre, body, post };  // before the identical layers, one layer, after
  static constexpr std::uint8_t kRun = 0xff;
  // A step has at most 3 context ops (prefill attention, decode attention, KV concat), and a
  // run ends only at a context op or a region boundary: at most 3 + 3 runs.
  static constexpr std::size_t kMaxContextOps = 3, kMaxPieces = 2 * kMaxContextOps + 3;
  struct Piece {
    std::uint8_t context = kRun;  // index into context[], or kRun for a summarised run
    Region region = Region::pre;
    bool map_folded = false;      // a run whose map is already in folded[region] (no context op before it in its region)
    StepSums sums;                // of the run (kRun only)
    QueueMap map;                 // of the run (kRun only)
  };
  struct ContextOp {
    Op op{"", OpKind::attention_decode};
    KernelTime time;  // one launch of op
  };
  std::uint8_t num_pieces = 0, num_context = 0;
  std::int64_t layers = 0;      // identical layers the body map is folded over
  double per_kernel_s = -1.0;   // launch cost the run maps were built with
  double kernel_gap_s = 0.0;    // GPU gap between dependent kernels the maps include (HwProfile)
  std::array<Piece, kMaxPieces> pieces;  // the first num_pieces, in op order
  std::array<ContextOp, kMaxContextOps> context;
  // What combine_pieces computes the same way every step, folded once by summarize_step in the
  // same order: the sums of the runs before the first context op (piece first_context), and per
  // region the maps of its runs before its first context op (all of a region without one).
  // combine_pieces resumes from there: the same additions in the same order, bit-identical.
  std::uint8_t first_context = 0;
  StepSums folded_sums;
  std::array<QueueMap, 3> folded;
};
// Cuts ops (with times[j] one launch of ops[j]) into pieces; throws std::logic_error past the
// fixed capacities (an op list build_iteration_ops does not make).
void summarize_step(const std::vector<Op>& ops, const std::vector<KernelTime>& times, double per_kernel_s,
                    double kernel_gap_s, StepPieces& pieces);
StepTime combine_pieces(const StepPieces& pieces, const HwProfile& hw, const LaunchConfig& launch,
                        std::int64_t batch_seqs);

// A decode-only step as a function of its KV tokens: combine_pieces of a memo's pieces after its
// decode attention op was set for `kv_tokens` (set_decode_attention_work) and re-timed
// (estimate_decode_attention), the same operations in the same order, so bit-identical, with what
// does not change from step to step taken once when the memo is built: the op's work rates and
// its kernel's grid, the profile's rates, the pieces before the op, the launch cost. Why: through
// the general path a quiet decode step cost ~790 instructions to price (the op rewritten in
// memory, estimate_decode_attention's checks and lookups, combine_pieces' walk of every piece
// and its op fields), though only the attention op's work moves (docs/scale.md, issue 39).
class DecodeStepForm {
 public:
  // From summarize_step's `pieces` of a decode-only shape of `decode_seqs` sequences of one query
  // token each, `rates` its decode_attention_rates. False (and clear) where the form does not apply:
  // a context op other than decode attention, an integer KV cache (a measured ratio or a
  // dequantization time that grows with the context), no measured decode grid for the op's kernel.
  bool build(const StepPieces& pieces, const HwProfile& hw, Dtype base, const AttentionWorkRates& rates,
             std::int64_t decode_seqs);
  bool ready() const { return ready_; }
  std::int64_t decode_seqs() const { return decode_seqs_; }
  void clear() { ready_ = false; }
  // The step at `kv_tokens` (the shape's decode_kv_tokens); `hint`: the caller's grid cell of its
  // last call (LogGrid2D::at). Only when ready().
  StepTime price(double kv_tokens, const LaunchConfig& launch, std::int64_t batch_seqs, LogGrid2D::Hint& hint) const;

 private:
  struct Run {  // a summarised run after the attention op, as StepPieces::Piece holds it
    StepSums sums;
    QueueMap map;
    StepPieces::Region region;
    bool map_folded;
  };
  double grid_frac(double kv_tokens, LogGrid2D::Hint& hint) const;  // decode_frac at kv_tokens

  bool ready_ = false;
  std::int64_t decode_seqs_ = 0;
  const HwProfile* hw_ = nullptr;
  Dtype base_ = Dtype::bf16;
  Op attn_{"", OpKind::attention_decode};  // the attention op as built (for a grid value <= 0: roofline's other branch)
  // set_attention_work's constants: flops = 4 heads_x_dim kv / kernels, bytes = (q_io + kv 2 kv_width kv_bytes) / kernels.
  double four_heads_x_dim_ = 0.0, q_io_bytes_ = 0.0, kv_width_ = 0.0, kv_bytes_ = 0.0, kernels_ = 1.0;
  // decode_frac's: units (sequences x KV heads), the sequences, the grid and its smallest work.
  double units_ = 0.0, seqs_ = 0.0, min_work_ = 0.0;
  const LogGrid2D* grid_ = nullptr;
  double peak_ = 0.0, bandwidth_ = 0.0, overhead_s_ = 0.0;  // roofline's
  // op_piece's: the op's count, its launches in its region, the launch cost and the kernel gap.
  std::int64_t count_ = 0, launches_ = 0;
  double c_ = 0.0, gap_ = 0.0;
  StepPieces::Region region_ = StepPieces::Region::body;  // the attention op's
  std::int64_t layers_ = 0;
  StepSums folded_sums_;              // StepPieces::folded_sums (the pieces before the op)
  std::array<QueueMap, 3> folded_;    // StepPieces::folded
  std::uint8_t num_runs_ = 0;
  std::array<Run, StepPieces::kMaxPieces> runs_;  // the pieces after the op, in order
};

}  // namespace servesim
