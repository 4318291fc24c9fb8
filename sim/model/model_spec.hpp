// ModelSpec: a decoder-only transformer's architecture, as read from a model card or a
// Hugging Face config.json. Sizes derived from it (parameters, KV bytes) live here too.
#pragma once
#include <cstdint>
#include <string>

#include "sim/core/dtype.hpp"
#include "sim/model/quant.hpp"

namespace servesim {

struct ModelSpec {
  std::string name;
  std::string family;  // llama, mistral, qwen2, phi3, chatglm
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t ffn_size = 0;
  bool gated_mlp = true;
  std::int64_t vocab_size = 0;
  bool tied_embeddings = false;
  std::int64_t max_context_tokens = 0;

  std::int64_t q_width() const { return num_attention_heads * head_dim; }
  std::int64_t kv_width() const { return num_kv_heads * head_dim; }
  std::int64_t qkv_width() const { return q_width() + 2 * kv_width(); }
  std::int64_t mlp_in_width() const { return gated_mlp ? 2 * ffn_size : ffn_size; }

  // Parameters of one decoder layer (projections, MLP, two norm weight vectors).
  double layer_params() const {
    const double h = static_cast<double>(hidden_size);
    return h * static_cast<double>(qkv_width()) + static_cast<double>(q_width()) * h +
           h * static_cast<double>(mlp_in_width()) + static_cast<double>(ffn_size) * h + 2.0 * h;
  }
  double embedding_params() const { return static_cast<double>(vocab_size) * static_cast<double>(hidden_size); }
  double total_params() const {
    const double lm_head = tied_embeddings ? 0.0 : embedding_params();
    return embedding_params() + lm_head + static_cast<double>(num_layers) * layer_params() +
           static_cast<double>(hidden_size);
  }
  double weight_bytes(Dtype weight_dtype) const { return total_params() * dtype_bytes(weight_dtype); }
  // With a quantization scheme: the layers' projections are quantized; embeddings, lm_head and
  // norm weights stay in `base` (vLLM, AutoGPTQ and AutoAWQ leave them unquantized).
  double weight_bytes(Dtype base, QuantScheme q, std::int64_t group_size) const {
    const double h = static_cast<double>(hidden_size);
    const double proj = static_cast<double>(num_layers) * (layer_params() - 2.0 * h);
    return (total_params() - proj) * dtype_bytes(base) + proj * quant_weight_bytes(q, base, group_size);
  }
  // The slice of the model one GPU of a tensor-parallel group of `tp` holds (Megatron-style):
  // attention heads, MLP columns and the vocabulary split tp ways, KV heads split too but
  // replicated once tp exceeds them (vLLM keeps one KV head per GPU), hidden size and norms whole.
  // Callers check divisibility first (parallel_config_error in sim/serve/parallel.hpp).
  ModelSpec sharded(std::int64_t tp) const {
    ModelSpec s = *this;
    if (tp <= 1) return s;
    s.num_attention_heads = num_attention_heads / tp;
    s.num_kv_heads = num_kv_heads >= tp ? num_kv_heads / tp : 1;
    s.ffn_size = (ffn_size + tp - 1) / tp;
    s.vocab_size = (vocab_size + tp - 1) / tp;
    return s;
  }
  // KV cache bytes one token occupies across all layers (K and V).
  double kv_bytes_per_token(Dtype kv_dtype) const {
    return 2.0 * static_cast<double>(num_layers) * static_cast<double>(kv_width()) * dtype_bytes(kv_dtype);
  }
};

}  // namespace servesim
