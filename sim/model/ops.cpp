// FLOP and byte counts per op. Bytes are the minimum each kernel must move through device memory
// (inputs read once, outputs written once); the cost model turns them into time.
#include "sim/model/ops.hpp"

#include <algorithm>

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
  }
  return "?";
}

bool is_communication(OpKind k) { return k == OpKind::all_reduce || k == OpKind::all_gather; }

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
  decode_kv_tokens += static_cast<double>(context_tokens + 1);
}

Op make_gemm_op(const char* name, std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k,
                const Precision& p) {
  Op op{name, OpKind::gemm, count};
  op.m = m;
  op.n = n;
  op.k = k;
  const double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  op.flops = 2.0 * md * nd * kd;
  const double out_bytes = std::max(2.0, dtype_bytes(p.activations));
  op.bytes = md * kd * dtype_bytes(p.activations) + kd * nd * dtype_bytes(p.weights) + md * nd * out_bytes;
  return op;
}

namespace {

Op streaming_op(const char* name, OpKind kind, std::int64_t count, double flops, double bytes) {
  Op op{name, kind, count};
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

Op comm_op(const char* name, OpKind kind, std::int64_t count, double bytes, std::int64_t gpus, Placement where) {
  Op op{name, kind, count};
  op.bytes = bytes;
  op.comm_gpus = static_cast<int>(gpus);
  op.placement = where;
  return op;
}

}  // namespace

void build_iteration_ops(const ModelSpec& full, const BatchShape& b, const Precision& p, std::vector<Op>& out,
                         std::int64_t tp) {
  const ModelSpec m = full.sharded(tp);
  out.clear();
  const std::int64_t tokens = b.total_tokens();
  if (tokens == 0) return;
  const std::int64_t layers = m.num_layers;
  const double t = static_cast<double>(tokens);
  const double h = static_cast<double>(m.hidden_size);
  const double ab = dtype_bytes(p.activations);
  const double wb = dtype_bytes(p.weights);
  const double kvb = dtype_bytes(p.kv_cache);
  const double q_w = static_cast<double>(m.q_width());
  const double kv_w = static_cast<double>(m.kv_width());
  const double ffn = static_cast<double>(m.ffn_size);
  const double heads_x_dim = static_cast<double>(m.num_attention_heads * m.head_dim);

  out.push_back(streaming_op("embedding", OpKind::embedding, 1, 0.0, t * h * (wb + ab)));
  out.back().placement = Placement::first_stage;
  const double hidden_bytes = t * h * ab;  // one residual-stream tensor: what TP all-reduces
  if (tp > 1) out.push_back(comm_op("embedding_all_reduce", OpKind::all_reduce, 1, hidden_bytes, tp, Placement::first_stage));

  const Op norm = streaming_op("rmsnorm", OpKind::norm, 2 * layers, 4.0 * t * h, 2.0 * t * h * ab + h * wb);
  out.push_back(norm);
  out.push_back(make_gemm_op("qkv_proj", layers, tokens, m.qkv_width(), m.hidden_size, p));
  out.push_back(streaming_op("rope", OpKind::rope, layers, 3.0 * t * (q_w + kv_w), 2.0 * t * (q_w + kv_w) * ab));
  out.push_back(streaming_op("kv_cache_write", OpKind::kv_write, layers, 0.0, 2.0 * t * kv_w * (ab + kvb)));

  if (b.prefill_seqs > 0) {
    Op attn = streaming_op("attention_prefill", OpKind::attention_prefill, layers,
                           4.0 * heads_x_dim * b.prefill_attn_pairs,
                           2.0 * static_cast<double>(b.prefill_tokens) * q_w * ab +
                               b.prefill_kv_tokens * 2.0 * kv_w * kvb);
    attn.attn_seqs = b.prefill_seqs;
    attn.attn_kv_heads = m.num_kv_heads;
    attn.attn_kv_tokens = b.prefill_kv_tokens;
    out.push_back(attn);
  }
  if (b.decode_seqs > 0) {
    Op attn = streaming_op("attention_decode", OpKind::attention_decode, layers,
                           4.0 * heads_x_dim * b.decode_kv_tokens,
                           2.0 * static_cast<double>(b.decode_seqs) * q_w * ab + b.decode_kv_tokens * 2.0 * kv_w * kvb);
    attn.attn_seqs = b.decode_seqs;
    attn.attn_kv_heads = m.num_kv_heads;
    attn.attn_kv_tokens = b.decode_kv_tokens;
    out.push_back(attn);
  }

  out.push_back(make_gemm_op("o_proj", layers, tokens, m.hidden_size, m.q_width(), p));
  if (tp > 1) out.push_back(comm_op("attn_all_reduce", OpKind::all_reduce, layers, hidden_bytes, tp, Placement::layer));
  out.push_back(streaming_op("residual_add", OpKind::elementwise, 2 * layers, t * h, 3.0 * t * h * ab));
  out.push_back(make_gemm_op(m.gated_mlp ? "mlp_gate_up_proj" : "mlp_up_proj", layers, tokens, m.mlp_in_width(),
                        m.hidden_size, p));
  const double act_reads = m.gated_mlp ? 2.0 : 1.0;
  out.push_back(streaming_op("mlp_act", OpKind::elementwise, layers, 5.0 * t * ffn, (act_reads + 1.0) * t * ffn * ab));
  out.push_back(make_gemm_op("mlp_down_proj", layers, tokens, m.hidden_size, m.ffn_size, p));
  if (tp > 1) out.push_back(comm_op("mlp_all_reduce", OpKind::all_reduce, layers, hidden_bytes, tp, Placement::layer));

  out.push_back(streaming_op("final_rmsnorm", OpKind::norm, 1, 4.0 * t * h, 2.0 * t * h * ab + h * wb));
  out.back().placement = Placement::last_stage;
  const std::int64_t sampled = b.sampled_seqs();
  if (sampled > 0) {
    out.push_back(make_gemm_op("lm_head", 1, sampled, m.vocab_size, m.hidden_size, p));
    out.back().placement = Placement::last_stage;
    const double s_rows = static_cast<double>(sampled);
    if (tp > 1) {
      out.push_back(comm_op("logits_all_gather", OpKind::all_gather, 1, s_rows * static_cast<double>(full.vocab_size) * ab,
                            tp, Placement::last_stage));
    }
    // Sampling sees the whole vocabulary (gathered logits).
    const double logits = s_rows * static_cast<double>(full.vocab_size);
    out.push_back(streaming_op("sampler", OpKind::sampler, 1, 5.0 * logits, logits * 4.0));
    out.back().placement = Placement::last_stage;
  }
}

}  // namespace servesim
