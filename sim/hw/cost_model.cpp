// Roofline cost per kernel, quantized GEMM kernels and the launch queue recursion; see
// cost_model.hpp for the formulas.
#include "sim/hw/cost_model.hpp"

#include "sim/hw/moe_cost.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>

namespace servesim {

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::launch: return "launch";
    case Bound::interconnect: return "interconnect";
  }
  return "?";
}

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::dense: return "dense";
    case GemmKernel::w8a8: return "w8a8";
    case GemmKernel::w8a8_emulated: return "w8a8_emulated";
    case GemmKernel::weight_only_fused: return "weight_only_fused";
    case GemmKernel::dequant_gemm: return "dequant_gemm";
  }
  return "?";
}

std::int64_t weight_only_fused_max_m(QuantScheme q) {
  switch (q) {
    case QuantScheme::w4a16_gptq: return 50;
    case QuantScheme::w4a16_awq: return 255;
    case QuantScheme::w8a16: return 64;
    default: return 0;
  }
}

// The largest M a weight-only op's kernel runs fused: the engine's kernel's rule where it named
// one (the checkpoint format does not decide: vLLM runs GPTQ and AWQ checkpoints through Marlin),
// else the scheme's (weight_only_fused_max_m).
std::int64_t fused_max_m(const Op& op) {
  if (fused_at_every_m(op.quant_kernel)) return std::numeric_limits<std::int64_t>::max();
  if (op.quant_kernel == QuantKernel::exllama) return weight_only_fused_max_m(QuantScheme::w4a16_gptq);
  if (op.quant_kernel == QuantKernel::awq_gemm) return weight_only_fused_max_m(QuantScheme::w4a16_awq);
  return weight_only_fused_max_m(op.quant);
}

GemmKernel choose_gemm_kernel(const Op& op, const HwProfile& hw) {
  if ((op.kind != OpKind::gemm && op.kind != OpKind::grouped_gemm) || op.quant == QuantScheme::none) return GemmKernel::dense;
  if (auto d = kernel_gemm_dtype(op.quant, op.quant_kernel)) return hw.supports(*d) ? GemmKernel::w8a8 : GemmKernel::w8a8_emulated;
  return op.m <= fused_max_m(op) ? GemmKernel::weight_only_fused : GemmKernel::dequant_gemm;
}

namespace {

// The 16-bit tensor-core peak (`base` if the profile has it, else bf16, else fp16).
double peak16(const HwProfile& hw, Dtype base) {
  if (hw.peak_flops(base) > 0) return hw.peak_flops(base);
  return hw.peak_flops(Dtype::bf16) > 0 ? hw.peak_flops(Dtype::bf16) : hw.peak_flops(Dtype::fp16);
}

// The FLOP rate for an op and, apart, its achievable fraction: a table lookup that only ops
// without a measured table need (it runs for every re-timed op of every iteration). GEMMs and
// attention run on tensor cores; norms and elementwise ops on CUDA cores.
double peak_rate(const Op& op, const HwProfile& hw, Dtype gemm_dtype) {
  switch (op.kind) {
    case OpKind::gemm: return peak16(hw, gemm_dtype);
    // Attention runs in 16-bit even when GEMM weights are quantized.
    case OpKind::attention_prefill:
    case OpKind::attention_decode: return peak16(hw, Dtype::bf16);
    default: return hw.vector_fp32_flops_per_s;
  }
}

double compute_frac(const Op& op, const HwProfile& hw, Dtype gemm_dtype) {
  switch (op.kind) {
    case OpKind::gemm: return hw.gemm_frac_curve(gemm_dtype).at(static_cast<double>(op.m));
    case OpKind::attention_prefill:
    case OpKind::attention_decode: {
      // An engine kernel with its own plateau (never below the table's: the engine's kernel is
      // the profile's or a faster one): the table's fraction f raised by the plateau ratio s where
      // the table's kernel is compute-bound (f at its plateau), fading to no change toward small,
      // latency-bound launches (f -> 0), where nothing measures a speed-up.
      const auto at_plateau = [&op](const EfficiencyTable& curve, double f) {
        if (op.compute_plateau_frac <= 0.0) return f;
        const double s = std::max(1.0, op.compute_plateau_frac / curve.max_value());
        return f * (1.0 + (s - 1.0) * f / curve.max_value());
      };
      if (const auto* family = hw.attention_tables(op.attn_kernel)) {
        // The kernel computes at its head-dim tile: the table is over FLOPs at the tile, and the
        // useful FLOPs run at d / tile of that rate.
        const EfficiencyTable& curve = family->prefill_compute_frac_by_flops;
        const std::int64_t d = op.attn_head_dim;
        const std::int64_t tile = HwProfile::prefill_head_dim_tile(family->prefill_head_dim_tiles, d);
        if (d > 0 && tile > d) {
          const double pad = static_cast<double>(tile) / static_cast<double>(d);
          return op.compute_efficiency * at_plateau(curve, curve.at(op.flops * pad)) / pad;
        }
        return op.compute_efficiency * at_plateau(curve, curve.at(op.flops));
      }
      const EfficiencyTable& curve = hw.attention_prefill_compute_frac_by_tokens;
      return op.compute_efficiency * at_plateau(curve, curve.at(op.attn_seqs > 0 ? op.attn_kv_tokens : 1.0));
    }
    default: return 1.0;
  }
}

// `ceiling` < 1: the engine's streaming kernels saturate at that fraction of the calibrated
// plateau (PyTorch's strided and broadcast elementwise kernels); small transfers stay on the
// calibrated latency-bound curve.
double bandwidth_frac(const Op& op, double bytes, const HwProfile& hw, double ceiling) {
  if (op.kind == OpKind::attention_decode) return hw.attention_decode_bw_frac_by_bytes.at(bytes);
  const double f = hw.memory_bw_frac_by_bytes.at(bytes);
  return ceiling < 1.0 ? std::min(f, ceiling * hw.memory_bw_frac_by_bytes.max_value()) : f;
}

// The measured decode-attention grid for a decode attention op (its kernel family's, at its head
// dimension, else the profile's default grid; empty when the profile has none).
const LogGrid2D& decode_grid(const Op& op, const HwProfile& hw) {
  const auto* family = hw.attention_tables(op.attn_kernel);
  return family ? family->decode_frac_for(op.attn_head_dim) : hw.attention_decode_frac;
}

// The measured roofline fraction of a decode attention op (attn_seqs > 0) from its non-empty grid;
// `hint`: the grid cell of the previous lookup (LogGrid2D::at).
double decode_frac(const Op& op, const LogGrid2D& grid, LogGrid2D::Hint& hint) {
  // Parallel work units (sequence x KV head) and context per sequence: what decides how well
  // a decode kernel fills the GPU, whatever the model's head count.
  const double units = static_cast<double>(op.attn_seqs * std::max<std::int64_t>(1, op.attn_kv_heads));
  const double context = op.attn_kv_tokens / static_cast<double>(op.attn_seqs);
  // Less work than the smallest gridded launch: latency-bound, the time holds at that launch's.
  const double work = units * context, min_work = grid.xs().front();
  if (work < min_work) return grid.at(min_work, context, hint) * work / min_work;
  return grid.at(work, context, hint);
}

// The measured roofline fraction for this op, or 0 when the profile has no table for it.
double measured_frac(const Op& op, const HwProfile& hw, Dtype compute_dtype) {
  if (op.kind == OpKind::gemm) {
    const GemmTable& table = hw.gemm_tables[static_cast<std::size_t>(compute_dtype)];
    if (!table.empty()) return table.frac(static_cast<double>(op.m), static_cast<double>(op.n), static_cast<double>(op.k));
  } else if (op.kind == OpKind::attention_decode && op.attn_seqs > 0) {
    const LogGrid2D& grid = decode_grid(op, hw);
    if (grid.empty()) return 0.0;
    LogGrid2D::Hint none;
    return decode_frac(op, grid, none);
  }
  return 0.0;
}

// Roofline of one kernel with extra ALU seconds (dequantization) added to the compute side, at
// FLOP rate `peak` (peak_rate) and measured fraction `frac` (measured_frac).
// roofline()'s floors and per-launch overhead (`bw`: the profile's HBM bandwidth).
[[gnu::always_inline]] inline KernelTime roofline_floors(double flops, double bytes, double bw, double overhead_s, double peak,
                                                         double& compute_floor_s, double& memory_floor_s) {
  KernelTime t;
  compute_floor_s = peak > 0.0 ? flops / peak : 0.0;
  memory_floor_s = bytes / bw;
  t.roofline_s = std::max(compute_floor_s, memory_floor_s);
  t.overhead_s = overhead_s;
  t.bytes = bytes;
  return t;
}

// roofline()'s time_s and bound from its compute, memory and overhead times.
[[gnu::always_inline]] inline void roofline_busy(KernelTime& t) {
  const double busy = std::max(t.compute_s, t.memory_s);
  t.time_s = busy + t.overhead_s;
  if (t.overhead_s > busy) {
    t.bound = Bound::launch;
  } else {
    t.bound = t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
  }
}

// roofline() with a measured fraction `frac` > 0: one fraction of the roofline covers both
// regimes. Apart so that DecodeStepForm prices its op without an Op.
[[gnu::always_inline]] inline KernelTime roofline_measured(double flops, double bytes, double bw, double overhead_s,
                                                           double extra_compute_s, double peak, double frac) {
  double compute_floor_s, memory_floor_s;
  KernelTime t = roofline_floors(flops, bytes, bw, overhead_s, peak, compute_floor_s, memory_floor_s);
  t.compute_s = compute_floor_s / frac + extra_compute_s;
  t.memory_s = memory_floor_s / frac;
  roofline_busy(t);
  return t;
}

KernelTime roofline(const Op& op, double bytes, const HwProfile& hw, Dtype gemm_dtype, double extra_compute_s, double peak,
                    double frac) {
  const double bw = hw.hbm_bandwidth_bytes_per_s;
  // Calibrated tables describe plain GEMMs; a fused dequantizing kernel of the same shape streams
  // its (smaller) weights as well as the dense kernel does, plus its ALU time.
  if (frac > 0.0) return roofline_measured(op.flops, bytes, bw, hw.kernel_overhead_s, extra_compute_s, peak, frac);
  double compute_floor_s, memory_floor_s;
  KernelTime t = roofline_floors(op.flops, bytes, bw, hw.kernel_overhead_s, peak, compute_floor_s, memory_floor_s);
  if (op.flops > 0.0 && peak > 0.0) t.compute_s = op.flops / (peak * compute_frac(op, hw, gemm_dtype));
  t.compute_s += extra_compute_s;
  if (bytes > 0.0) t.memory_s = bytes / (bw * bandwidth_frac(op, bytes, hw, op.stream_efficiency));
  roofline_busy(t);
  return t;
}
KernelTime roofline(const Op& op, double bytes, const HwProfile& hw, Dtype gemm_dtype, double extra_compute_s) {
  return roofline(op, bytes, hw, gemm_dtype, extra_compute_s, peak_rate(op, hw, gemm_dtype), measured_frac(op, hw, gemm_dtype));
}

// time_s and bound from compute_s, memory_s and overhead_s (after one of them was rescaled).
void settle(KernelTime& t) {
  const double busy = std::max(t.compute_s, t.memory_s);
  t.time_s = busy + t.overhead_s;
  t.bound = t.overhead_s > busy ? Bound::launch : t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
}

// ALU seconds an attention kernel spends dequantizing an integer KV cache as it reads it: each
// cached element converted and scaled once per launch that reads it (a decode kernel's program per
// sequence and KV head serves all the query heads of its group; an engine whose kernel runs a
// program per query head converts it once per query head, Op::attn_dequant_copies), at the profile's CUDA-core
// dequantization rate (the weight-only kernels' ~2 operations per 8-bit value, ~4 per 4-bit:
// HwProfile::dequant_weights_per_s). MODELLED: decode attention takes the measured ratio instead
// where the profile has one (measured_int_kv_ratio). Prefill kernels re-read each KV tile once per query tile;
// counted once (their tensor-core work dominates). fp8 caches: converted by the hardware, no cost.
// Cached K and V elements one launch of attention op `op` reads.
double kv_elements_per_launch(const Op& op) {
  return 2.0 * op.attn_kv_tokens * static_cast<double>(op.attn_kv_heads * op.attn_head_dim) /
         static_cast<double>(std::max<std::int64_t>(1, op.per_layer));
}

double kv_dequant_s(const Op& op, const HwProfile& hw) {
  if (!integer_kv_cache(op.attn_kv_dtype) || op.attn_head_dim <= 0) return 0.0;
  return kv_elements_per_launch(op) * op.attn_dequant_copies / hw.dequant_weights_per_s(op.attn_kv_dtype == Dtype::int4 ? 4 : 8);
}

// The measured time over bf16 of decode attention on op's integer KV cache, where the profile
// has one (calibration.attention_decode_kv); 0 = the modelled cost (kv_dequant_s). Only the
// standard kernel family: the measurement is our CUDA-core paged decode kernel (4 query heads per
// KV head, calibrate/src/kernels.cuh), where the FMAs per KV byte make a smaller cache issue-bound
// (docs/calibration.md); SDPA and other families have no such measurement, and neither has a
// kernel that runs a program per query head (attn_dequant_copies > 1). fp8 caches keep the
// model (bytes only): their measured 1.10 is not applied, so runs without an integer cache keep
// their reports.
double measured_int_kv_ratio(const Op& op, const HwProfile& hw) {
  if (op.kind != OpKind::attention_decode || op.attn_kernel != AttentionKernel::standard || !integer_kv_cache(op.attn_kv_dtype) ||
      op.attn_head_dim <= 0 || op.attn_dequant_copies > 1) {
    return 0.0;
  }
  return hw.kv_decode_time_over_bf16.of(op.attn_kv_dtype);
}

// Decode attention whose chunked layers run one program per query head (Op::attn_pqh_group): the
// layer-average op's time over the grouped kernel's, 1 + share x (ratio - 1), with the profile's
// measured ratio at those layers' batch and context (calibration.attention_decode_per_query_head)
// and their share of the op's KV bytes (both forms stream the cache, so the grouped time follows
// the bytes; exact while the context is within the chunk, where every layer reads as much). 0: not
// applied (no such layers, or no measurement for the cache format and group: the grouped price).
double per_query_head_factor(const Op& op, const HwProfile& hw) {
  if (op.attn_pqh_group <= 0 || op.attn_pqh_share <= 0.0 || op.kind != OpKind::attention_decode || op.attn_seqs <= 0) return 0.0;
  const double units = static_cast<double>(op.attn_seqs * std::max<std::int64_t>(1, op.attn_kv_heads));
  const double r = hw.decode_per_query_head.ratio(op.attn_kv_dtype, op.attn_pqh_group, units, op.attn_pqh_context);
  return r > 0.0 ? 1.0 + op.attn_pqh_share * (r - 1.0) : 0.0;
}

// `op` priced as the grouped kernel (per_query_head_factor's reference).
Op grouped_form(const Op& op) {
  Op g = op;
  g.attn_pqh_group = 0;
  return g;
}

// `t`'s busy part (compute and memory) `factor` times as long, the launch cost kept.
KernelTime scale_busy(KernelTime t, double factor) {
  t.compute_s *= factor;
  t.memory_s *= factor;
  settle(t);
  return t;
}

// `op` reading its cache in the 16-bit `base` format instead: the same shape, 2-byte elements.
Op with_16bit_kv(const Op& op, Dtype base) {
  Op b = op;
  b.bytes += kv_elements_per_launch(op) * (dtype_bytes(base) - kv_cache_element_bytes(op.attn_kv_dtype, op.attn_head_dim));
  b.attn_kv_dtype = base;
  return b;
}

// Integer-cache op `op` from its 16-bit twin's time `t`: the busy part (compute and memory)
// `ratio` times as long, the fixed launch cost kept (the launch's, not the cache format's); the
// bytes and the roofline floor are op's own.
KernelTime measured_int_kv(KernelTime t, const Op& op, const HwProfile& hw, Dtype base, double ratio) {
  t = scale_busy(t, ratio);
  const double peak = peak_rate(op, hw, base);
  t.roofline_s = std::max(peak > 0.0 ? op.flops / peak : 0.0, op.bytes / hw.hbm_bandwidth_bytes_per_s);
  t.bytes = op.bytes;
  return t;
}

// Converts the 8/4-bit weights of `op` to 16 bits in a separate pass, then runs the dense GEMM.
KernelTime convert_then_gemm(const Op& op, const HwProfile& hw, Dtype base, GemmKernel kind) {
  const double weights = static_cast<double>(op.k) * static_cast<double>(op.n);
  const double ab = dtype_bytes(base);
  const double stored = op.bytes - static_cast<double>(op.m) * static_cast<double>(op.k) *
                                       (kernel_gemm_dtype(op.quant, op.quant_kernel) ? kernel_input_bytes(op.quant, op.quant_kernel) : ab) -
                        static_cast<double>(op.m) * static_cast<double>(op.n) * ab;  // weight bytes as stored
  Op pass{"dequant_pass", OpKind::elementwise};
  const double pass_bytes = stored + weights * ab;
  const int bits = weight_bits(op.quant, base);
  KernelTime p = roofline(pass, pass_bytes, hw, base, weights / hw.dequant_weights_per_s(bits));
  Op dense = op;
  dense.quant = QuantScheme::none;
  dense.bytes = static_cast<double>(op.m) * static_cast<double>(op.k) * ab + weights * ab +
                static_cast<double>(op.m) * static_cast<double>(op.n) * ab;
  KernelTime g = roofline(dense, dense.bytes, hw, base, 0.0);
  g.pass_s = p.time_s;
  g.time_s += p.time_s;
  g.overhead_s += p.overhead_s;
  g.memory_s += p.memory_s;
  g.compute_s += p.compute_s;
  g.bytes += pass_bytes;
  g.roofline_s = std::max(op.flops / peak16(hw, base), op.bytes / hw.hbm_bandwidth_bytes_per_s);
  g.launches = 2;
  g.gemm = kind;
  return g;
}

// A quantized GEMM from the calibrated roofline fraction of its kernel(s) at FLOP rate `peak`: one
// fraction covers both regimes, as for the dense tables; `launches` kernels each pay the fixed
// overhead.
KernelTime calibrated_kernel(const Op& op, const HwProfile& hw, double peak, const GemmTable& table, int launches,
                             GemmKernel kind) {
  KernelTime t;
  const double compute_floor_s = op.flops / peak;
  const double memory_floor_s = op.bytes / hw.hbm_bandwidth_bytes_per_s;
  const double frac = table.frac(static_cast<double>(op.m), static_cast<double>(op.n), static_cast<double>(op.k));
  t.roofline_s = std::max(compute_floor_s, memory_floor_s);
  t.compute_s = compute_floor_s / frac;
  t.memory_s = memory_floor_s / frac;
  t.overhead_s = launches * hw.kernel_overhead_s;
  t.time_s = std::max(t.compute_s, t.memory_s) + t.overhead_s;
  t.bytes = op.bytes;
  t.launches = launches;
  t.gemm = kind;
  t.bound = t.compute_s > t.memory_s ? Bound::compute : Bound::memory;
  return t;
}
// A weight-only GEMM's kernel(s) computing at the 16-bit peak.
KernelTime calibrated_weight_only(const Op& op, const HwProfile& hw, Dtype base, const GemmTable& table, int launches,
                                  GemmKernel kind) {
  return calibrated_kernel(op, hw, peak16(hw, base), table, launches, kind);
}

// A kernel timed by a published benchmark: its weights stream at `frac` of the rate the model gave `t`.
void stream_at(KernelTime& t, double frac) {
  t.memory_s /= frac;
  settle(t);
}

// A GEMM on the tensor cores of its 8-bit (or FP4) format: the engine's kernel where this GPU has
// its table (torch._scaled_mm, torch._int_mm, ...), else the profile's table of the format
// (cuBLASLt, which stands in for vLLM's CUTLASS). W4A8 takes that table's fraction on its 4-bit
// weight bytes (the kernel streams its smaller weights as well as the 8-bit GEMM does) and adds
// widening the int4 weights to 8 bits on CUDA cores once per tile of M rows (as the weight-only
// model adds its dequantization: QServe measured such CUDA-core work at 20-90% of the runtime of
// earlier 4-bit kernels; a Hopper kernel that hides it, as vLLM PR #23198's lookup-table
// conversion claims to, is priced pessimistically at large M); a published benchmark of the
// engine's kernel sets its weight-streaming rate (as for Marlin in the weight-only path).
// MXFP4 weights x MXFP8 activations (cutlass_mxfp4_mxfp8) take the FP8 rate and table on their
// 4.25-bit weight bytes, with no widening: Blackwell's block-scaled MMA reads E2M1 as it is.
KernelTime w8a8_gemm(const Op& op, const HwProfile& hw, GemmKernel kind) {
  const Dtype format = *kernel_gemm_dtype(op.quant, op.quant_kernel);
  const auto* k = hw.quant_kernel_table(op.quant_kernel, op.quant);
  if (k && !k->frac.empty()) return calibrated_kernel(op, hw, hw.peak_flops(format), k->frac, k->launches, kind);
  double widen_s = 0.0;
  if (op.quant == QuantScheme::w4a8 || op.quant == QuantScheme::w4afp8) {
    const double tiles = std::ceil(static_cast<double>(op.m) / kW4a8TileRows);
    widen_s = static_cast<double>(op.k) * static_cast<double>(op.n) * tiles / hw.dequant_weights_per_s(4);
  }
  KernelTime t = roofline(op, op.bytes, hw, format, widen_s);
  stream_at(t, k && k->memory_frac_vs_dense > 0.0 ? k->memory_frac_vs_dense : 1.0);
  t.gemm = kind;
  return t;
}

// Dequantize-then-GEMM from its calibrated table. Measured as both kernels together; the launch
// queue needs the pass on its own, split off in the analytic model's proportion.
KernelTime calibrated_dequant_gemm(const Op& op, const HwProfile& hw, Dtype base, const GemmTable& table) {
  const KernelTime analytic = convert_then_gemm(op, hw, base, GemmKernel::dequant_gemm);
  KernelTime t = calibrated_weight_only(op, hw, base, table, 2, GemmKernel::dequant_gemm);
  t.pass_s = t.time_s * analytic.pass_s / analytic.time_s;
  t.bytes = analytic.bytes;
  return t;
}

}  // namespace

KernelTime estimate(const Op& op, const HwProfile& hw, Dtype base) {
  if (is_communication(op.kind)) {
    // NCCL's own latency term already covers its launch-to-completion floor.
    KernelTime t;
    const Collective c = op.kind == OpKind::all_reduce   ? Collective::all_reduce
                         : op.kind == OpKind::all_to_all ? Collective::all_to_all
                                                         : Collective::all_gather;
    t.time_s = hw.interconnect.time_s(c, op.bytes, op.comm_gpus, hw.interconnect.scope_for(op.comm_gpus), op.comm_custom);
    const LinkModel& link = hw.interconnect.link(hw.interconnect.scope_for(op.comm_gpus));
    t.roofline_s = Interconnect::model_s(LinkModel{"", link.bus_bandwidth_bytes_per_s, 0.0, link.p2p_bandwidth_bytes_per_s, 0.0},
                                         c, op.bytes, op.comm_gpus);
    t.bound = Bound::interconnect;
    return t;
  }
  if (op.kind == OpKind::grouped_gemm) return estimate_grouped_gemm(op, hw, base);
  if (const double f = per_query_head_factor(op, hw); f > 0.0) return scale_busy(estimate(grouped_form(op), hw, base), f);
  if (const double r = measured_int_kv_ratio(op, hw); r > 0.0) {
    return measured_int_kv(estimate(with_16bit_kv(op, base), hw, base), op, hw, base, r);
  }
  const GemmKernel kind = choose_gemm_kernel(op, hw);
  switch (kind) {
    case GemmKernel::dense: return roofline(op, op.bytes, hw, base, kv_dequant_s(op, hw));
    case GemmKernel::w8a8: return w8a8_gemm(op, hw, kind);
    case GemmKernel::weight_only_fused: {
      const auto* published = hw.quant_kernel_table(op.quant_kernel, op.quant);
      if (published && !published->frac.empty()) return calibrated_weight_only(op, hw, base, published->frac, published->launches, kind);
      const int bits = weight_bits(op.quant, base);
      // Calibrated (H200: GEMV kernels measured up to M = 16): past the measured M the roofline
      // fraction at the largest one holds, as for the dense tables. Why not the analytic model
      // there: it is Marlin-class and 2-3x faster than the measured kernel at M = 16, so the
      // step time would drop when the batch grows past 16.
      const HwProfile::WeightOnlyTables& cal = hw.weight_only_table(bits);
      // The calibrated fused tables time our CUDA-core GEMV; a tensor-core mixed-input kernel the
      // engine runs at every M (Marlin, Machete, ...) without a table of its own takes the analytic
      // model (Marlin-class) instead.
      if (!cal.fused.empty() && !fused_at_every_m(op.quant_kernel)) {
        const KernelTime fused = calibrated_weight_only(op, hw, base, cal.fused, 1, kind);
        // Past the measured M our GEMV-class kernel is extrapolated; no engine keeps a kernel
        // that loses to dequantize-then-GEMM (vLLM's AWQ path runs a GEMM kernel up to M = 255),
        // so the faster of the two calibrated paths runs there.
        if (static_cast<double>(op.m) > cal.fused_max_m && !cal.dequant_gemm.empty()) {
          const KernelTime d = calibrated_dequant_gemm(op, hw, base, cal.dequant_gemm);
          if (d.time_s < fused.time_s) return d;
        }
        return fused;
      }
      // Each tile of M rows (16; Marlin 64, Machete 128) dequantizes the whole weight again in
      // registers.
      const double tiles = std::ceil(static_cast<double>(op.m) / dequant_tile_rows(op.quant_kernel));
      const double weights = static_cast<double>(op.k) * static_cast<double>(op.n);
      KernelTime t = roofline(op, op.bytes, hw, base, weights * tiles / hw.dequant_weights_per_s(bits));
      if (published) {
        // A published kernel benchmark: the weights stream at that fraction of the rate this model
        // gives (measured speedup over the ideal byte ratio at small M).
        stream_at(t, published->memory_frac_vs_dense);
      }
      t.gemm = kind;
      return t;
    }
    case GemmKernel::w8a8_emulated: return convert_then_gemm(op, hw, base, kind);
    case GemmKernel::dequant_gemm: {
      const HwProfile::WeightOnlyTables& cal = hw.weight_only_table(weight_bits(op.quant, base));
      if (cal.dequant_gemm.empty()) return convert_then_gemm(op, hw, base, kind);
      return calibrated_dequant_gemm(op, hw, base, cal.dequant_gemm);
    }
  }
  return {};
}

namespace {
constexpr unsigned kCacheBits = 12;        // the most slots: 4096 x 208 bytes
constexpr unsigned kInitialCacheBits = 6;  // the first: 64 slots

std::uint64_t bits(double v) {
  std::uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

}  // namespace

KernelTimeCache::Key KernelTimeCache::key_of(const Op& op) {
  return {.flops = op.flops,
          .bytes = op.bytes,
          .attn_kv_tokens = op.attn_kv_tokens,
          .stream_efficiency = op.stream_efficiency,
          .compute_efficiency = op.compute_efficiency,
          .compute_plateau_frac = op.compute_plateau_frac,
          .tile_padding = op.tile_padding,
          .attn_pqh_share = op.attn_pqh_share,
          .attn_pqh_context = op.attn_pqh_context,
          .m = op.m,
          .n = op.n,
          .k = op.k,
          .attn_seqs = op.attn_seqs,
          .attn_kv_heads = op.attn_kv_heads,
          .attn_head_dim = op.attn_head_dim,
          .groups = op.groups,
          .comm_gpus = op.comm_gpus,
          .attn_dequant_copies = op.attn_dequant_copies,
          .attn_pqh_group = op.attn_pqh_group,
          .comm_custom = op.comm_custom,
          .kind = op.kind,
          .quant = op.quant,
          .quant_kernel = op.quant_kernel,
          .attn_kernel = op.attn_kernel,
          .attn_kv_dtype = op.attn_kv_dtype};
}

bool KernelTimeCache::same_kernel(const Key& a, const Op& b) {
  return a.kind == b.kind && a.quant == b.quant && a.quant_kernel == b.quant_kernel && a.attn_dequant_copies == b.attn_dequant_copies && a.flops == b.flops && a.bytes == b.bytes && a.m == b.m && a.n == b.n &&
         a.k == b.k && a.attn_seqs == b.attn_seqs && a.attn_kv_heads == b.attn_kv_heads && a.attn_head_dim == b.attn_head_dim &&
         a.attn_kv_tokens == b.attn_kv_tokens && a.attn_kernel == b.attn_kernel && a.stream_efficiency == b.stream_efficiency &&
         a.compute_efficiency == b.compute_efficiency && a.compute_plateau_frac == b.compute_plateau_frac &&
         a.comm_gpus == b.comm_gpus && a.comm_custom == b.comm_custom &&
         a.groups == b.groups && a.tile_padding == b.tile_padding && a.attn_kv_dtype == b.attn_kv_dtype &&
         a.attn_pqh_group == b.attn_pqh_group && a.attn_pqh_share == b.attn_pqh_share && a.attn_pqh_context == b.attn_pqh_context;
}

void KernelTimeCache::FreeEntries::operator()(Entry* p) const { std::free(p); }

KernelTimeCache::KernelTimeCache(const HwProfile& hw, Dtype base) : hw_(hw), base_(base) { allocate(kInitialCacheBits); }

void KernelTimeCache::allocate(unsigned bits) {
  static_assert(std::is_trivially_copyable_v<Entry> && std::is_aggregate_v<Entry>, "calloc'd entries must be plain data");
  entries_.reset(static_cast<Entry*>(std::calloc(std::size_t{1} << bits, sizeof(Entry))));
  if (!entries_) throw std::bad_alloc();
  bits_ = bits;
  filled_ = 0;
}

std::size_t KernelTimeCache::slot(const Op& op) const {
  // flops and bytes tell ops and shapes apart; the other fields only refine equality.
  // Fibonacci hashing: the top bits of the product depend on every bit of the key.
  const std::uint64_t b = bits(op.bytes);
  const std::uint64_t key = bits(op.flops) ^ ((b << 17) | (b >> 47)) ^ static_cast<std::uint64_t>(op.kind) ^
                            (static_cast<std::uint64_t>(op.quant) << 8);
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
}

void KernelTimeCache::grow() {
  // Twice the slots, the entries moved over (two that now share a slot keep the later one: a
  // cache may drop entries, the times it returns are estimate()'s either way).
  const std::unique_ptr<Entry[], FreeEntries> old = std::move(entries_);
  const std::size_t old_size = std::size_t{1} << bits_;
  allocate(bits_ + 1);
  for (std::size_t i = 0; i < old_size; ++i) {
    if (!old[i].valid) continue;
    Op op;  // only what slot() hashes
    op.flops = old[i].key.flops;
    op.bytes = old[i].key.bytes;
    op.kind = old[i].key.kind;
    op.quant = old[i].key.quant;
    Entry& e = entries_[slot(op)];
    filled_ += !e.valid;  // the table's own entries count, as written since this doubling
    e = old[i];
  }
}

const KernelTime& KernelTimeCache::get(const Op& op) {
  Entry* e = &entries_[slot(op)];
  if (e->valid && same_kernel(e->key, op)) {
    ++hits_;
    return e->time;
  }
  ++misses_;
  // Start small and double once the entries written since the last doubling (new ones and those
  // that replaced another: a small direct-mapped table thrashes before it fills) pass a quarter
  // of the slots (at a quarter, about one key in eight shares its slot), up to 2^kCacheBits: a
  // replica that prices few shapes (one of thousands in a fleet) keeps a few kilobytes.
  if (4 * (filled_ + 1) > (std::size_t{1} << bits_) && bits_ < kCacheBits) {
    grow();
    e = &entries_[slot(op)];
  }
  ++filled_;
  e->valid = true;
  e->key = key_of(op);
  e->time = estimate(op, hw_, base_);
  return e->time;
}

KernelTimeCache& KernelTimeCaches::get(const HwProfile& hw, Dtype base, Purpose purpose) {
  for (Slot& s : slots_) {
    if (s.hw == &hw && s.base == base && s.purpose == purpose) return *s.cache;
  }
  slots_.push_back({&hw, base, purpose, std::make_unique<KernelTimeCache>(hw, base)});
  return *slots_.back().cache;
}

KernelTime estimate_decode_attention(const Op& op, const HwProfile& hw, Dtype base, DecodeAttentionCursor& cursor) {
  // estimate() takes roofline() for attention (a dense kernel, 16-bit rate), and roofline() the
  // grid's fraction when there is one.
  if (op.kind != OpKind::attention_decode || op.attn_seqs <= 0) return estimate(op, hw, base);
  if (const double f = per_query_head_factor(op, hw); f > 0.0) {
    return scale_busy(estimate_decode_attention(grouped_form(op), hw, base, cursor), f);
  }
  if (const double r = measured_int_kv_ratio(op, hw); r > 0.0) {
    return measured_int_kv(estimate_decode_attention(with_16bit_kv(op, base), hw, base, cursor), op, hw, base, r);
  }
  if (cursor.grid == nullptr || cursor.kernel != op.attn_kernel || cursor.head_dim != op.attn_head_dim) {
    cursor = {&decode_grid(op, hw), op.attn_kernel, op.attn_head_dim, {}};
  }
  const double frac = cursor.grid->empty() ? 0.0 : decode_frac(op, *cursor.grid, cursor.hint);  // as measured_frac
  return roofline(op, op.bytes, hw, base, kv_dequant_s(op, hw), peak_rate(op, hw, base), frac);
}

void time_kernels(const std::vector<Op>& ops, const HwProfile& hw, Dtype base, KernelTimeCache* cache,
                  std::vector<KernelTime>& times) {
  times.clear();
  for (const Op& op : ops) times.push_back(cache ? cache->get(op) : estimate(op, hw, base));
}

StepTime estimate_step(const std::vector<Op>& ops, const HwProfile& hw, Dtype base, const LaunchConfig& launch,
                       std::int64_t batch_seqs, KernelTimeCache* cache) {
  thread_local std::vector<KernelTime> times;  // reused: this runs once per simulated iteration
  time_kernels(ops, hw, base, cache, times);
  return combine_step(ops, times, hw, launch, batch_seqs);
}

namespace {

// `a` then `b`: h'' = h + a.host + b.host; f'' = max(f + a.gpu + b.gpu, h + max(a.reach + b.gpu, a.host + b.reach)).
QueueMap compose(const QueueMap& a, const QueueMap& b) {
  return {a.host_s + b.host_s, a.gpu_s + b.gpu_s, std::max(a.reach_s + b.gpu_s, a.host_s + b.reach_s)};
}

// `n` repetitions of `m` in closed form: the reach is a maximum over which repetition's launch
// last stalls the GPU, linear in the repetition's index, so one of its ends attains it.
QueueMap power(const QueueMap& m, std::int64_t n) {
  if (n <= 0) return {};
  const double k = static_cast<double>(n);
  return {k * m.host_s, k * m.gpu_s, m.reach_s + (k - 1.0) * std::max(m.host_s, m.gpu_s)};
}

// One launch of a kernel of `d` seconds issued `c` after the previous one: h' = h + c,
// f' = max(f, h + c) + d.
QueueMap launch_map(double c, double d) { return {c, d, c + d}; }

// Sums and queue map of `launches` launches of one op (count launches in the pre and post
// regions, per_layer in the body) whose one-launch time is `k`.
// Inlined: a call returned the sums through memory, and the caller's 16-byte reload of two
// 8-byte stores stalled on store forwarding (perf: half of combine_pieces' samples).
// `gap` is the GPU's idle time between two dependent kernels of a step (per launch; 0 when the
// profile has not measured it).
// (An op of `count` launches of `flops` each; `communication`: a collective.)
[[gnu::always_inline]] inline void op_piece(std::int64_t count, double flops, bool communication, const KernelTime& k,
                                            std::int64_t launches, double c, double gap, StepSums& sums, QueueMap& map) {
  const double n = static_cast<double>(count);
  sums.gpu_s = n * (k.time_s + gap * k.launches);
  sums.roofline_s = n * k.roofline_s;
  sums.flops = n * flops;
  sums.comm_s = communication ? n * k.time_s : 0.0;
  sums.bytes = communication ? 0.0 : n * k.bytes;  // HBM traffic only
  sums.kernels = count * k.launches;
  const QueueMap one = k.launches == 2 ? compose(launch_map(c, k.pass_s + gap), launch_map(c, k.time_s - k.pass_s + gap))
                                       : launch_map(c, k.time_s + gap);
  map = power(one, launches);
}
[[gnu::always_inline]] inline void op_piece(const Op& op, const KernelTime& k, std::int64_t launches, double c, double gap,
                                            StepSums& sums, QueueMap& map) {
  op_piece(op.count, op.flops, is_communication(op.kind), k, launches, c, gap, sums, map);
}

void add(StepSums& to, const StepSums& s) {
  to.gpu_s += s.gpu_s;
  to.roofline_s += s.roofline_s;
  to.flops += s.flops;
  to.comm_s += s.comm_s;
  to.bytes += s.bytes;
  to.kernels += s.kernels;
}

std::int64_t launches_in(const Op& op, StepPieces::Region r) {
  return r == StepPieces::Region::body ? op.per_layer : op.count;
}

// (h, f) after `m`.
void apply(const QueueMap& m, double& h, double& f) {
  f = std::max(f + m.gpu_s, h + m.reach_s);
  h += m.host_s;
}

// combine_pieces' step from the fold's totals and region maps (pre, one layer, post).
[[gnu::always_inline]] inline StepTime finish_step(const StepSums& total, const QueueMap (&region)[3], std::int64_t layers, double c, double graph_launch_s,
                     const LaunchConfig& launch, std::int64_t batch_seqs) {
  using Region = StepPieces::Region;
  StepTime s;
  s.gpu_s = total.gpu_s;
  s.roofline_s = total.roofline_s;
  s.flops = total.flops;
  s.comm_s = total.comm_s;
  s.bytes = total.bytes;
  s.kernels = total.kernels;
  s.launch_s = launch.cuda_graphs ? graph_launch_s : static_cast<double>(s.kernels) * c;
  const double host_pre = launch.host_overhead_per_step_s;
  const double host_post = static_cast<double>(batch_seqs) * launch.host_overhead_per_seq_s;
  s.host_s = host_pre + host_post;

  // From the end of host_pre: the graph launch (if any) before the first kernel, GPU idle.
  double h = launch.cuda_graphs ? graph_launch_s : 0.0, f = 0.0;
  apply(region[static_cast<int>(Region::pre)], h, f);
  apply(power(region[static_cast<int>(Region::body)], layers), h, f);
  apply(region[static_cast<int>(Region::post)], h, f);

  const double gpu_path_s = f;  // from the end of host_pre to the last kernel's completion
  s.launch_wait_s = std::max(0.0, gpu_path_s - s.gpu_s);
  s.launch_bound = s.launch_s > s.gpu_s;
  s.time_s = launch.overlap_host ? std::max(s.host_s, gpu_path_s) : s.host_s + gpu_path_s;
  return s;
}

}  // namespace

void summarize_step(const std::vector<Op>& ops, const std::vector<KernelTime>& times, double per_kernel_s,
                    double kernel_gap_s, StepPieces& p) {
  using Region = StepPieces::Region;
  p.num_pieces = 0;
  p.num_context = 0;
  p.per_kernel_s = per_kernel_s;
  p.kernel_gap_s = kernel_gap_s;
  p.layers = 0;
  const auto new_piece = [&p](std::uint8_t context, Region r) -> StepPieces::Piece& {
    if (p.num_pieces == StepPieces::kMaxPieces) throw std::logic_error("summarize_step: more pieces than StepPieces holds");
    StepPieces::Piece& piece = p.pieces[p.num_pieces++];
    piece = {context, r, false, {}, {}};
    return piece;
  };
  // Regions: leading ops outside the layers, then one layer's ops (per_layer > 0), then the rest.
  std::size_t body_begin = 0;
  while (body_begin < ops.size() && ops[body_begin].per_layer == 0) ++body_begin;
  std::size_t body_end = body_begin;
  while (body_end < ops.size() && ops[body_end].per_layer > 0) ++body_end;
  if (body_end > body_begin) p.layers = ops[body_begin].count / ops[body_begin].per_layer;
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const Region r = j < body_begin ? Region::pre : (j < body_end ? Region::body : Region::post);
    if (depends_on_context(ops[j])) {
      if (p.num_context == StepPieces::kMaxContextOps) {
        throw std::logic_error("summarize_step: more context ops than StepPieces holds");
      }
      p.context[p.num_context] = {ops[j], times[j]};
      new_piece(p.num_context++, r);
      continue;
    }
    // A context-free op extends the run before it, unless a context op or a region boundary intervenes.
    const bool extends = p.num_pieces > 0 && p.pieces[p.num_pieces - 1].context == StepPieces::kRun &&
                         p.pieces[p.num_pieces - 1].region == r;
    StepPieces::Piece& run = extends ? p.pieces[p.num_pieces - 1] : new_piece(StepPieces::kRun, r);
    StepSums sums;
    QueueMap map;
    op_piece(ops[j], times[j], launches_in(ops[j], r), per_kernel_s, kernel_gap_s, sums, map);
    add(run.sums, sums);
    run.map = compose(run.map, map);
  }
  // The fold's constant part (see StepPieces::folded), in combine_pieces' order.
  p.first_context = p.num_pieces;
  p.folded_sums = {};
  p.folded.fill({});
  bool open[3] = {true, true, true};  // no context op yet in this region
  for (std::uint8_t i = 0; i < p.num_pieces; ++i) {
    StepPieces::Piece& piece = p.pieces[i];
    const auto r = static_cast<std::size_t>(piece.region);
    if (piece.context != StepPieces::kRun) {
      if (p.first_context == p.num_pieces) p.first_context = i;
      open[r] = false;
      continue;
    }
    if (p.first_context == p.num_pieces) add(p.folded_sums, piece.sums);
    piece.map_folded = open[r];
    if (open[r]) p.folded[r] = compose(p.folded[r], piece.map);
  }
}

StepTime combine_pieces(const StepPieces& p, const HwProfile& hw, const LaunchConfig& launch, std::int64_t batch_seqs) {
  const double c = p.per_kernel_s;
  // From the constant part summarize_step folded; the rest in op order, as if from the start.
  StepSums total = p.folded_sums;
  QueueMap region[3] = {p.folded[0], p.folded[1], p.folded[2]};  // pre, one layer, post
  for (std::size_t i = p.first_context; i < p.num_pieces; ++i) {
    const StepPieces::Piece& piece = p.pieces[i];
    QueueMap& to = region[static_cast<int>(piece.region)];
    if (piece.context == StepPieces::kRun) {
      add(total, piece.sums);
      if (!piece.map_folded) to = compose(to, piece.map);
      continue;
    }
    const StepPieces::ContextOp& ctx = p.context[piece.context];
    StepSums sums;
    QueueMap map;
    op_piece(ctx.op, ctx.time, launches_in(ctx.op, piece.region), c, p.kernel_gap_s, sums, map);
    add(total, sums);
    to = compose(to, map);
  }
  return finish_step(total, region, p.layers, c, hw.graph_launch_s, launch, batch_seqs);
}

StepTime DecodeStepForm::price(double kv_tokens, const LaunchConfig& launch, std::int64_t batch_seqs,
                               LogGrid2D::Hint& hint) const {
  // set_decode_attention_work (set_attention_work with pairs = kv_tokens: one query token each).
  const double flops = four_heads_x_dim_ * kv_tokens / kernels_;
  const double bytes = (q_io_bytes_ + kv_tokens * 2.0 * kv_width_ * kv_bytes_) / kernels_;
  // estimate_decode_attention: decode_frac on the grid, then roofline (no dequantization time).
  const double frac = grid_frac(kv_tokens, hint);
  KernelTime k;
  if (frac > 0.0) {
    k = roofline_measured(flops, bytes, bandwidth_, overhead_s_, 0.0, peak_, frac);
  } else {
    Op op = attn_;
    op.flops = flops;
    op.bytes = bytes;
    op.attn_kv_tokens = kv_tokens;
    k = roofline(op, bytes, *hw_, base_, 0.0, peak_, frac);
  }
  // combine_pieces from the attention op (the first context op) on.
  StepSums total = folded_sums_;
  QueueMap region[3] = {folded_[0], folded_[1], folded_[2]};
  StepSums sums;
  QueueMap map;
  op_piece(count_, flops, false, k, launches_, c_, gap_, sums, map);
  add(total, sums);
  QueueMap& to = region[static_cast<int>(region_)];
  to = compose(to, map);
  for (std::size_t i = 0; i < num_runs_; ++i) {
    const Run& run = runs_[i];
    add(total, run.sums);
    if (!run.map_folded) {
      QueueMap& r = region[static_cast<int>(run.region)];
      r = compose(r, run.map);
    }
  }
  return finish_step(total, region, layers_, c_, hw_->graph_launch_s, launch, batch_seqs);
}

// Apart and not inlined: price() keeps fewer values live across the two log() calls (the
// inlined lookup spilled ~20 registers around them).
[[gnu::noinline]] double DecodeStepForm::grid_frac(double kv_tokens, LogGrid2D::Hint& hint) const {
  const double context = kv_tokens / seqs_;
  const double work = units_ * context;
  return work < min_work_ ? grid_->at(min_work_, context, hint) * work / min_work_ : grid_->at(work, context, hint);
}

bool DecodeStepForm::build(const StepPieces& p, const HwProfile& hw, Dtype base, const AttentionWorkRates& rates,
                           std::int64_t decode_seqs) {
  ready_ = false;
  if (p.num_context != 1 || p.first_context >= p.num_pieces || decode_seqs <= 0) return false;
  const Op& op = p.context[0].op;
  // estimate_decode_attention's path through decode_frac and roofline, with kv_dequant_s 0.
  if (op.kind != OpKind::attention_decode || op.attn_seqs != decode_seqs || integer_kv_cache(op.attn_kv_dtype) ||
      per_query_head_factor(op, hw) > 0.0) {
    return false;
  }
  const LogGrid2D& grid = decode_grid(op, hw);
  if (grid.empty()) return false;
  decode_seqs_ = decode_seqs;
  hw_ = &hw;
  base_ = base;
  attn_ = op;
  four_heads_x_dim_ = 4.0 * rates.heads_x_dim;
  q_io_bytes_ = rates.q_io_bytes;
  kv_width_ = rates.kv_width;
  kv_bytes_ = rates.kv_bytes;
  kernels_ = rates.kernels;
  units_ = static_cast<double>(op.attn_seqs * std::max<std::int64_t>(1, op.attn_kv_heads));
  seqs_ = static_cast<double>(op.attn_seqs);
  grid_ = &grid;
  min_work_ = grid.xs().front();
  peak_ = peak_rate(op, hw, base);
  bandwidth_ = hw.hbm_bandwidth_bytes_per_s;
  overhead_s_ = hw.kernel_overhead_s;
  const StepPieces::Piece& at = p.pieces[p.first_context];
  count_ = op.count;
  region_ = at.region;
  launches_ = launches_in(op, at.region);
  c_ = p.per_kernel_s;
  gap_ = p.kernel_gap_s;
  layers_ = p.layers;
  folded_sums_ = p.folded_sums;
  folded_ = p.folded;
  num_runs_ = 0;
  for (std::size_t i = p.first_context + 1; i < p.num_pieces; ++i) {
    const StepPieces::Piece& piece = p.pieces[i];
    runs_[num_runs_++] = {piece.sums, piece.map, piece.region, piece.map_folded};
  }
  ready_ = true;
  return true;
}

StepTime combine_step(const std::vector<Op>& ops, const std::vector<KernelTime>& times, const HwProfile& hw,
                      const LaunchConfig& launch, std::int64_t batch_seqs) {
  thread_local StepPieces pieces;  // reused: the exact path runs this once per simulated iteration
  summarize_step(ops, times, launch.per_kernel_s(hw), hw.dependent_kernel_gap_s, pieces);
  return combine_pieces(pieces, hw, launch, batch_seqs);
}

}  // namespace servesim
