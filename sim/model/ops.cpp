// FLOP and byte counts per op. Bytes are the minimum each kernel must move through device memory
// (inputs read once, outputs written once); the cost model turns them into time.
#include "sim/model/ops.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace servesim {

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::embedding: return "embedding";
    case OpKind::norm: return "norm";
    case OpKind::gemm: return "gemm";
    case OpKind::rope: return "rope";
    case OpKind::kv_write: return "kv_write";
    case OpKind::attention_prefill: return "attention_prefill";
    case OpKind::attention_decode: return "attention_decode";
    case OpKind::elementwise: return "elementwise";
    case OpKind::sampler: return "sampler";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::all_gather: return "all_gather";
    case OpKind::grouped_gemm: return "grouped_gemm";
    case OpKind::all_to_all: return "all_to_all";
  }
  return "?";
}

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::standard: return "standard";
    case AttentionKernel::sdpa: return "sdpa";
    case AttentionKernel::sdpa_packed: return "sdpa_packed";
  }
  return "?";
}

void BatchShape::add_prefill(std::int64_t new_tokens, std::int64_t context_tokens, bool samples) {
  const double n = static_cast<double>(new_tokens);
  const double c = static_cast<double>(context_tokens);
  prefill_seqs += 1;
  prefill_tokens += new_tokens;
  prefill_attn_pairs += n * c + n * (n + 1.0) / 2.0;
  prefill_kv_tokens += c + n;
  if (samples) prefill_sampled += 1;
}

void BatchShape::add_decode(std::int64_t context_tokens) {
  decode_seqs += 1;
  decode_kv_tokens += static_cast<double>(context_tokens + decode_query_tokens);
}

namespace {

// A GEMM on weights quantized with `q` (none for 16-bit): weight bytes follow the scheme; w8a8
// reads its input already quantized to 8 bits (the act_quant kernel wrote it).
Op gemm_op(const char* name, std::int64_t per_layer, std::int64_t layers, std::int64_t m, std::int64_t n,
           std::int64_t k, const Precision& p, QuantScheme q) {
  Op op{name, OpKind::gemm, per_layer * layers, per_layer};
  op.quant = q;
  op.m = m;
  op.n = n;
  op.k = k;
  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  const double in_b = w8a8_dtype(q) ? quant_input_bytes(q) : dtype_bytes(p.activations);
  op.flops = 2.0 * md * nd * kd;
  const double out_bytes = std::max(2.0, dtype_bytes(p.activations));
  op.bytes = md * kd * in_b + kd * nd * quant_weight_bytes(q, p.weights, p.group_size) + md * nd * out_bytes;
  return op;
}

Op streaming_op(const char* name, OpKind kind, std::int64_t count, double flops, double bytes) {
  Op op{name, kind, count};
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

// A per-layer elementwise step cut into `kernels` launches. restream: every kernel reads and writes
// the whole tensor (an unfused chain); otherwise the kernels split the work between them.
Op layer_op(const char* name, OpKind kind, std::int64_t per_layer, std::int64_t layers, int kernels, bool restream,
            double flops, double bytes) {
  Op op = streaming_op(name, kind, per_layer * kernels * layers, flops / kernels, restream ? bytes : bytes / kernels);
  op.per_layer = per_layer * kernels;
  return op;
}

// The engine's elementwise bandwidth on the streaming kinds; GEMMs, attention and collectives
// keep their own tables.
void set_stream_efficiency(Op& op, const KernelPlan& plan) {
  switch (op.kind) {
    case OpKind::embedding:
    case OpKind::norm:
    case OpKind::rope:
    case OpKind::kv_write:
    case OpKind::elementwise:
    case OpKind::sampler: op.stream_efficiency = plan.elementwise_bw_frac; break;
    default: break;
  }
}

Op comm_op(const char* name, OpKind kind, std::int64_t count, std::int64_t per_layer, double bytes, std::int64_t gpus,
           Placement where) {
  Op op{name, kind, count};
  op.per_layer = per_layer;
  op.bytes = bytes;
  op.comm_gpus = static_cast<int>(gpus);
  op.placement = where;
  return op;
}

// A tensor-parallel all-reduce of `bytes`, by the engine's custom kernel when it is small enough.
Op all_reduce_op(const char* name, std::int64_t count, std::int64_t per_layer, double bytes, std::int64_t gpus, Placement where,
                 const KernelPlan& plan) {
  Op op = comm_op(name, OpKind::all_reduce, count, per_layer, bytes, gpus, where);
  op.comm_custom = bytes < plan.custom_allreduce_max_bytes;
  return op;
}

// The ops whose counts follow the attention context (see refresh_context_ops); `m` is sharded.
constexpr const char* kKvConcatName = "kv_cache_concat";

Op kv_concat_op(const ModelSpec& m, const BatchShape& b, const Precision& p) {
  // torch.cat(past, new) for K and V: reads the whole cache and writes it back one token longer.
  const double kv_tokens = b.prefill_kv_tokens + b.decode_kv_tokens;
  return layer_op(kKvConcatName, OpKind::kv_write, 2, m.num_layers, 1, true, 0.0,
                  2.0 * kv_tokens * static_cast<double>(m.kv_width()) * m.kv_element_bytes(p.kv_cache));
}

// Whether the producer of GEMM input `site` writes it already quantized (plan.fused_fp8_input_quant),
// where the fusion applies: per-tensor FP8 w8a8 only (the engines' fused kernels take one static
// scale; other schemes keep their quantize kernels); the attention kernel writes 8-bit output
// only on its FP8 path, with an FP8 KV cache (TensorRT-LLM's TrtllmAttention condition), and not
// for MLA; the activation kernel of a dense gated MLP only (MoE experts quantize on their own path).
// Scope experts: none (the norm and attention feed 16-bit GEMMs; the experts quantize their own input).
bool fuses_input_quant(const ModelSpec& m, const Precision& p, const KernelPlan& plan, InputQuantSite site) {
  if ((plan.fused_fp8_input_quant & static_cast<unsigned>(site)) == 0 || p.quant != QuantScheme::fp8 || p.dynamic_activation_scales ||
      p.quant_scope == QuantScope::experts) {
    return false;
  }
  if (site == InputQuantSite::o_proj) return !m.is_mla() && p.kv_cache == Dtype::fp8;
  if (site == InputQuantSite::down) return !m.is_moe() && m.gated_mlp;
  return true;
}

AttentionWorkRates attention_work_rates(const ModelSpec& m, std::int64_t q_tokens, const Precision& p, const KernelPlan& plan) {
  AttentionWorkRates r;
  r.heads_x_dim = static_cast<double>(m.num_attention_heads * m.head_dim);
  r.kernels = plan.attention_kernels;
  const double q_tokens_d = static_cast<double>(q_tokens), q_w = static_cast<double>(m.q_width());
  const double ab = dtype_bytes(p.activations);
  // Reads q, writes the output: in 8 bits where the kernel quantizes o_proj's input itself.
  r.q_io_bytes = fuses_input_quant(m, p, plan, InputQuantSite::o_proj) ? q_tokens_d * q_w * (ab + quant_input_bytes(p.quant))
                                                                       : 2.0 * q_tokens_d * q_w * ab;
  r.kv_width = static_cast<double>(m.kv_width());
  r.kv_bytes = m.kv_element_bytes(p.kv_cache);
  return r;
}

// The fields of an attention op that follow the batch's contexts: attention over `seqs`
// sequences, `q_tokens` query tokens against `kv_tokens` cached ones and `pairs` query-key pairs
// (both summed over the sequences), in plan.attention_kernels launches that split the work (the
// arithmetic of layer_op). refresh_context_op rewrites only these, in place: building a whole Op
// and copying it cost a store-forwarding stall per step.
void set_attention_work(Op& attn, const ModelSpec& m, std::int64_t seqs, std::int64_t q_tokens, double kv_tokens,
                        double pairs, const Precision& p, const KernelPlan& plan) {
  set_attention_work(attn, attention_work_rates(m, q_tokens, p, plan), seqs, kv_tokens, pairs);
}

void set_mla_prefill_work(Op& attn, const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan);
void set_mla_decode_work(Op& attn, const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan);
struct WindowedWork {
  double kv_tokens = 0.0, pairs = 0.0;
};
WindowedWork windowed_prefill(const ModelSpec& m, const BatchShape& b);

void set_prefill_attention_work(Op& attn, const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  if (m.is_mla()) return set_mla_prefill_work(attn, m, b, p, plan);
  if (m.has_sliding_window()) {
    const WindowedWork w = windowed_prefill(m, b);
    return set_attention_work(attn, m, b.prefill_seqs, b.prefill_tokens, w.kv_tokens, w.pairs, p, plan);
  }
  set_attention_work(attn, m, b.prefill_seqs, b.prefill_tokens, b.prefill_kv_tokens, b.prefill_attn_pairs, p, plan);
}

void set_decode_attention_work(Op& attn, const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  if (m.is_mla()) return set_mla_decode_work(attn, m, b, p, plan);
  if (m.has_sliding_window()) {
    // Windowed layers read min(context, window) per sequence (at the batch's mean context).
    const double seqs = static_cast<double>(b.decode_seqs), L = static_cast<double>(m.num_layers);
    const double sliding = static_cast<double>(m.sliding_window.layers);
    const double windowed = seqs * std::min(b.decode_kv_tokens / seqs, static_cast<double>(m.sliding_window.tokens));
    const double kv = ((L - sliding) * b.decode_kv_tokens + sliding * windowed) / L;
    const double q = static_cast<double>(b.decode_query_tokens);
    set_attention_work(attn, m, b.decode_seqs, b.decode_tokens(), kv, q == 1.0 ? kv : q * kv, p, plan);
    if (attn.attn_pqh_group > 0) {
      // The chunked layers (the windowed ones, chunked_attention_layers) run the per-query-head
      // kernel: their share of the layers' KV bytes, and their context.
      attn.attn_pqh_share = kv > 0.0 ? sliding * windowed / (L * kv) : 0.0;
      attn.attn_pqh_context = windowed / seqs;
    }
    return;
  }
  // One query token per sequence (k + 1 in a verify pass), against its whole cache.
  const double pairs = b.decode_query_tokens == 1 ? b.decode_kv_tokens : b.decode_attn_pairs();
  set_attention_work(attn, m, b.decode_seqs, b.decode_tokens(), b.decode_kv_tokens, pairs, p, plan);
}

Op attention_op(const char* name, OpKind kind, const ModelSpec& m, const Precision& p, const KernelPlan& plan) {
  Op attn = layer_op(name, kind, 1, m.num_layers, plan.attention_kernels, false, 0.0, 0.0);
  attn.attn_kv_dtype = p.kv_cache;  // an integer cache is dequantized as the kernel reads it
  attn.attn_kv_heads = m.is_mla() ? 1 : m.num_kv_heads;  // MLA: every head reads one shared latent
  attn.attn_head_dim = m.is_mla() ? 0 : m.head_dim;       // MLA: the family's default tables
  attn.attn_kernel = plan.attention_kernel;
  return attn;
}

Op prefill_attention_op(const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  Op attn = attention_op("attention_prefill", OpKind::attention_prefill, m, p, plan);
  if (!m.is_mla()) attn.compute_plateau_frac = plan.prefill_attention_peak_frac;
  set_prefill_attention_work(attn, m, b, p, plan);
  return attn;
}

// The packed batch's one attention call (AttentionKernel::sdpa_packed): every query token of the
// batch against every KV token of the batch (the mask hides, not skips, the rest), and the cache
// gathered into one contiguous K/V first (read and written once more).
constexpr const char* kPackedAttentionName = "attention_packed";

void set_packed_attention_work(Op& attn, const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  const double q = static_cast<double>(b.total_tokens()), kv = b.prefill_kv_tokens + b.decode_kv_tokens;
  set_attention_work(attn, m, b.total_seqs(), b.total_tokens(), kv, q * kv, p, plan);
  attn.compute_efficiency = plan.packed_attention_compute_frac;
  attn.bytes += 2.0 * kv * 2.0 * static_cast<double>(m.kv_width()) * m.kv_element_bytes(p.kv_cache) / plan.attention_kernels;
}

Op packed_attention_op(const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  Op attn = attention_op(kPackedAttentionName, OpKind::attention_prefill, m, p, plan);
  set_packed_attention_work(attn, m, b, p, plan);
  return attn;
}

Op decode_attention_op(const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  Op attn = attention_op("attention_decode", OpKind::attention_decode, m, p, plan);
  if (plan.decode_attention_per_query_head && !m.is_mla() && m.num_kv_heads > 0) {
    attn.attn_dequant_copies = static_cast<int>(std::max<std::int64_t>(1, m.num_attention_heads / m.num_kv_heads));
  }
  if (plan.chunked_decode_attention_per_query_head && chunked_attention_layers(m) > 0 && !m.is_mla() && m.num_kv_heads > 0) {
    attn.attn_pqh_group = static_cast<int>(std::max<std::int64_t>(1, m.num_attention_heads / m.num_kv_heads));
  }
  set_decode_attention_work(attn, m, b, p, plan);
  return attn;
}


// ---- Sliding windows, multi-head latent attention and mixture of experts (model_spec.hpp) ----

// Causal query-key pairs of a chunk of n new tokens after c cached ones when each query sees at
// most `window` keys: sum over j = c+1 .. c+n of min(j, window). Equals n*c + n(n+1)/2 when the
// window covers the chunk.
double window_pairs(double n, double c, double window) {
  const double a = c + 1.0, last = c + n;
  if (last <= window) return n * (a + last) / 2.0;
  if (a >= window) return n * window;
  return (a + window) * (window - a + 1.0) / 2.0 + (last - window) * window;
}

// The layer-average prefill work of a model with sliding-window layers, each chunk taken at the
// batch's mean chunk length and context (exact when the chunks are equal).
WindowedWork windowed_prefill(const ModelSpec& m, const BatchShape& b) {
  const double seqs = static_cast<double>(b.prefill_seqs), L = static_cast<double>(m.num_layers);
  const double sliding = static_cast<double>(m.sliding_window.layers), W = static_cast<double>(m.sliding_window.tokens);
  const double n = static_cast<double>(b.prefill_tokens) / seqs;
  const double c = std::max(0.0, b.prefill_kv_tokens / seqs - n);
  const double kv_windowed = seqs * std::min(c + n, W + n - 1.0);
  const double pairs_windowed = seqs * window_pairs(n, c, W);
  return {((L - sliding) * b.prefill_kv_tokens + sliding * kv_windowed) / L,
          ((L - sliding) * b.prefill_attn_pairs + sliding * pairs_windowed) / L};
}

// MLA prefill (vLLM's compute-friendly path): the cached latents of every prefilling sequence are
// up-projected by kv_b to per-head keys and values, then ordinary attention with qk_head_dim
// keys and v_head_dim values runs. The up-projection follows the context, so it is part of this
// op's work rather than a GEMM of its own.
void set_mla_prefill_work(Op& attn, const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  const double H = static_cast<double>(m.num_attention_heads), r = static_cast<double>(m.mla.kv_lora_rank);
  const double qk = static_cast<double>(m.mla.qk_head_dim()), v = static_cast<double>(m.mla.v_head_dim);
  const double up = H * (static_cast<double>(m.mla.qk_nope_head_dim) + v);
  const double kv = b.prefill_kv_tokens, q_tokens = static_cast<double>(b.prefill_tokens);
  const double ab = dtype_bytes(p.activations);
  const int kernels = plan.attention_kernels;
  attn.flops = (2.0 * kv * r * up + 2.0 * H * (qk + v) * b.prefill_attn_pairs) / kernels;
  attn.bytes = (kv * static_cast<double>(m.mla.kv_cache_width()) * m.kv_element_bytes(p.kv_cache) + r * up * dtype_bytes(p.weights) +
                2.0 * kv * up * ab + q_tokens * H * (qk + v) * ab) /
               kernels;
  attn.attn_seqs = b.prefill_seqs;
  attn.attn_kv_tokens = kv;
}

// MLA decode (weight absorption, as vLLM and FlashMLA): each head's query is mapped into the
// latent space (W_UK), attends over the shared latent cache (keys kv_lora_rank + rope wide,
// values kv_lora_rank wide: one KV head for all query heads), and the result is mapped back
// (W_UV). The two per-head absorption GEMMs are folded into this op.
void set_mla_decode_work(Op& attn, const ModelSpec& m, const BatchShape& b, const Precision& p, const KernelPlan& plan) {
  const double H = static_cast<double>(m.num_attention_heads), r = static_cast<double>(m.mla.kv_lora_rank);
  const double nope = static_cast<double>(m.mla.qk_nope_head_dim), v = static_cast<double>(m.mla.v_head_dim);
  const double latent = static_cast<double>(m.mla.kv_cache_width());
  // Query rows: one per decode sequence, k + 1 in a verify pass (each scores its causal pairs).
  const double seqs = static_cast<double>(b.decode_tokens()), kv = b.decode_kv_tokens;
  const double pairs = b.decode_query_tokens == 1 ? kv : b.decode_attn_pairs();
  const double ab = dtype_bytes(p.activations);
  const int kernels = plan.attention_kernels;
  attn.flops = (2.0 * seqs * H * r * (nope + v) + 2.0 * H * (latent + r) * pairs) / kernels;
  attn.bytes = (kv * latent * m.kv_element_bytes(p.kv_cache) + H * r * (nope + v) * dtype_bytes(p.weights) +
                seqs * H * (nope + v + latent + r) * ab) /
               kernels;
  attn.attn_seqs = b.decode_seqs;
  attn.attn_kv_tokens = kv;
}

// MLA's projections before attention: the fused down-projection of the hidden state (q_a,
// kv_a and the rotary key; replicated over tensor parallelism), the two low-rank norms, q_b (or
// a direct q projection), rope on the rotary parts and the latent cache write.
void push_mla_projections(const ModelSpec& m, double t, std::int64_t tokens, const Precision& p, const KernelPlan& plan,
                          QuantScheme q, std::vector<Op>& out) {
  const std::int64_t L = m.num_layers;
  const double ab = dtype_bytes(p.activations), wb = dtype_bytes(p.weights), kvb = m.kv_element_bytes(p.kv_cache);
  const double lora = static_cast<double>(m.mla.q_lora_rank + m.mla.kv_lora_rank);
  out.push_back(gemm_op("mla_down_proj", 1, L, tokens, m.mla_down_width(), m.hidden_size, p, q));
  out.push_back(layer_op("mla_lora_norms", OpKind::norm, 1, L, plan.norm_kernels, true, 4.0 * t * lora, 2.0 * t * lora * ab + lora * wb));
  if (m.mla.q_lora_rank > 0) {
    out.push_back(gemm_op("mla_q_up_proj", 1, L, tokens, m.mla_q_width(), m.mla.q_lora_rank, p, q));
  } else {
    out.push_back(gemm_op("q_proj", 1, L, tokens, m.mla_q_width(), m.hidden_size, p, q));
  }
  const double rope_w = static_cast<double>((m.num_attention_heads + 1) * m.mla.qk_rope_head_dim);
  if (plan.rope_kernels > 0) {
    out.push_back(layer_op("rope", OpKind::rope, 1, L, plan.rope_kernels, true, 3.0 * t * rope_w, 2.0 * t * rope_w * ab));
  }
  if (plan.kv_write_kernels > 0) {
    out.push_back(layer_op("mla_kv_cache_write", OpKind::kv_write, 1, L, plan.kv_write_kernels, false, 0.0,
                           t * static_cast<double>(m.mla.kv_cache_width()) * (ab + kvb)));
  }
}

// Expected number of distinct values among `draws` uniform draws from n.
double expected_distinct(double n, double draws) {
  if (draws <= 0.0) return 0.0;
  return n <= 1.0 ? 1.0 : n * (1.0 - std::pow(1.0 - 1.0 / n, draws));
}

// Rows of the M tile grouped MoE kernels compute an expert's tokens in (vLLM fused_moe's largest
// BLOCK_SIZE_M and CUTLASS sm90 grouped GEMM tiles are 128): an expert's last tile is partly empty.
constexpr double kExpertTileRows = 128.0;

// Expected rows a grouped kernel computes for an active expert whose token count is about
// Poisson(mean) (uniform routing): whole tiles, sum over j of P(count > j tiles) in the normal
// approximation, at least one tile. With a smaller token tile (`small_tile` rows,
// KernelPlan::moe_token_tile_rows) an expert of at most 128 tokens fills the smallest of
// small_tile x 2^i rows that holds it: small_tile plus each step (s_i - s_{i-1}) x P(count > s_{i-1}).
double padded_expert_rows(double mean, int small_tile) {
  const double sd = std::sqrt(std::max(mean, 1.0));
  const auto above = [mean, sd](double rows) { return 0.5 * std::erfc((rows - mean) / (sd * std::sqrt(2.0))); };
  double tiles = 1.0;
  for (int j = 1; j < 1 << 16; ++j) {
    const double p = above(j * kExpertTileRows);
    if (p < 1e-6 && j * kExpertTileRows > mean) break;
    tiles += p;
  }
  if (small_tile >= kExpertTileRows) return tiles * kExpertTileRows;
  // The first 128-row tile as the small tiles: small_tile, then each doubling as it is needed.
  double first = small_tile;
  for (double s = small_tile; s < kExpertTileRows; s *= 2.0) first += s * above(s);
  return first + (tiles - 1.0) * kExpertTileRows;
}

// The engine's kernel for the routed experts' grouped GEMMs of scheme `q` (moe_quant_kernels).
QuantKernel moe_kernel(const KernelPlan& plan, QuantScheme q) {
  return q == QuantScheme::none ? QuantKernel::auto_ : plan.moe_quant_kernels[static_cast<std::size_t>(q)];
}
// Bytes per element of the routed experts' input: what their kernel multiplies (16-bit, or quantized).
double expert_input_bytes(const Precision& p, QuantScheme q, QuantKernel k) {
  return kernel_gemm_dtype(q, k) ? kernel_input_bytes(q, k) : dtype_bytes(p.activations);
}

// `assignments` token-expert pairs over experts of which `groups` have at least one token:
// one launch that runs a GEMM of (assignments / groups) rows on each active expert's weights;
// tile_padding: the padded tiles it computes over the useful rows. The engine's MoE kernel
// (plan.moe_quant_kernels) decides the input's format.
Op grouped_gemm_op(const char* name, std::int64_t layers, double assignments, double groups, std::int64_t n, std::int64_t k,
                   const Precision& p, QuantScheme q, const KernelPlan& plan) {
  Op op{name, OpKind::grouped_gemm, layers, 1};
  op.quant = q;
  op.quant_kernel = moe_kernel(plan, q);
  op.n = n;
  op.k = k;
  op.groups = std::max<std::int64_t>(1, std::llround(groups));
  op.m = std::max<std::int64_t>(1, std::llround(assignments / std::max(1.0, groups)));
  const double nd = static_cast<double>(n), kd = static_cast<double>(k);
  const double in_b = expert_input_bytes(p, q, op.quant_kernel);
  const double rows = std::max(1.0, groups) * padded_expert_rows(assignments / std::max(1.0, groups), plan.moe_token_tile_rows);
  op.tile_padding = std::max(1.0, rows / std::max(1.0, assignments));
  op.flops = 2.0 * assignments * nd * kd;
  op.bytes = assignments * kd * in_b + groups * kd * nd * quant_weight_bytes(q, p.weights, p.group_size) +
             assignments * nd * std::max(2.0, dtype_bytes(p.activations));
  return op;
}

// The MoE layer's token exchange before the experts, per GPU of the expert-parallel group:
// all_to_all: each of `rank_tokens` goes once to each GPU holding one of its experts (DeepEP-style
// deduplication), in the experts' input format (8-bit schemes send 8-bit activations).
// gathered (attention DP, KernelPlan::moe_dp_allgather): every rank's tokens to every GPU, each
// rank's count padded to the busiest one's (`group_t` = ranks x its tokens), with its top-k
// expert ids (int32) and weights (fp32). TensorRT-LLM quantizes per-tensor FP8, NVFP4 and (W4A8
// MXFP4 x MXFP8) MXFP8 inputs before the gather and FP8 block-scaled ones inside the MoE kernel
// (bf16 on the wire) (_torch/modules/fused_moe/fused_moe_cutlass.py forward_chunk).
Op moe_dispatch_op(const ModelSpec& m, double rank_tokens, double group_t, bool gathered, const Precision& p, QuantScheme q,
                   QuantKernel k) {
  const std::int64_t L = m.num_layers, ep = m.moe.expert_parallel;
  const double h = static_cast<double>(m.hidden_size), top_k = static_cast<double>(m.moe.experts_per_token);
  if (gathered) {
    const bool quantized_first = q == QuantScheme::fp8 || q == QuantScheme::nvfp4 || k == QuantKernel::cutlass_mxfp4_mxfp8;
    const double in_b = quantized_first ? kernel_input_bytes(q, k) : dtype_bytes(p.activations);
    return comm_op("moe_allgather", OpKind::all_gather, L, 1, group_t * (h * in_b + top_k * 8.0), ep, Placement::layer);
  }
  const double dests = expected_distinct(static_cast<double>(ep), top_k);
  const double in_b = expert_input_bytes(p, q, k);
  return comm_op("moe_dispatch", OpKind::all_to_all, L, 1, rank_tokens * dests * h * in_b, ep, Placement::layer);
}

// The return trip in 16 bits: the all-to-all combine of each token's partial outputs, or
// (gathered) a reduce-scatter of every gathered token's output row, which a ring moves as an
// all-gather of the same buffer does: (n-1)/n of it over each GPU's link.
Op moe_combine_op(const ModelSpec& m, double rank_tokens, double group_t, bool gathered, const Precision& p) {
  const std::int64_t L = m.num_layers, ep = m.moe.expert_parallel;
  const double h = static_cast<double>(m.hidden_size), ab = dtype_bytes(p.activations);
  if (gathered) return comm_op("moe_reducescatter", OpKind::all_gather, L, 1, group_t * h * ab, ep, Placement::layer);
  const double dests = expected_distinct(static_cast<double>(ep), static_cast<double>(m.moe.experts_per_token));
  return comm_op("moe_combine", OpKind::all_to_all, L, 1, rank_tokens * dests * h * ab, ep, Placement::layer);
}

// The dense MLP of an MoE model's dense layers, before the identical-layer body (see
// build_iteration_ops): `count` launches each, one per dense layer.
void push_dense_layer_mlps(const ModelSpec& m, double t, std::int64_t tokens, const Precision& p, const KernelPlan& plan,
                           QuantScheme q, std::vector<Op>& out) {
  const std::int64_t d = m.dense_mlp_layers();
  const double ffn = static_cast<double>(m.ffn_size);
  const auto pre = [&out](Op op) {
    op.per_layer = 0;
    out.push_back(op);
  };
  pre(gemm_op("dense_mlp_gate_up_proj", 1, d, tokens, m.mlp_in_width(), m.hidden_size, p, q));
  if (plan.act_kernels > 0) {
    pre(layer_op("dense_mlp_act", OpKind::elementwise, 1, d, 1, true, 5.0 * t * ffn, 3.0 * t * ffn * dtype_bytes(p.activations)));
  }
  pre(gemm_op("dense_mlp_down_proj", 1, d, tokens, m.hidden_size, m.ffn_size, p, q));
}

// One MoE layer's MLP on one GPU (m sharded): router GEMM (16-bit, replicated), top-k selection,
// [dispatch], grouped gate/up GEMM, activation, grouped down GEMM, [combine], weighted sum of the
// top-k outputs, shared experts. Routing is uniform: a GPU of the expert-parallel group receives
// tokens x top-k / ep token copies (times routing.load_imbalance for the busiest one), spread
// over its local experts; the active experts are those with at least one copy.
// `q` prices the routed experts (and their dispatch), `q_dense` the shared experts.
void push_moe_mlp(const ModelSpec& m, double t, std::int64_t tokens, const Precision& p, const KernelPlan& plan,
                  const MoeRouting& routing, QuantScheme q, QuantScheme q_dense, std::vector<Op>& out) {
  const std::size_t first = out.size();
  const std::int64_t L = m.num_layers;
  const double ab = dtype_bytes(p.activations), h = static_cast<double>(m.hidden_size);
  const double experts = static_cast<double>(m.moe.num_experts), top_k = static_cast<double>(m.moe.experts_per_token);
  const std::int64_t ep = m.moe.expert_parallel;
  const double epd = static_cast<double>(ep);
  out.push_back(gemm_op("moe_router", 1, L, tokens, m.moe.num_experts, m.hidden_size, p, QuantScheme::none));
  // Scores in fp32, top-k, then the sort of token copies by expert (vLLM moe_align_block_size).
  out.push_back(layer_op("moe_topk", OpKind::elementwise, 1, L, plan.moe_route_kernels, false, 5.0 * t * experts,
                         t * experts * 8.0 + t * top_k * 16.0));
  // Tokens each expert-parallel GPU dispatches: its share of the tokens replicated over the TP
  // group, or under attention DP the rank's own; the experts see every rank's.
  const double dp = static_cast<double>(routing.attention_dp);
  const double rank_tokens = routing.attention_dp > 1 ? t : t / epd;
  const double group_t = routing.attention_dp > 1 ? t * dp : t;
  const bool gathered = routing.attention_dp > 1 && plan.moe_dp_allgather;
  if (ep > 1) out.push_back(moe_dispatch_op(m, rank_tokens, group_t, gathered, p, q, moe_kernel(plan, q)));
  const double copies = std::min(group_t * top_k, group_t * top_k / epd * std::max(1.0, routing.load_imbalance));
  const double active = expected_distinct(static_cast<double>(m.moe.local_experts()), copies);
  const double f = static_cast<double>(m.moe.expert_ffn_size);
  if (plan.moe_permute_kernels > 0) {
    // Gather the token copies into expert order before, and scale them by their router weights
    // after, the expert GEMMs.
    out.push_back(layer_op("moe_permute", OpKind::elementwise, 1, L, plan.moe_permute_kernels, false, copies * h,
                           (rank_tokens + 3.0 * copies) * h * ab));
  }
  out.push_back(grouped_gemm_op("experts_gate_up", L, copies, active, m.gated_width(m.moe.expert_ffn_size), m.hidden_size, p, q, plan));
  if (plan.act_kernels > 0) {
    out.push_back(layer_op("experts_act", OpKind::elementwise, 1, L, plan.act_kernels, true, 5.0 * copies * f, 3.0 * copies * f * ab));
  }
  out.push_back(grouped_gemm_op("experts_down", L, copies, active, m.hidden_size, m.moe.expert_ffn_size, p, q, plan));
  if (ep > 1) out.push_back(moe_combine_op(m, rank_tokens, group_t, gathered, p));
  if (gathered) {
    // The fused MoE's finalize weights and sums this GPU's copies into an output row for every
    // gathered token (zero where none of its experts was chosen), which the reduce-scatter sums.
    out.push_back(layer_op("moe_sum", OpKind::elementwise, 1, L, 1, true, 2.0 * copies * h, (copies + group_t) * h * ab));
  } else {
    out.push_back(layer_op("moe_sum", OpKind::elementwise, 1, L, 1, true, 2.0 * rank_tokens * top_k * h,
                           (rank_tokens * top_k + rank_tokens) * h * ab));
  }
  if (m.moe.shared_experts > 0) {
    const std::int64_t shared = m.moe.shared_experts * m.moe.shared_expert_ffn_size;
    out.push_back(gemm_op("shared_experts_gate_up", 1, L, tokens, m.gated_width(shared), m.hidden_size, p, q_dense));
    if (plan.act_kernels > 0) {
      out.push_back(layer_op("shared_experts_act", OpKind::elementwise, 1, L, plan.act_kernels, true, 5.0 * t * static_cast<double>(shared),
                             3.0 * t * static_cast<double>(shared) * ab));
    }
    out.push_back(gemm_op("shared_experts_down", 1, L, tokens, m.hidden_size, shared, p, q_dense));
  }
  // Only the MoE layers run these: their work is spread over every layer of the body.
  if (m.moe.dense_layers > 0) {
    const double share = static_cast<double>(m.moe_layers()) / static_cast<double>(L);
    for (std::size_t i = first; i < out.size(); ++i) {
      out[i].flops *= share;
      out[i].bytes *= share;
    }
  }
}

// The layer's two RMSNorms (a fused add+norm also reads the residual and writes the updated
// one, and the separate adds vanish) and, for w8a8, the dynamic per-token quantization of the
// four GEMM inputs (QKV, O, gate/up, down) that `q_attn` (QKV, O) or `q_mlp` (gate/up, down) quantizes.
void push_norms_and_input_quant(const ModelSpec& m, double t, const Precision& p, const KernelPlan& plan, QuantScheme q_attn,
                                QuantScheme q_mlp, std::vector<Op>& out) {
  const QuantScheme q = q_mlp;  // the scheme (q_attn is it or none)
  // An MoE layer's experts quantize their inputs as their kernel multiplies them (an MXFP4 x bf16
  // kernel not at all, MXFP4 x MXFP8 to MXFP8); the attention projections as the scheme does.
  const QuantKernel k_mlp = m.is_moe() ? moe_kernel(plan, q_mlp) : QuantKernel::auto_;
  const std::int64_t L = m.num_layers;
  const double h = static_cast<double>(m.hidden_size);
  const double ab = dtype_bytes(p.activations), wb = dtype_bytes(p.weights);
  double norm_bytes = 2.0 * t * h * ab + h * wb + (plan.fused_add_norm ? 2.0 * t * h * ab : 0.0);
  // A norm that quantizes its output for the next GEMM writes it in 8 bits (the op is both
  // norms of the layer: the saving is averaged over its two launches).
  const int quantizing_norms = (fuses_input_quant(m, p, plan, InputQuantSite::qkv) ? 1 : 0) +
                               (fuses_input_quant(m, p, plan, InputQuantSite::gate_up) ? 1 : 0);
  if (quantizing_norms > 0) norm_bytes -= quantizing_norms / 2.0 * t * h * (ab - quant_input_bytes(q));
  out.push_back(layer_op(plan.fused_add_norm ? "fused_add_rmsnorm" : "rmsnorm", OpKind::norm, 2, L, plan.norm_kernels,
                         true, 4.0 * t * h, norm_bytes));
  if (w8a8_dtype(q_attn) || kernel_gemm_dtype(q_mlp, k_mlp)) {
    // One quantize kernel per quantized GEMM input whose producer does not quantize it: each reads the
    // 16-bit tensor and writes it in 8 bits (op fields are per launch: the mean width).
    const double width_of[] = {h, static_cast<double>(m.q_width()), h, static_cast<double>(m.ffn_size)};
    double width = 0.0, quantized_bytes = 0.0;  // the sites' widths, and their quantized bytes per token
    int kernels = 0;
    bool same_format = true;  // every site quantizes to the scheme's own input format
    for (std::size_t i = 0; i < std::size(kInputQuantSites); ++i) {
      const bool attention_site = kInputQuantSites[i] == InputQuantSite::qkv || kInputQuantSites[i] == InputQuantSite::o_proj;
      const QuantKernel k_site = attention_site ? QuantKernel::auto_ : k_mlp;
      const QuantScheme q_site = attention_site ? q_attn : q_mlp;
      if (!kernel_gemm_dtype(q_site, k_site) || fuses_input_quant(m, p, plan, kInputQuantSites[i])) continue;
      width += width_of[i];
      quantized_bytes += width_of[i] * kernel_input_bytes(q_site, k_site);
      same_format = same_format && kernel_input_bytes(q_site, k_site) == quant_input_bytes(q);
      ++kernels;
    }
    if (kernels > 0) {
      // Per-token dynamic scales: each row's absolute maximum first (one more operation per
      // element, the row re-read from on-chip memory: the device batch's one-kernel dynamic
      // quantizer streams 2.54 TB/s at M 8192 on the H100 counting its bytes once,
      // calibrate/results/h100/quant_kernels.json act_quant), then an fp32 scale per token.
      const bool dynamic = p.dynamic_activation_scales;
      const double flops = (dynamic ? 3.0 : 2.0) * t * width / kernels;
      const double written = same_format ? t * width / kernels * (ab + quant_input_bytes(q)) : t * (width * ab + quantized_bytes) / kernels;
      const double bytes = written + (dynamic ? 4.0 * t : 0.0);
      out.push_back(layer_op("act_quant", OpKind::elementwise, kernels, L, 1, true, flops, bytes));
    }
  }
}

// Qwen3's attention (Hugging Face Qwen3Attention / Qwen3MoeAttention) applies an RMSNorm over
// head_dim to every query and key head (q_norm, k_norm) before RoPE; other families do not.
bool has_qk_head_norm(const ModelSpec& m) { return m.family == "qwen3" || m.family == "qwen3_moe"; }

// Queries, keys and values: MLA's projections, or the dense ones in the GEMMs the engine splits
// them into (3, 2 or 1); then rope, the per-head query/key norm, the KV cache write and HF's
// cache concatenation.
void push_qkv(const ModelSpec& m, const BatchShape& b, double t, std::int64_t tokens, const Precision& p, const KernelPlan& plan,
              QuantScheme q, std::vector<Op>& out) {
  const std::int64_t L = m.num_layers;
  if (m.is_mla()) {
    push_mla_projections(m, t, tokens, p, plan, q, out);
  } else if (plan.qkv_gemms == 3) {
    out.push_back(gemm_op("q_proj", 1, L, tokens, m.q_width(), m.hidden_size, p, q));
    out.push_back(gemm_op("k_proj", 1, L, tokens, m.kv_width(), m.hidden_size, p, q));
    out.push_back(gemm_op("v_proj", 1, L, tokens, m.kv_width(), m.hidden_size, p, q));
  } else if (plan.qkv_gemms == 2) {
    out.push_back(gemm_op("q_proj", 1, L, tokens, m.q_width(), m.hidden_size, p, q));
    out.push_back(gemm_op("kv_proj", 1, L, tokens, 2 * m.kv_width(), m.hidden_size, p, q));
  } else {
    out.push_back(gemm_op("qkv_proj", 1, L, tokens, m.qkv_width(), m.hidden_size, p, q));
  }
  const double ab = dtype_bytes(p.activations), kvb = m.kv_element_bytes(p.kv_cache);
  const double q_w = static_cast<double>(m.q_width());
  const double kv_w = static_cast<double>(m.kv_width());
  if (plan.rope_kernels > 0 && !m.is_mla()) {
    out.push_back(layer_op("rope", OpKind::rope, 1, L, plan.rope_kernels, true, 3.0 * t * (q_w + kv_w),
                           2.0 * t * (q_w + kv_w) * ab));
  }
  if (plan.qk_norm_kernels > 0 && has_qk_head_norm(m) && !m.is_mla()) {
    // In place on the query and key heads: each 16-bit element read and written once; the norm's
    // square, sum, scale and weight (4 per element) and, where no rope kernel of its own runs,
    // the rotation fused into it (rope's 3).
    const double per_element = 4.0 + (plan.rope_kernels > 0 ? 0.0 : 3.0);
    out.push_back(layer_op("qk_norm", OpKind::norm, 1, L, plan.qk_norm_kernels, true, per_element * t * (q_w + kv_w),
                           2.0 * t * (q_w + kv_w) * ab));
  }
  if (plan.kv_write_kernels > 0 && !m.is_mla()) {
    out.push_back(layer_op("kv_cache_write", OpKind::kv_write, 1, L, plan.kv_write_kernels, false, 0.0,
                           2.0 * t * kv_w * (ab + kvb)));
  }
  if (plan.kv_cache_concat) out.push_back(kv_concat_op(m, b, p));
}

// Attention over the KV cache (one packed kernel, or the prefill and decode kernels), the output
// projection, its all-reduce over tensor parallelism and the residual add (unless fused into
// the next norm).
void push_attention(const ModelSpec& m, const BatchShape& b, double t, std::int64_t tokens, const Precision& p,
                    const KernelPlan& plan, QuantScheme q, std::int64_t tp, double hidden_bytes, std::vector<Op>& out) {
  const std::int64_t L = m.num_layers;
  if (plan.attention_kernel == AttentionKernel::sdpa_packed && !m.is_mla()) {
    out.push_back(packed_attention_op(m, b, p, plan));
  } else {
    if (b.prefill_seqs > 0) out.push_back(prefill_attention_op(m, b, p, plan));
    if (b.decode_seqs > 0) out.push_back(decode_attention_op(m, b, p, plan));
  }
  out.push_back(gemm_op("o_proj", 1, L, tokens, m.hidden_size, m.attn_out_width(), p, q));
  if (tp > 1) out.push_back(all_reduce_op("attn_all_reduce", L, 1, hidden_bytes, tp, Placement::layer, plan));
  if (!plan.fused_add_norm) {
    const double h = static_cast<double>(m.hidden_size);
    out.push_back(layer_op("residual_add", OpKind::elementwise, 2, L, 1, true, t * h, 3.0 * t * h * dtype_bytes(p.activations)));
  }
}

// The MLP: the experts of an MoE layer, or gate/up (one GEMM or two), the activation and down;
// then its all-reduce over tensor parallelism and the engine's extra copies per layer.
void push_mlp(const ModelSpec& m, double t, std::int64_t tokens, const Precision& p, const KernelPlan& plan, const MoeRouting& routing,
              QuantScheme q, QuantScheme q_dense, std::int64_t tp, double hidden_bytes, std::vector<Op>& out) {
  if (!m.is_moe()) q = q_dense;  // `q` is the routed experts' scheme: a dense MLP takes q_dense
  const std::int64_t L = m.num_layers;
  const double ab = dtype_bytes(p.activations);
  const double ffn = static_cast<double>(m.ffn_size);
  if (m.is_moe()) {
    push_moe_mlp(m, t, tokens, p, plan, routing, q, q_dense, out);
  } else if (m.gated_mlp && plan.gate_up_gemms == 2) {
    out.push_back(gemm_op("mlp_gate_proj", 1, L, tokens, m.ffn_size, m.hidden_size, p, q));
    out.push_back(gemm_op("mlp_up_proj", 1, L, tokens, m.ffn_size, m.hidden_size, p, q));
  } else {
    out.push_back(gemm_op(m.gated_mlp ? "mlp_gate_up_proj" : "mlp_up_proj", 1, L, tokens, m.mlp_in_width(),
                          m.hidden_size, p, q));
  }
  const double act_reads = m.gated_mlp ? 2.0 : 1.0;
  if (plan.act_kernels > 0 && !m.is_moe()) {  // 0: fused into the gate/up GEMM's epilogue (TensorRT-LLM gated MLP)
    // Reads gate and up, writes the product: in 8 bits where it quantizes down's input itself.
    const double act_bytes = fuses_input_quant(m, p, plan, InputQuantSite::down)
                                 ? (act_reads * ab + quant_input_bytes(q)) * t * ffn
                                 : (act_reads + 1.0) * t * ffn * ab;
    out.push_back(layer_op("mlp_act", OpKind::elementwise, 1, L, m.gated_mlp ? plan.act_kernels : 1, true,
                           5.0 * t * ffn, act_bytes));
  }
  if (!m.is_moe()) out.push_back(gemm_op("mlp_down_proj", 1, L, tokens, m.hidden_size, m.ffn_size, p, q));
  if (tp > 1) out.push_back(all_reduce_op("mlp_all_reduce", L, 1, hidden_bytes, tp, Placement::layer, plan));
  if (plan.extra_kernels_per_layer > 0) {
    const double h = static_cast<double>(m.hidden_size);
    out.push_back(layer_op("layer_copies", OpKind::elementwise, 1, L, plan.extra_kernels_per_layer, true, 0.0,
                           2.0 * t * h * ab));
  }
}

// After the last layer, on the last pipeline stage: the final norm, the LM head on the sampled
// rows, the gather of their logits over tensor parallelism and the sampler. `full` is the
// unsharded model: sampling sees the whole vocabulary.
void push_head(const ModelSpec& m, const ModelSpec& full, const BatchShape& b, double t, const Precision& p, const KernelPlan& plan,
               std::int64_t tp, std::vector<Op>& out) {
  const double h = static_cast<double>(m.hidden_size);
  const double ab = dtype_bytes(p.activations), wb = dtype_bytes(p.weights);
  out.push_back(streaming_op("final_rmsnorm", OpKind::norm, plan.norm_kernels, 4.0 * t * h / plan.norm_kernels,
                             2.0 * t * h * ab + h * wb));
  out.back().placement = Placement::last_stage;
  const std::int64_t sampled = b.sampled_seqs();
  if (sampled == 0) return;
  out.push_back(gemm_op("lm_head", 1, 1, sampled, m.vocab_size, m.hidden_size, p, QuantScheme::none));
  out.back().per_layer = 0;
  out.back().placement = Placement::last_stage;
  const double s_rows = static_cast<double>(sampled);
  if (tp > 1) {
    out.push_back(comm_op("logits_all_gather", OpKind::all_gather, 1, 0, s_rows * static_cast<double>(full.vocab_size) * ab,
                          tp, Placement::last_stage));
  }
  const double logits = s_rows * static_cast<double>(full.vocab_size);
  out.push_back(streaming_op("sampler", OpKind::sampler, plan.sampler_kernels, 5.0 * logits / plan.sampler_kernels,
                             logits * 4.0 / plan.sampler_kernels));
  out.back().placement = Placement::last_stage;
}

}  // namespace

void set_attention_work(Op& attn, const AttentionWorkRates& r, std::int64_t seqs, double kv_tokens, double pairs) {
  attn.flops = 4.0 * r.heads_x_dim * pairs / r.kernels;
  attn.bytes = (r.q_io_bytes + kv_tokens * 2.0 * r.kv_width * r.kv_bytes) / r.kernels;
  attn.attn_seqs = seqs;
  attn.attn_kv_tokens = kv_tokens;
}

bool decode_attention_rates(const ModelSpec& m, std::int64_t decode_seqs, const Precision& p, const KernelPlan& plan,
                            AttentionWorkRates& rates) {
  if (m.is_mla() || m.has_sliding_window()) return false;  // set_decode_attention_work's other formulas
  rates = attention_work_rates(m, decode_seqs, p, plan);
  return true;
}

bool depends_on_context(const Op& op) {
  return op.kind == OpKind::attention_prefill || op.kind == OpKind::attention_decode || op.name == kKvConcatName;
}

void refresh_context_op(const ModelSpec& m, const BatchShape& b, const Precision& p, Op& op, const KernelPlan& plan) {
  if (op.name == kPackedAttentionName) {
    set_packed_attention_work(op, m, b, p, plan);
  } else if (op.kind == OpKind::attention_prefill) {
    set_prefill_attention_work(op, m, b, p, plan);
  } else if (op.kind == OpKind::attention_decode) {
    set_decode_attention_work(op, m, b, p, plan);
  } else if (op.name == kKvConcatName) {
    op = kv_concat_op(m, b, p);
    set_stream_efficiency(op, plan);
  }
}

Op make_gemm_op(const char* name, std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k,
                const Precision& p) {
  Op op = gemm_op(name, 1, count, m, n, k, p, p.quant_scope == QuantScope::experts ? QuantScheme::none : p.quant);
  op.per_layer = 0;
  return op;
}

void build_iteration_ops(const ModelSpec& full, const BatchShape& b, const Precision& p, std::vector<Op>& out,
                         const KernelPlan& plan, std::int64_t tp, const MoeRouting& routing) {
  const ModelSpec m = full.sharded(tp, routing.ep);
  out.clear();
  const std::int64_t tokens = b.total_tokens();
  if (tokens == 0) return;
  const double t = static_cast<double>(tokens);
  const double h = static_cast<double>(m.hidden_size);
  const double ab = dtype_bytes(p.activations);
  const double wb = dtype_bytes(p.weights);
  const QuantScheme q = p.quant;
  // Scope experts: the routed experts alone take the scheme, every other projection the base dtype.
  const QuantScheme q_dense = p.quant_scope == QuantScope::experts ? QuantScheme::none : q;

  out.push_back(streaming_op("embedding", OpKind::embedding, 1, 0.0, t * h * (wb + ab)));
  out.back().placement = Placement::first_stage;
  const double hidden_bytes = t * h * ab;  // one residual-stream tensor: what TP all-reduces
  if (tp > 1) out.push_back(all_reduce_op("embedding_all_reduce", 1, 0, hidden_bytes, tp, Placement::first_stage, plan));
  if (m.is_moe() && m.moe.dense_layers > 0) push_dense_layer_mlps(m, t, tokens, p, plan, q_dense, out);
  // The identical layers, each op once with its per-layer count, in the order a layer runs them.
  push_norms_and_input_quant(m, t, p, plan, q_dense, m.is_moe() ? q : q_dense, out);
  push_qkv(m, b, t, tokens, p, plan, q_dense, out);
  push_attention(m, b, t, tokens, p, plan, q_dense, tp, hidden_bytes, out);
  push_mlp(m, t, tokens, p, plan, routing, q, q_dense, tp, hidden_bytes, out);
  push_head(m, full, b, t, p, plan, tp, out);
  if (plan.elementwise_bw_frac != 1.0) {
    for (Op& op : out) set_stream_efficiency(op, plan);
  }
  if (const QuantKernel k = plan.quant_kernels[static_cast<std::size_t>(q)]; k != QuantKernel::auto_) {
    for (Op& op : out) {
      if (op.kind == OpKind::gemm && op.quant == q) op.quant_kernel = k;
    }
  }
}

}  // namespace servesim
