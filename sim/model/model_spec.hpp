// ModelSpec: a decoder-only transformer's architecture, as read from a model card or a
// Hugging Face config.json. Sizes derived from it (parameters, KV bytes) live here too.
// Three optional parts cover the 2025 families: mixture-of-experts MLPs (Mixtral, Qwen3-MoE,
// DeepSeek-V3, Llama 4), multi-head latent attention (DeepSeek-V3) and sliding-window or chunked
// attention on some layers (Gemma 2/3, Llama 4). A model without them takes exactly the dense
// formulas (same arithmetic, so dense reports do not move).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "sim/core/dtype.hpp"
#include "sim/model/quant.hpp"

namespace servesim {

// Mixture-of-experts MLP: each MoE layer routes every token to `experts_per_token` of
// `num_experts` routed experts (a router GEMM scores them), and passes it through every shared
// expert. `dense_layers` layers keep the dense MLP of ModelSpec::ffn_size instead (DeepSeek-V3's
// first 3 layers, every other layer of Llama 4 Maverick); where they sit does not change cost.
struct MoeSpec {
  std::int64_t num_experts = 0;  // 0: dense model
  std::int64_t experts_per_token = 0;
  std::int64_t expert_ffn_size = 0;         // one routed expert's intermediate size (gated like the dense MLP)
  std::int64_t shared_experts = 0;
  std::int64_t shared_expert_ffn_size = 0;  // each shared expert's intermediate size
  std::int64_t dense_layers = 0;
  std::string router_scoring = "softmax";   // softmax (Mixtral, Qwen3) or sigmoid (DeepSeek-V3, Llama 4)
  // Group-limited routing (DeepSeek-V3: 8 groups, each token's experts from at most 4): kept for
  // the report; the cost model routes uniformly.
  std::int64_t router_groups = 0;
  std::int64_t router_groups_per_token = 0;
  // Set by ModelSpec::sharded: GPUs the routed experts are split over (expert parallelism).
  std::int64_t expert_parallel = 1;
  std::int64_t local_experts() const { return num_experts / std::max<std::int64_t>(1, expert_parallel); }
};

// Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank q_lora_rank
// bottleneck, keys and values from one shared latent of kv_lora_rank plus a qk_rope_head_dim
// rotary key, which is all the KV cache holds (per token and layer, whatever the head count, and
// the same on every GPU of a tensor-parallel group: vLLM replicates the latent cache).
struct MlaSpec {
  std::int64_t q_lora_rank = 0;  // 0: queries projected directly from the hidden state
  std::int64_t kv_lora_rank = 0; // 0: not MLA
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  std::int64_t kv_cache_width() const { return kv_lora_rank + qk_rope_head_dim; }
};

// Layers whose attention sees only the last `tokens` tokens (Gemma 2: every other layer, window
// 4096; Gemma 3: 5 of every 6, window 1024; Llama 4's chunked attention: 3 of every 4, chunk
// 8192, modelled as a window of the chunk size). Their KV cache holds at most `tokens` tokens per
// sequence and their attention reads at most that many.
struct SlidingWindowSpec {
  std::int64_t tokens = 0;  // 0: every layer attends to the whole context
  std::int64_t layers = 0;
};

struct ModelSpec {
  std::string name;
  std::string family;  // llama, mistral, qwen2, qwen3, phi3, chatglm, gemma2, gemma3, mixtral, qwen3_moe, deepseek_v3, llama4
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t ffn_size = 0;  // the dense MLP (of every layer, or of MoE models' dense layers)
  bool gated_mlp = true;
  std::int64_t vocab_size = 0;
  bool tied_embeddings = false;
  std::int64_t max_context_tokens = 0;
  MoeSpec moe;
  MlaSpec mla;
  SlidingWindowSpec sliding_window;

  bool is_moe() const { return moe.num_experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  bool has_sliding_window() const { return sliding_window.tokens > 0 && sliding_window.layers > 0; }
  std::int64_t moe_layers() const { return is_moe() ? num_layers - moe.dense_layers : 0; }
  std::int64_t dense_mlp_layers() const { return num_layers - moe_layers(); }

  std::int64_t q_width() const { return num_attention_heads * head_dim; }
  std::int64_t kv_width() const { return num_kv_heads * head_dim; }
  std::int64_t qkv_width() const { return q_width() + 2 * kv_width(); }
  std::int64_t mlp_in_width() const { return gated_mlp ? 2 * ffn_size : ffn_size; }
  std::int64_t gated_width(std::int64_t ffn) const { return gated_mlp ? 2 * ffn : ffn; }
  // MLA: the fused down-projection of the hidden state (q_a when q_lora_rank > 0, kv_a with the
  // rotary key), then the per-head up-projections and the attention output width.
  std::int64_t mla_down_width() const { return mla.q_lora_rank + mla.kv_cache_width(); }
  std::int64_t mla_q_width() const { return num_attention_heads * mla.qk_head_dim(); }
  std::int64_t mla_kv_up_width() const { return num_attention_heads * (mla.qk_nope_head_dim + mla.v_head_dim); }
  std::int64_t attn_out_width() const { return is_mla() ? num_attention_heads * mla.v_head_dim : q_width(); }

  // Parameters of one dense decoder layer (projections, MLP, two norm weight vectors).
  double layer_params() const {
    const double h = static_cast<double>(hidden_size);
    return h * static_cast<double>(qkv_width()) + static_cast<double>(q_width()) * h +
           h * static_cast<double>(mlp_in_width()) + static_cast<double>(ffn_size) * h + 2.0 * h;
  }
  // Attention projections of one layer (MLA: with its two low-rank norms).
  double attention_params() const {
    const double h = static_cast<double>(hidden_size);
    if (!is_mla()) return h * static_cast<double>(qkv_width()) + static_cast<double>(q_width()) * h;
    const double q_lora = static_cast<double>(mla.q_lora_rank);
    const double q = mla.q_lora_rank > 0 ? h * q_lora + q_lora + q_lora * static_cast<double>(mla_q_width())
                                         : h * static_cast<double>(mla_q_width());
    return q + h * static_cast<double>(mla.kv_cache_width()) + static_cast<double>(mla.kv_lora_rank) +
           static_cast<double>(mla.kv_lora_rank) * static_cast<double>(mla_kv_up_width()) +
           static_cast<double>(attn_out_width()) * h;
  }
  double mlp_params(std::int64_t ffn) const {
    return static_cast<double>(hidden_size) * static_cast<double>(gated_width(ffn) + ffn);
  }
  // Router, the experts this model (or shard) holds and the shared experts of one MoE layer.
  double router_params() const { return static_cast<double>(hidden_size) * static_cast<double>(moe.num_experts); }
  double moe_mlp_params() const {
    return router_params() + static_cast<double>(moe.local_experts()) * mlp_params(moe.expert_ffn_size) +
           static_cast<double>(moe.shared_experts) * mlp_params(moe.shared_expert_ffn_size);
  }
  // Parameters of all decoder layers.
  double all_layers_params() const {
    if (!is_moe() && !is_mla()) return static_cast<double>(num_layers) * layer_params();
    const double per_layer = attention_params() + 2.0 * static_cast<double>(hidden_size);
    return static_cast<double>(num_layers) * per_layer +
           static_cast<double>(dense_mlp_layers()) * mlp_params(ffn_size) +
           static_cast<double>(moe_layers()) * moe_mlp_params();
  }
  // Parameters one token passes through in the layers (routed experts: experts_per_token of them).
  double active_layers_params() const {
    if (!is_moe()) return all_layers_params();
    return all_layers_params() - static_cast<double>(moe_layers()) * static_cast<double>(moe.local_experts() - moe.experts_per_token) *
                                     mlp_params(moe.expert_ffn_size);
  }
  double embedding_params() const { return static_cast<double>(vocab_size) * static_cast<double>(hidden_size); }
  double total_params() const {
    const double lm_head = tied_embeddings ? 0.0 : embedding_params();
    return embedding_params() + lm_head + all_layers_params() + static_cast<double>(hidden_size);
  }
  double weight_bytes(Dtype weight_dtype) const { return total_params() * dtype_bytes(weight_dtype); }
  // With a quantization scheme: the layers' projections (experts included) are quantized;
  // embeddings, lm_head, norm weights and MoE routers stay in `base` (vLLM, AutoGPTQ, AutoAWQ and
  // the FP8/FP4 checkpoints of MoE models leave them unquantized).
  // Scope experts: the routed experts only.
  double weight_bytes(Dtype base, QuantScheme q, std::int64_t group_size, QuantScope scope = QuantScope::all) const {
    const double proj = quantized_params(scope);
    return (total_params() - proj) * dtype_bytes(base) + proj * quant_weight_bytes(q, base, group_size);
  }
  // The routed experts this model (or shard: local experts, their columns split) holds, over
  // every MoE layer.
  double routed_expert_params() const {
    return static_cast<double>(moe_layers()) * static_cast<double>(moe.local_experts()) * mlp_params(moe.expert_ffn_size);
  }
  // The layers' projection weights (experts included): what a quantization scheme quantizes;
  // scope experts, the routed experts' alone.
  double quantized_params(QuantScope scope = QuantScope::all) const {
    if (scope == QuantScope::experts) return routed_expert_params();
    const double h = static_cast<double>(hidden_size);
    if (!is_moe() && !is_mla()) return static_cast<double>(num_layers) * (layer_params() - 2.0 * h);
    const double mla_norms = is_mla() ? static_cast<double>(mla.q_lora_rank + mla.kv_lora_rank) : 0.0;
    return all_layers_params() - static_cast<double>(num_layers) * (2.0 * h + mla_norms) -
           static_cast<double>(moe_layers()) * router_params();
  }
  // The slice of the model one GPU of a tensor-parallel group of `tp` holds (Megatron-style):
  // attention heads, MLP columns and the vocabulary split tp ways, KV heads split too but
  // replicated once tp exceeds them (vLLM keeps one KV head per GPU), hidden size and norms whole.
  // Routed experts split over `ep` GPUs of the group (ep divides tp), each expert's columns over
  // the tp / ep GPUs that share it; shared experts split tp ways like the dense MLP. MLA's
  // low-rank down-projections and latent KV are replicated.
  // Callers check divisibility first (parallel_config_error in sim/serve/parallel.hpp).
  ModelSpec sharded(std::int64_t tp, std::int64_t ep = 1) const {
    ModelSpec s = *this;
    if (tp <= 1 && ep <= 1) return s;
    s.num_attention_heads = num_attention_heads / tp;
    s.num_kv_heads = num_kv_heads >= tp ? num_kv_heads / tp : 1;
    s.ffn_size = (ffn_size + tp - 1) / tp;
    s.vocab_size = (vocab_size + tp - 1) / tp;
    if (is_moe()) {
      const std::int64_t expert_tp = std::max<std::int64_t>(1, tp / std::max<std::int64_t>(1, ep));
      s.moe.expert_parallel = std::max<std::int64_t>(1, ep);
      s.moe.expert_ffn_size = (moe.expert_ffn_size + expert_tp - 1) / expert_tp;
      s.moe.shared_expert_ffn_size = (moe.shared_expert_ffn_size + tp - 1) / tp;
    }
    return s;
  }
  // One pipeline stage of `layers` layers, the fullest one: the dense and sliding-window layers
  // (whose place in the stack the model does not track) go to the other stages first.
  ModelSpec stage(std::int64_t layers) const {
    ModelSpec s = *this;
    const std::int64_t others = num_layers - layers;
    s.num_layers = layers;
    if (is_moe()) s.moe.dense_layers = std::max<std::int64_t>(0, moe.dense_layers - others);
    if (has_sliding_window()) s.sliding_window.layers = std::max<std::int64_t>(0, sliding_window.layers - others);
    return s;
  }
  // Bytes of one cached element in `kv_dtype`, scales included (one per token and KV head; MLA:
  // per token of the latent).
  double kv_element_bytes(Dtype kv_dtype) const {
    return kv_cache_element_bytes(kv_dtype, is_mla() ? mla.kv_cache_width() : head_dim);
  }
  // KV cache bytes of one token in one layer (K and V; MLA: the latent and the rotary key).
  double kv_bytes_per_token_layer(Dtype kv_dtype) const {
    if (is_mla()) return static_cast<double>(mla.kv_cache_width()) * kv_element_bytes(kv_dtype);
    return 2.0 * static_cast<double>(kv_width()) * kv_element_bytes(kv_dtype);
  }
  // KV cache bytes one token occupies across all layers (K and V): a sequence shorter than the
  // sliding window holds this much per token.
  double kv_bytes_per_token(Dtype kv_dtype) const {
    if (is_mla()) return static_cast<double>(num_layers) * kv_bytes_per_token_layer(kv_dtype);
    return 2.0 * static_cast<double>(num_layers) * static_cast<double>(kv_width()) * kv_element_bytes(kv_dtype);
  }
  // KV cache bytes of one sequence of `tokens` tokens: sliding-window layers keep at most the window.
  double kv_bytes(std::int64_t tokens, Dtype kv_dtype) const {
    if (!has_sliding_window()) return static_cast<double>(tokens) * kv_bytes_per_token(kv_dtype);
    const double full_layers = static_cast<double>(num_layers - sliding_window.layers);
    const double windowed = static_cast<double>(std::min(tokens, sliding_window.tokens));
    return (full_layers * static_cast<double>(tokens) + static_cast<double>(sliding_window.layers) * windowed) *
           kv_bytes_per_token_layer(kv_dtype);
  }
};

// Why a quantization scope cannot apply to `m` ("" when it can): experts needs routed experts.
inline std::string quant_scope_refusal(QuantScope scope, const ModelSpec& m) {
  if (scope != QuantScope::experts || m.is_moe()) return "";
  return "experts quantizes the routed experts only, and " + m.name + " has none (a dense model)";
}

}  // namespace servesim
