// The op list of one iteration: what a batch of prefill chunks and decode tokens asks the GPU
// to do, as FLOPs and bytes per op kind. Pure functions of (ModelSpec, BatchShape, dtypes).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/model/model_spec.hpp"
#include "sim/model/quant.hpp"

namespace servesim {

enum class OpKind {
  embedding, norm, gemm, rope, kv_write, attention_prefill, attention_decode, elementwise, sampler,
  all_reduce, all_gather,  // tensor-parallel communication, timed by the interconnect model
  grouped_gemm,            // mixture-of-experts: one launch runs every active expert's GEMM
  all_to_all               // expert-parallel dispatch and combine, timed by the interconnect model
};
inline bool is_communication(OpKind k) {
  return k == OpKind::all_reduce || k == OpKind::all_gather || k == OpKind::all_to_all;
}

// Which attention kernel family an engine runs. The hardware profile's own tables describe
// `standard` (its calibrated or published kernel); a profile may carry measured tables for other
// families (`sdpa`: PyTorch scaled_dot_product_attention, flash/cuDNN backends), used when present.
// `sdpa_packed`: one SDPA call over the whole batch packed into one sequence under a block-diagonal
// mask (transformers' continuous batching with paged|sdpa): every query token is scored against
// every cached token of the batch, after the cache is gathered; timed with the sdpa tables.
enum class AttentionKernel : std::uint8_t { standard, sdpa, sdpa_packed };
inline constexpr std::size_t kAttentionKernels = 3;
// The family whose measured tables time `k`.
inline AttentionKernel table_family(AttentionKernel k) { return k == AttentionKernel::sdpa_packed ? AttentionKernel::sdpa : k; }
const char* attention_kernel_name(AttentionKernel k);

// Where an op runs when layers are split into pipeline stages: every stage (per layer), only the
// first stage (embedding) or only the last (final norm, LM head, sampling).
enum class Placement : std::uint8_t { layer, first_stage, last_stage };
const char* op_kind_name(OpKind k);

// One kind of kernel in the iteration; `count` identical launches (e.g. once per layer).
// flops and bytes are per launch. Ops come in execution order: ops before the first per-layer op,
// the layer body (per_layer > 0: launches per layer, count = per_layer x layers), ops after it.
struct Op {
  const char* name;
  OpKind kind;
  std::int64_t count = 1;
  std::int64_t per_layer = 0;
  QuantScheme quant = QuantScheme::none;  // GEMMs on quantized weights pick their kernel by this
  QuantKernel quant_kernel = QuantKernel::auto_;  // ... and by the kernel the engine runs for it
  double flops = 0.0;
  double bytes = 0.0;
  // GEMM shape (C[m,n] = A[m,k] * W[k,n]); zero for other kinds.
  std::int64_t m = 0, n = 0, k = 0;
  // Attention: number of sequences, KV heads and tokens of KV read, for efficiency lookups.
  std::int64_t attn_seqs = 0;
  std::int64_t attn_kv_heads = 0;
  std::int64_t attn_head_dim = 0;  // picks the kernel family's tables of this head dimension
  double attn_kv_tokens = 0.0;
  AttentionKernel attn_kernel = AttentionKernel::standard;
  Dtype attn_kv_dtype = Dtype::bf16;  // the KV cache's format (int8/int4: dequantized as read)
  // Decode attention on an integer cache: how many programs dequantize each cached element. 1: a
  // program per sequence and KV head serves its query-head group; the group size (query heads per
  // KV head) where the engine's kernel runs a program per query head
  // (KernelPlan::decode_attention_per_query_head).
  int attn_dequant_copies = 1;
  // Decode attention of a model whose chunked-attention layers the engine decodes with a kernel of
  // one program per (sequence, query head) (KernelPlan::chunked_decode_attention_per_query_head):
  // query heads per KV head (0: every layer runs the grouped kernel), those layers' share of this
  // op's KV bytes (the op is the layers' average) and their context per sequence. The hardware
  // profile's calibration.attention_decode_per_query_head prices them (cost_model.cpp); without it
  // they cost what the grouped kernel does.
  int attn_pqh_group = 0;
  double attn_pqh_share = 0.0;
  double attn_pqh_context = 0.0;
  // Streaming ops (norms, rope, KV writes, elementwise, embedding, sampler): the ceiling of this
  // engine's kernels as a fraction of the profile's streaming plateau (KernelPlan::elementwise_bw_frac).
  double stream_efficiency = 1.0;
  // Attention without a measured table for its exact kernel: its compute rate as a fraction of the
  // family's table (KernelPlan::packed_attention_compute_frac for the packed, masked call).
  double compute_efficiency = 1.0;
  // Attention prefill: the engine kernel's plateau as a fraction of the 16-bit peak
  // (KernelPlan::prefill_attention_peak_frac); 0: the table's own plateau.
  double compute_plateau_frac = 0.0;
  // Communication ops: GPUs in the collective (bytes is the message size per GPU), and whether the
  // engine's custom all-reduce kernel runs it (KernelPlan::custom_allreduce_max_bytes).
  int comm_gpus = 0;
  bool comm_custom = false;
  // grouped_gemm: experts with at least one token (m is then the tokens per such expert, n and k
  // one expert's weight shape), and the rows the kernel computes over the rows it is given (its
  // last M tile per expert is partly empty when routing leaves uneven counts): FLOPs stay the
  // useful ones, the compute time counts the padded tiles.
  std::int64_t groups = 0;
  double tile_padding = 1.0;
  Placement placement = Placement::layer;
};

// Aggregated shape of one iteration's batch. Sums (not per-sequence lists) are enough for the
// FLOP and byte counts, which keeps op construction O(1) per iteration.
struct BatchShape {
  std::int64_t prefill_seqs = 0;        // sequences with a prefill chunk in this iteration
  std::int64_t prefill_tokens = 0;      // new tokens across those chunks
  double prefill_attn_pairs = 0.0;      // sum over chunks of n*c + n*(n+1)/2 (causal query-key pairs)
  double prefill_kv_tokens = 0.0;       // sum over chunks of c + n (KV tokens each chunk reads)
  std::int64_t prefill_sampled = 0;     // chunks that finish their prompt and sample a token
  std::int64_t decode_seqs = 0;         // sequences producing one token each
  double decode_kv_tokens = 0.0;        // sum over decode sequences of context length (incl. new tokens)
  // Query tokens of each decoding sequence: 1, or k + 1 in a speculative verify pass (the last
  // token and k draft tokens, each attending causally to the cache and the ones before it, each
  // scored by the LM head).
  std::int64_t decode_query_tokens = 1;

  std::int64_t decode_tokens() const { return decode_seqs * decode_query_tokens; }
  std::int64_t total_tokens() const { return prefill_tokens + decode_tokens(); }
  // Rows of logits: one per prefill chunk that samples, one per decode query token.
  std::int64_t sampled_seqs() const { return prefill_sampled + decode_tokens(); }
  std::int64_t total_seqs() const { return prefill_seqs + decode_seqs; }
  // Causal query-key pairs of the decode queries: each sequence's j-th query (j = 1..q) sees its
  // context less the q - j queries after it.
  double decode_attn_pairs() const {
    const double q = static_cast<double>(decode_query_tokens);
    return q * decode_kv_tokens - static_cast<double>(decode_seqs) * q * (q - 1.0) / 2.0;
  }

  // Adds a prefill chunk of `new_tokens` after `context_tokens` already in the KV cache.
  void add_prefill(std::int64_t new_tokens, std::int64_t context_tokens, bool samples);
  // Adds a decoding sequence whose KV cache holds `context_tokens` before this step.
  void add_decode(std::int64_t context_tokens);
};

// `weights`/`activations` are the 16-bit base dtype; `quant` changes the layers' projections
// (quant_scope: all of them, or the routed experts only).
struct Precision {
  Dtype weights = Dtype::bf16;
  Dtype activations = Dtype::bf16;
  Dtype kv_cache = Dtype::bf16;
  QuantScheme quant = QuantScheme::none;
  std::int64_t group_size = 128;  // w4a16 schemes
  // w8a8 activation scales (quantization.activation_scales): static, one per tensor fixed at
  // calibration (the quantize pass is elementwise and an engine may fold it into the kernel that
  // produces the input); dynamic, one per token computed at run time (the quantize kernel reduces
  // each row first and writes its fp32 scale; no producer fuses it).
  bool dynamic_activation_scales = false;
  // Which weights `quant` applies to (quantization.scope); experts: the routed experts' grouped
  // GEMMs (and their inputs, for a w8a8 scheme), every other projection in the base dtype.
  QuantScope quant_scope = QuantScope::all;
};

// How an engine cuts one decoder layer into kernels (engine profiles, scenarios/engines/). The
// defaults are the walking skeleton's op list. Unfused elementwise chains (norm, rope, act)
// re-stream their tensor in every kernel; split kernels (attention, sampler) share the work.
struct KernelPlan {
  int qkv_gemms = 1;              // 1: fused QKV projection; 2: q and fused kv; 3: q, k, v
  int gate_up_gemms = 1;          // 1: fused gate+up; 2: separate
  int norm_kernels = 1;           // kernels per RMSNorm (eager PyTorch: ~7)
  bool fused_add_norm = false;    // residual add folded into the next norm (vLLM fused_add_rms_norm)
  int rope_kernels = 1;           // 0: fused into the attention / KV-write kernel
  int kv_write_kernels = 1;       // 0: fused into rope or attention
  // Models that normalize each query and key head before RoPE (Qwen3's q_norm / k_norm): kernels
  // per layer that apply it, in place on the query and key heads. TensorRT-LLM: 1 (its Qwen3
  // attention runs fused_qk_norm_rope, which also applies the RoPE its attention kernel then
  // skips). 0: not priced (engines whose kernels for it were not read).
  int qk_norm_kernels = 0;
  int attention_kernels = 1;      // 2: split-KV decode plus a combine kernel
  int act_kernels = 1;            // 1: fused silu_and_mul; 2: silu, then mul; 0: in the GEMM epilogue
  bool kv_cache_concat = false;   // HF DynamicCache: torch.cat copies the whole cache every step
  int extra_kernels_per_layer = 0;  // copies, casts, contiguous() on activations
  int sampler_kernels = 1;
  AttentionKernel attention_kernel = AttentionKernel::standard;  // the attention kernel family
  // The decode attention kernel runs one program per (sequence, query head), as TensorRT-LLM's
  // masked multi-head attention and the kernels derived from it (QServe's), so a grouped-query
  // model's KV head is read, and an integer cache dequantized, once per query head of its group.
  // false: one program per (sequence, KV head) serves the group (servesim's own kernel,
  // FlashInfer, FlashAttention's decode).
  bool decode_attention_per_query_head = false;
  // The layers of chunked attention (chunked_attention_layers: Llama 4's attention_chunk_size
  // layers) decode with one program per (sequence, query head) on the GPU at hand, the rest with
  // the grouped kernel: TensorRT-LLM's XQA (grouped) refuses chunked attention and masked
  // multi-head attention runs instead. Resolved per GPU architecture (resolve_quant_kernels) from
  // the engine key kernels_per_layer.chunked_attention_decode_per_query_head.
  bool chunked_decode_attention_per_query_head = false;
  // Bandwidth ceiling of the engine's elementwise kernels as a fraction of the profile's streaming
  // plateau (the calibrators' 16-byte vectorized kernels): PyTorch's eager kernels on broadcast and
  // strided views (rope's cos/sin, the norm weight, chunked gate/up) saturate lower; small, latency-
  // bound launches are unaffected. 1: as calibrated.
  double elementwise_bw_frac = 1.0;
  // sdpa_packed: SDPA with an explicit dense mask runs PyTorch's memory-efficient kernel, not the
  // causal flash kernel the SDPA prefill table measured; its compute rate as a fraction of that
  // table's (fitted to transformers' generate_batch prefill steps). 1: as the table.
  double packed_attention_compute_frac = 1.0;
  // The engine's own prefill (context) attention kernel, where the profile's table is another
  // kernel's: its compute rate at long prompts as a fraction of the 16-bit tensor-core peak (never
  // below the table's). The table's plateau is raised to it; short, latency-bound prompts keep
  // the table's rate (cost_model.cpp). 0: the table as measured. Not applied to MLA.
  double prefill_attention_peak_frac = 0.0;
  // Mixture-of-experts layers: launches that score, select and sort the token copies (vLLM:
  // topk_softmax and moe_align_block_size), and launches of an explicit permutation (0: the
  // grouped GEMM reads its rows through the sorted ids, as vLLM's fused_moe; a plain PyTorch
  // block gathers the copies and weights them in kernels of their own).
  int moe_route_kernels = 2;
  int moe_permute_kernels = 0;
  // Attention DP (MoeRouting::attention_dp > 1): how the MoE layers move tokens between ranks.
  // false: a deduplicated all-to-all (each token once to every GPU holding one of its experts;
  // SGLang/DeepEP). true: every rank all-gathers all ranks' tokens with their expert choices and
  // the experts' output is reduce-scattered back (TensorRT-LLM's CutlassFusedMoE without an
  // MNNVL/DeepEP all-to-all; engine key kernels_per_layer.attention_dp_moe_comm).
  bool moe_dp_allgather = false;
  // Rows of the smallest token tile of the engine's grouped (MoE) GEMMs on the GPU at hand: an
  // expert's tokens are padded to the next tile of moe_token_tile_rows x 2^i rows (at most 128), and
  // past 128 to whole 128-row tiles. 128: every expert's tokens in 128-row tiles. Resolved per GPU
  // architecture (resolve_quant_kernels) from the engine key kernels_per_layer.moe_token_tile_rows.
  int moe_token_tile_rows = 128;
  // FP8 w8a8: the GEMM inputs whose quantization the engine folds into the kernel that produces
  // them (a bitmask of InputQuantSite) instead of a quantize kernel of its own. Named by the GEMM
  // input, not counted, because each fusion removes a different tensor (the QKV and gate/up
  // inputs are hidden wide, the o_proj input q wide, the down input ffn wide) and moves the 8-bit
  // write into a different producer (norm, attention, activation). 0: four separate kernels.
  unsigned fused_fp8_input_quant = 0;
  // Tensor-parallel all-reduces of fewer bytes run the engine's own kernel instead of NCCL (vLLM's
  // custom all-reduce, one-shot or two-shot by size: 8 MiB on Hopper at TP 2 and 4), timed by the
  // GPU profile's measured `custom` curve where it has one; 0: NCCL at every size.
  double custom_allreduce_max_bytes = 0.0;
  // The GEMM kernel the engine runs per quantization scheme (index: QuantScheme) on the GPU at
  // hand, resolved from the engine profile's per-architecture `quant_kernels` (engine_profile.hpp);
  // auto_: servesim's generic choice. Dense (not grouped) layer GEMMs only.
  std::array<QuantKernel, kNumQuantSchemes> quant_kernels{};
  // The same for the routed experts' grouped GEMMs (`moe_quant_kernels`): the MoE kernel, which
  // may decide the activations' format (kernel_gemm_dtype); auto_: servesim's generic choice.
  std::array<QuantKernel, kNumQuantSchemes> moe_quant_kernels{};
};

// The four quantized GEMM inputs of a decoder layer and their producers: qkv (the input norm),
// o_proj (attention), gate_up (the post-attention norm), down (the gated activation).
enum class InputQuantSite : unsigned { qkv = 1u, o_proj = 2u, gate_up = 4u, down = 8u };
inline constexpr InputQuantSite kInputQuantSites[] = {InputQuantSite::qkv, InputQuantSite::o_proj,
                                                      InputQuantSite::gate_up, InputQuantSite::down};
inline const char* input_quant_site_name(InputQuantSite s) {
  switch (s) {
    case InputQuantSite::qkv: return "qkv";
    case InputQuantSite::o_proj: return "o_proj";
    case InputQuantSite::gate_up: return "gate_up";
    case InputQuantSite::down: return "down";
  }
  return "?";
}

// How the tokens of a mixture-of-experts layer spread over GPUs (ignored by dense models).
//  ep: expert-parallel GPUs (parallel.expert_parallel_size); routed experts are split over them.
//  load_imbalance: the busiest of those GPUs' routed token copies over the mean (1 = even);
//    the layer waits for that GPU.
//  attention_dp: the op list is one attention-DP rank's (ParallelConfig::enable_attention_dp):
//    its tokens are 1 / attention_dp of those the experts see, and it dispatches its own.
struct MoeRouting {
  std::int64_t ep = 1;
  double load_imbalance = 1.0;
  std::int64_t attention_dp = 1;
};

// One GEMM C[m,n] = A[m,k] W[k,n]: activations in precision.activations, weights in
// precision.weights, output in the activation dtype (16-bit for 8-bit inputs); a dense projection,
// so in the base dtype under quant_scope experts.
Op make_gemm_op(const char* name, std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k,
                const Precision& precision);

// Builds the iteration's ops into `out` (cleared first; reused to avoid allocation per iteration)
// for one GPU of a tensor-parallel group of `tp` GPUs: GEMMs, heads and the vocabulary are split
// (ModelSpec::sharded), and tp > 1 adds two all-reduces per layer (after the attention output
// projection and after the MLP down projection), one after the vocab-parallel embedding, and an
// all-gather of the logits. tp = 1 gives the single-GPU op list unchanged.
// Mixture-of-experts layers replace the MLP by a router GEMM, top-k selection, two grouped
// expert GEMMs with their activation and the weighted sum of the top-k outputs, shared experts,
// and with routing.ep > 1 an all-to-all dispatch before and combine after the experts (the
// tokens, replicated over the TP group, are split over the ep GPUs for it). MLA models run
// DeepSeek's attention (see push_mla_attention in ops.cpp); sliding-window layers read at most
// their window.
// Layers that differ (an MoE model's dense layers, sliding-window layers) are folded into the
// identical-layer body the launch queue needs: the dense layers' MLP runs before the body
// (count = dense layers) and the MoE ops in the body carry the MoE layers' share of the work
// (their launch overhead is counted for every layer: a few microseconds per step); attention
// carries the layer-average of its full and windowed work.
void build_iteration_ops(const ModelSpec& model, const BatchShape& batch, const Precision& precision,
                         std::vector<Op>& out, const KernelPlan& plan = KernelPlan{}, std::int64_t tp = 1,
                         const MoeRouting& routing = MoeRouting{});

// Layers of chunked attention (Llama 4's attention_chunk_size, on the RoPE layers; modelled as a
// sliding window of the chunk, ModelSpec::sliding_window): the llama4 family's windowed layers,
// 0 for every other model (Gemma's windows slide, they are not chunks).
inline std::int64_t chunked_attention_layers(const ModelSpec& m) {
  return m.family == "llama4" && m.has_sliding_window() ? m.sliding_window.layers : 0;
}

// What an attention op's work takes from the model, precision and plan for `q_tokens` query
// tokens (set_attention_work in ops.cpp), kept by a caller that rewrites the op every step.
struct AttentionWorkRates {
  double heads_x_dim = 0.0, q_io_bytes = 0.0, kv_width = 0.0, kv_bytes = 0.0;
  int kernels = 1;
};
// The decode attention op of `decode_seqs` sequences as their contexts grow (a decode run):
// refresh_context_op's arithmetic for it is set_decode_attention_work(op, rates, decode_seqs,
// kv_tokens), with `rates` from here once; false where refresh_context_op takes another formula
// (MLA, sliding windows).
bool decode_attention_rates(const ModelSpec& sharded, std::int64_t decode_seqs, const Precision& p, const KernelPlan& plan,
                            AttentionWorkRates& rates);
void set_attention_work(Op& attn, const AttentionWorkRates& rates, std::int64_t seqs, double kv_tokens, double pairs);
inline void set_decode_attention_work(Op& attn, const AttentionWorkRates& rates, std::int64_t decode_seqs, double kv_tokens) {
  set_attention_work(attn, rates, decode_seqs, kv_tokens, kv_tokens);
}

// Ops whose counts depend on how the batch's tokens split into sequences and contexts
// (attention; HF's KV concat). Every other op depends only on total_tokens() and sampled_seqs().
bool depends_on_context(const Op& op);
// Rewrites one such op of a list built by build_iteration_ops(full, b', p, ops, plan, tp) for a
// shape b' with the same total_tokens(), sampled_seqs() and presence of prefill and decode
// sequences as `b`, into what build_iteration_ops would build for `b`. `sharded` is
// full.sharded(tp, routing.ep), which the caller keeps: this runs once per simulated iteration.
void refresh_context_op(const ModelSpec& sharded, const BatchShape& b, const Precision& p, Op& op,
                        const KernelPlan& plan = KernelPlan{});

}  // namespace servesim
