// HwProfile: what the cost model knows about one GPU: datasheet peaks, efficiency curves
// (from published microbenchmarks or our calibrators) and where every number came from.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/hw/efficiency_table.hpp"
#include "sim/hw/measured_tables.hpp"
#include "sim/hw/interconnect.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

struct Provenance {
  std::string kind;  // "derived" (datasheet + published measurements) or "measured" (our calibrators)
  std::string method;
  std::vector<std::string> sources;
  // Filled for measured profiles.
  std::string gpu, driver, cuda, date, command;
};

struct HwProfile {
  std::string name;
  std::string display_name;
  std::string architecture;  // ampere, ada, hopper, blackwell
  int sm_count = 0;
  double memory_bytes = 0.0;
  double hbm_bandwidth_bytes_per_s = 0.0;
  double l2_bytes = 0.0;
  // Dense peak per dtype (tensor cores where they exist); 0 = the GPU has no such unit.
  std::array<double, kNumDtypes> peak_flops_per_s{};  // indexed by Dtype
  double vector_fp32_flops_per_s = 0.0;      // CUDA-core FP32, for elementwise work
  double host_link_bytes_per_s = 0.0;        // PCIe, one direction, effective
  double nvlink_bytes_per_s = 0.0;           // per GPU, one direction; 0 without NVLink
  double kernel_launch_s = 0.0;              // host cost of one eager kernel launch
  double graph_launch_s = 0.0;               // host cost of launching one captured CUDA graph
  double kernel_overhead_s = 0.0;            // GPU-side fixed cost per kernel (ramp-up, tail, gap)
  // GPU idle between two dependent kernels of a step, beyond kernel_overhead_s: the calibrators
  // time one kernel repeated back to back; whole models (different kernels, each waiting for the
  // last) leave more. Fitted to whole-model steps (servesim calibrate independent); 0 = not measured.
  double dependent_kernel_gap_s = 0.0;

  EfficiencyTable gemm_compute_frac_by_m;              // achieved/peak FLOP rate vs GEMM M (tokens)
  // FP4 tensor-core GEMMs (block-scaled NVFP4/MXFP4) reach a different fraction of their peak
  // than 16/8-bit ones at the same M (4x the MMA rate per SM makes per-tile fixed costs weigh
  // more). Optional; empty = gemm_compute_frac_by_m serves FP4 as well.
  EfficiencyTable gemm_compute_frac_by_m_fp4;
  EfficiencyTable memory_bw_frac_by_bytes;             // achieved/peak bandwidth vs bytes per kernel
  EfficiencyTable attention_decode_bw_frac_by_bytes;   // decode attention (KV streaming) vs KV bytes
  EfficiencyTable attention_prefill_compute_frac_by_tokens;  // flash-style prefill vs KV tokens per launch

  // Measured tables (calibrated profiles only; empty in derived ones). When present they replace
  // the generic curves above for their op kind: see cost_model.cpp.
  std::array<GemmTable, kNumDtypes> gemm_tables;   // indexed by Dtype: roofline fraction over (m; n, k)
  LogGrid2D attention_decode_frac;        // roofline fraction over (KV head-tokens per launch, context)
  // Paged decode attention over a quantized KV cache, measured as its time over the bf16 cache's
  // on the same shapes (calibration.attention_decode_kv, `servesim calibrate kv-decode`): the
  // median over the measured points, per cache format; 0 = not measured. The measured kernel is a
  // CUDA-core paged kernel (the standard family's); cost_model.cpp applies the integer formats'.
  struct KvDecodeRatios {
    double fp8 = 0.0, int8 = 0.0, int4 = 0.0;
    std::string source;
    double of(Dtype kv) const { return kv == Dtype::fp8 ? fp8 : kv == Dtype::int8 ? int8 : kv == Dtype::int4 ? int4 : 0.0; }
  };
  KvDecodeRatios kv_decode_time_over_bf16;
  // Paged decode attention by a kernel of one program per (sequence, query head), as TensorRT-LLM's
  // masked multi-head attention (which Llama 4's chunked layers run on Hopper: Op::attn_pqh_group),
  // measured as its time over the grouped kernel's (one program per KV head serving its query
  // heads) on the same shapes (calibration.attention_decode_per_query_head, `servesim calibrate
  // decode-per-query-head`): per KV cache format (16-bit, fp8) and query heads per KV head, a
  // ratio over (batch at kv_heads KV heads, context), bilinear in the logs and clamped at the
  // edges. Empty: those layers cost what the grouped kernel does.
  struct DecodePerQueryHead {
    struct Grid {
      int group = 0;
      LogGrid2D ratio;  // over (batch, context)
    };
    std::array<std::vector<Grid>, 2> by_format;  // [0]: 16-bit cache, [1]: fp8; groups increasing
    double kv_heads = 8.0;                       // KV heads of the measured shapes
    std::string source;
    bool empty() const { return by_format[0].empty() && by_format[1].empty(); }
    static int format_index(Dtype kv) {
      return kv == Dtype::bf16 || kv == Dtype::fp16 ? 0 : kv == Dtype::fp8 ? 1 : -1;
    }
    // The ratio for `units` (sequences x KV heads) of `context` tokens each at `group` query heads
    // per KV head on a `kv` cache; between two measured groups linear in the group; 0 where not
    // measured (the format, or a group outside the measured ones).
    double ratio(Dtype kv, int group, double units, double context) const {
      const int f = format_index(kv);
      if (f < 0) return 0.0;
      const std::vector<Grid>& grids = by_format[static_cast<std::size_t>(f)];
      const double batch = units / kv_heads;
      for (std::size_t i = 0; i < grids.size(); ++i) {
        if (grids[i].group == group) return grids[i].ratio.at(batch, context);
        if (grids[i].group > group) {
          if (i == 0) return 0.0;
          const Grid& lo = grids[i - 1];
          const double a = lo.ratio.at(batch, context), b = grids[i].ratio.at(batch, context);
          return a + (b - a) * static_cast<double>(group - lo.group) / static_cast<double>(grids[i].group - lo.group);
        }
      }
      return 0.0;
    }
  };
  DecodePerQueryHead decode_per_query_head;
  // Grouped (MoE) GEMMs: the measured kernel's speed relative to the dense-equivalent GEMM the
  // cost model times it as (sim/hw/moe_cost.hpp), over tokens per active expert; may exceed 1.
  EfficiencyTable grouped_gemm_frac_by_tokens_per_expert;
  // The same for the fp8 grouped kernel (per-tensor or row-wise scales, QuantScheme::fp8) against
  // its fp8 dense equivalent, where measured apart (calibration.grouped_gemm.fp8_frac_by_tokens_per_expert);
  // where empty, fp8 grouped GEMMs take the table above.
  EfficiencyTable grouped_gemm_fp8_frac_by_tokens_per_expert;
  // The measured grouped kernel's fixed time per launch beyond kernel_overhead_s, with its table
  // (calibration.grouped_gemm.fixed_s, fp8_fixed_s for the fp8 kernel; 0: none): at one token
  // count, a grouped GEMM's time grows linearly with its expert count from about this much
  // (torch's kernels on the H100: about 10 us, its setup kernel and the launch's ramp), which a
  // dense equivalent of as many bytes does not take; it is what leaves 16-32-expert launches
  // slower per expert than 128-expert ones (docs/validation.md section 6).
  double grouped_gemm_fixed_s = 0.0;
  double grouped_gemm_fp8_fixed_s = 0.0;

  // Measured tables of other attention kernel families (index: AttentionKernel; [standard] stays
  // empty, it is the tables above). An engine that runs such a family uses them when present and
  // the standard tables otherwise.
  struct AttentionKernelTables {
    LogGrid2D decode_frac;                           // as attention_decode_frac
    // Prefill compute fraction over FLOPs per launch (not KV tokens: a short prefill is
    // latency-bound whatever its head count, and FLOPs carry the head count).
    EfficiencyTable prefill_compute_frac_by_flops;
    std::string source;                              // where the measurements came from
    // The head dimension decode_frac was measured at (0: not recorded), and decode grids of
    // other head dimensions. A framework picks its kernel by head dimension: on the H200, PyTorch
    // SDPA decode at head_dim 96 takes the time of 128 at short contexts and 0.78 of it at long
    // ones, so a grid of one head dimension does not carry to another.
    std::int64_t head_dim = 0;
    struct HeadDimGrid {
      std::int64_t head_dim;
      LogGrid2D decode_frac;
    };
    std::vector<HeadDimGrid> other_head_dims;
    // Head dimensions prefill runs a kernel of its own for, increasing (empty: every one); a head
    // dim between two runs the larger one's kernel, padded, and prefill_compute_frac_by_flops
    // counts FLOPs at that tile (prefill_head_dim_tile).
    std::vector<std::int64_t> prefill_head_dim_tiles;
    bool empty() const { return decode_frac.empty(); }
    // The decode grid for head dimension `d`: its own, else the nearest measured head dimension's
    // (by ratio; a tie goes to the larger), else decode_frac.
    const LogGrid2D& decode_frac_for(std::int64_t d) const {
      if (other_head_dims.empty() || d <= 0 || d == head_dim || head_dim <= 0) return decode_frac;
      for (const auto& g : other_head_dims) {
        if (g.head_dim == d) return g.decode_frac;
      }
      const auto distance = [d](std::int64_t m) { return std::abs(std::log(static_cast<double>(d) / static_cast<double>(m))); };
      const LogGrid2D* best = &decode_frac;
      std::int64_t best_dim = head_dim;
      for (const auto& g : other_head_dims) {
        const double dist = distance(g.head_dim), best_dist = distance(best_dim);
        if (dist < best_dist || (dist == best_dist && g.head_dim > best_dim)) best = &g.decode_frac, best_dim = g.head_dim;
      }
      return *best;
    }
  };
  std::array<AttentionKernelTables, kAttentionKernels> attention_kernel_tables;
  // The head dim a prefill kernel of head dim `d` computes at: the smallest of `tiles` >= d, else d.
  static std::int64_t prefill_head_dim_tile(const std::vector<std::int64_t>& tiles, std::int64_t d) {
    for (std::int64_t t : tiles) {
      if (t >= d) return t;
    }
    return d;
  }
  const AttentionKernelTables* attention_tables(AttentionKernel k) const {
    k = table_family(k);
    const auto& t = attention_kernel_tables[static_cast<std::size_t>(k)];
    return k == AttentionKernel::standard || t.empty() ? nullptr : &t;
  }

  // Weight-only quantized GEMMs measured by our calibrator (calibrate/src/bench_quant.cu), per
  // weight width (weight_only_tables[0]: 4-bit, [1]: 8-bit): roofline fractions of the fused
  // GEMV-class kernel (measured for M <= fused_max_m, the fraction at fused_max_m holding past it)
  // and of dequantize-then-GEMM (both kernels).
  // Empty tables: the analytic model in cost_model.cpp.
  struct WeightOnlyTables {
    GemmTable fused;
    double fused_max_m = 0.0;
    GemmTable dequant_gemm;
  };
  std::array<WeightOnlyTables, 2> weight_only_tables;
  const WeightOnlyTables& weight_only_table(int bits) const { return weight_only_tables[bits <= 4 ? 0 : 1]; }

  // Quantized GEMM kernels an engine may run (QuantKernel), measured on this GPU
  // (calibration.quant_kernels, written by `servesim calibrate quant-kernels`): per kernel and
  // format (quant_format), the roofline fraction over (m; n, k) against the op's own bytes and
  // FLOPs at the peak it computes at (the 8-bit peak for w8a8 kernels, the 16-bit one for
  // weight-only), with `launches` kernels per call each paying the fixed overhead (torch._int_mm
  // with its scale epilogue in torch ops: 4). Empty: the kernel has no table here.
  // A kernel we cannot run on the device (Marlin) may instead carry a published kernel benchmark
  // as `memory_frac_vs_dense`: the weight-streaming rate of the fused analytic model relative to
  // the profile's 16-bit GEMM at the same shape (published speedup over the ideal byte ratio).
  struct QuantKernelTable {
    GemmTable frac;
    double memory_frac_vs_dense = 0.0;  // 0: not given
    int launches = 1;
    std::string source;
    bool empty() const { return frac.empty() && memory_frac_vs_dense <= 0.0; }
  };
  std::array<std::array<QuantKernelTable, kNumQuantFormats>, kNumQuantKernels> quant_kernel_tables;
  // Kernel k's entry for scheme q, or a stand-in's: Machete without one takes Marlin's (no
  // published small-M Machete timing on this GPU; pytorch/FBGEMM PR #3259 measured Marlin faster
  // than Machete up to batch 32 on H100, so Marlin's rate is the upper bound).
  const QuantKernelTable* quant_kernel_table(QuantKernel k, QuantScheme q) const {
    const auto f = quant_format(q);
    if (k == QuantKernel::auto_ || !f) return nullptr;
    const QuantKernelTable& t = quant_kernel_tables[static_cast<std::size_t>(k)][*f];
    if (!t.empty()) return &t;
    if (k == QuantKernel::machete) return quant_kernel_table(QuantKernel::marlin, q);
    // vLLM's CUTLASS block-wise fp8 kernel without a table: the block-wise fp8 kernel measured on
    // this GPU (torch._scaled_mm's), not the per-tensor table (vLLM PR #11868 times CUTLASS
    // block-wise 1.3-2.6x slower than CUTLASS per-tensor at M 1-16).
    if (k == QuantKernel::cutlass_scaled_mm && q == QuantScheme::fp8_block) return quant_kernel_table(QuantKernel::torch_scaled_mm_blockwise, q);
    return nullptr;
  }

  // Slowdown when two kernels share the GPU, each against running alone (1 = no interference).
  double contention_copy_copy_slowdown = 0.0;  // two bandwidth-bound kernels; 0 = not measured
  double contention_gemm_copy_slowdown = 0.0;  // compute-bound next to bandwidth-bound

  // Weight-only kernels unpack and scale weights on CUDA cores (optional `quantized` block; when
  // absent, derived as vector_fp32_flops_per_s over the ALU operations per weight: ~4 for 4-bit
  // (shift/mask, convert, zero-point, scale FMA), ~2 for 8-bit (convert, scale FMA)).
  double dequant_int4_weights_per_s = 0.0;
  double dequant_int8_weights_per_s = 0.0;
  double dequant_weights_per_s(int bits) const {
    if (bits <= 4) return dequant_int4_weights_per_s > 0 ? dequant_int4_weights_per_s : vector_fp32_flops_per_s / 4.0;
    return dequant_int8_weights_per_s > 0 ? dequant_int8_weights_per_s : vector_fp32_flops_per_s / 2.0;
  }

  // Links between GPUs for tensor/pipeline parallelism and KV transfer. Filled from the optional
  // "interconnect" object, with defaults derived from host_link and nvlink (see hw_io.cpp).
  Interconnect interconnect;

  Provenance provenance;

  double peak_flops(Dtype d) const { return peak_flops_per_s[static_cast<std::size_t>(d)]; }
  bool supports(Dtype d) const { return peak_flops(d) > 0.0; }
  // The GEMM compute-fraction curve for GEMMs that run at `d`'s tensor-core rate.
  const EfficiencyTable& gemm_frac_curve(Dtype d) const {
    return d == Dtype::fp4 && !gemm_compute_frac_by_m_fp4.empty() ? gemm_compute_frac_by_m_fp4 : gemm_compute_frac_by_m;
  }
  // Arithmetic intensity (FLOP/byte) above which a kernel at full efficiency is compute-bound.
  double ridge_point(Dtype d) const { return peak_flops(d) / hbm_bandwidth_bytes_per_s; }
};

}  // namespace servesim
