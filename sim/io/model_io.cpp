// Model card and Hugging Face config parsing. Model cards are strict (unknown keys are errors);
// HF configs carry many keys irrelevant to serving cost, so only the ones we need are read,
// each with its type checked.
#include "sim/io/model_io.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

// Upper bounds well above any real model (Llama-3-405B: 126 layers, hidden 16384, vocab 128K;
// DeepSeek-V3: 256 experts), so sizes multiplied together stay far from int64 overflow.
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxWidth = 1 << 20;    // hidden, ffn, head_dim x heads
constexpr std::int64_t kMaxHeads = 1 << 14;
constexpr std::int64_t kMaxVocab = 1 << 24;
constexpr std::int64_t kMaxContext = 1 << 24;  // 16M tokens
constexpr std::int64_t kMaxExperts = 1 << 14;

// The file's own name for each model card key the checks below talk about: a Hugging Face config
// spells them its way (num_key_value_heads, num_experts_per_tok, text_config.*), and an error must
// name the key in the file the user has. Absent: the card's name.
using KeyNames = std::map<std::string, std::string>;

// Cross-key checks of a parsed model; `names` maps card keys to the file's.
void check_consistent(const ModelSpec& m, const std::string& file, const KeyNames& names) {
  const auto k = [&names](const std::string& card) {
    const auto it = names.find(card);
    return it == names.end() ? card : it->second;
  };
  const auto fail = [&](const std::string& card, const std::string& message) { throw InputError(file, k(card), message); };
  if (m.head_dim <= 0) {
    fail("head_dim", "must be > 0 (" + k("hidden_size") + " " + std::to_string(m.hidden_size) + " / " + std::to_string(m.num_attention_heads) +
                         " heads rounds to 0)");
  }
  if (m.head_dim * m.num_attention_heads > kMaxWidth) {
    fail("head_dim", k("head_dim") + " x " + k("num_attention_heads") + " must be <= " + std::to_string(kMaxWidth));
  }
  if (m.num_kv_heads > m.num_attention_heads) {
    fail("num_kv_heads", "must be <= " + k("num_attention_heads") + " (" + std::to_string(m.num_attention_heads) + ")");
  }
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    fail("num_kv_heads", "must divide " + k("num_attention_heads") + " (" + std::to_string(m.num_attention_heads) + "), got " +
                             std::to_string(m.num_kv_heads));
  }
  if (m.is_moe()) {
    if (m.moe.experts_per_token < 1 || m.moe.experts_per_token > m.moe.num_experts) {
      fail("moe.experts_per_token", "must be in [1, " + k("moe.num_experts") + " " + std::to_string(m.moe.num_experts) + "], got " +
                                        std::to_string(m.moe.experts_per_token));
    }
    if (m.moe.expert_ffn_size < 1) fail("moe.expert_ffn_size", "must be > 0");
    if (m.moe.dense_layers < 0 || m.moe.dense_layers >= m.num_layers) {
      fail("moe.dense_layers", "leaves " + std::to_string(m.num_layers - m.moe.dense_layers) + " of " + k("num_layers") + " " +
                                   std::to_string(m.num_layers) + " layers with experts: at least 1 must have them");
    }
    if ((m.moe.shared_experts > 0) != (m.moe.shared_expert_ffn_size > 0)) {
      fail("moe.shared_expert_ffn_size", "must be > 0 exactly when shared_experts > 0");
    }
  }
  if (m.is_mla() && (m.mla.qk_nope_head_dim < 1 || m.mla.qk_rope_head_dim < 1 || m.mla.v_head_dim < 1)) {
    fail("mla", "qk_nope_head_dim, qk_rope_head_dim and v_head_dim must be > 0");
  }
  if (m.sliding_window.layers > m.num_layers) {
    fail("sliding_window.layers", "makes " + std::to_string(m.sliding_window.layers) + " layers windowed, more than " + k("num_layers") +
                                      " (" + std::to_string(m.num_layers) + ")");
  }
}

// The Hugging Face keys of a family (`type`) for the card keys check_consistent names; `prefix` is
// "text_config." for a multimodal wrapper's language model.
KeyNames hf_key_names(const std::string& type, const std::string& prefix, const JsonReader& r) {
  KeyNames n = {{"num_layers", "num_hidden_layers"},     {"hidden_size", "hidden_size"}, {"num_attention_heads", "num_attention_heads"},
                {"num_kv_heads", "num_key_value_heads"}, {"head_dim", "head_dim"}};
  if (type == "chatglm") n = {{"num_kv_heads", "multi_query_group_num"}, {"head_dim", "kv_channels"}};
  if (type == "mixtral" || type == "llama4" || type == "gpt_oss") {
    n["moe.num_experts"] = "num_local_experts";
    n["moe.expert_ffn_size"] = "intermediate_size";
  }
  if (type == "qwen3_moe") {
    n["moe.num_experts"] = "num_experts";
    n["moe.expert_ffn_size"] = "moe_intermediate_size";
    n["moe.dense_layers"] = r.has("mlp_only_layers") ? "mlp_only_layers" : "decoder_sparse_step";
    n["moe.shared_expert_ffn_size"] = "shared_expert_intermediate_size";
  }
  if (type == "deepseek_v3") {
    n["num_kv_heads"] = "num_attention_heads";  // MLA: one latent cache, as many heads as queries
    n["head_dim"] = "qk_nope_head_dim";
    n["moe.num_experts"] = "n_routed_experts";
    n["moe.expert_ffn_size"] = "moe_intermediate_size";
    n["moe.dense_layers"] = "first_k_dense_replace";
    n["moe.shared_expert_ffn_size"] = "n_shared_experts";
  }
  if (type == "llama4") {
    n["moe.dense_layers"] = r.has("moe_layers") ? "moe_layers" : "interleave_moe_layer_step";
    n["sliding_window.layers"] = "no_rope_layers";
  }
  if (type.rfind("gemma", 0) == 0) n["sliding_window.layers"] = r.has("layer_types") ? "layer_types" : "sliding_window_pattern";
  if (type == "gpt_oss") n["sliding_window.layers"] = "layer_types";
  n["moe.experts_per_token"] = "num_experts_per_tok";
  for (auto& [card, hf] : n) hf = prefix + hf;
  return n;
}

// An integer HF key that may be absent or null (both mean `fallback`).
std::int64_t int_or_null(JsonReader& r, const std::string& key, std::int64_t lo, std::int64_t hi, std::int64_t fallback) {
  if (!r.has(key) || r.raw(key).is_null()) return fallback;
  return r.integer_in(key, lo, hi);
}

// The length of a list-valued HF key (mlp_only_layers, moe_layers), or -1 when absent or null.
std::int64_t list_size_or(JsonReader& r, const std::string& key) {
  if (!r.has(key) || r.raw(key).is_null()) return -1;
  const auto& j = r.raw(key);
  if (!j.is_array()) r.fail(key, "must be a list");
  return static_cast<std::int64_t>(j.size());
}

MoeSpec parse_card_moe(JsonReader r) {
  MoeSpec e;
  e.num_experts = r.integer_in("num_experts", 1, kMaxExperts);
  e.experts_per_token = r.integer_in("experts_per_token", 1, kMaxExperts);
  e.expert_ffn_size = r.integer_in("expert_ffn_size", 1, kMaxWidth);
  e.shared_experts = r.integer_in_or("shared_experts", 0, kMaxExperts, 0);
  e.shared_expert_ffn_size = r.integer_in_or("shared_expert_ffn_size", 0, kMaxWidth, 0);
  e.dense_layers = r.integer_in_or("dense_layers", 0, kMaxLayers, 0);
  if (auto router = r.object_if("router")) {
    e.router_scoring = router->string_or("scoring", "softmax");
    if (e.router_scoring != "softmax" && e.router_scoring != "sigmoid") {
      router->fail("scoring", "must be softmax or sigmoid, got '" + e.router_scoring + "'");
    }
    e.router_groups = router->integer_in_or("groups", 0, kMaxExperts, 0);
    e.router_groups_per_token = router->integer_in_or("groups_per_token", 0, kMaxExperts, 0);
    router->finish();
  }
  r.finish();
  return e;
}

MlaSpec parse_card_mla(JsonReader r) {
  MlaSpec a;
  a.q_lora_rank = r.integer_in_or("q_lora_rank", 0, kMaxWidth, 0);
  a.kv_lora_rank = r.integer_in("kv_lora_rank", 1, kMaxWidth);
  a.qk_nope_head_dim = r.integer_in("qk_nope_head_dim", 1, kMaxWidth);
  a.qk_rope_head_dim = r.integer_in("qk_rope_head_dim", 1, kMaxWidth);
  a.v_head_dim = r.integer_in("v_head_dim", 1, kMaxWidth);
  r.finish();
  return a;
}

ModelSpec parse_card(JsonReader& r) {
  ModelSpec m;
  r.accept("schema");
  r.accept("source");
  r.accept("sources");
  r.accept("hf_id");
  m.name = r.string("name");
  m.family = r.string("family");
  m.num_layers = r.integer_in("num_layers", 1, kMaxLayers);
  m.hidden_size = r.integer_in("hidden_size", 1, kMaxWidth);
  m.num_attention_heads = r.integer_in("num_attention_heads", 1, kMaxHeads);
  m.num_kv_heads = r.integer_in("num_kv_heads", 1, kMaxHeads);
  m.head_dim = r.integer_in_or("head_dim", 1, kMaxWidth, m.hidden_size / m.num_attention_heads);
  m.ffn_size = r.integer_in("ffn_size", 1, kMaxWidth);
  m.gated_mlp = r.boolean("gated_mlp");
  m.vocab_size = r.integer_in("vocab_size", 1, kMaxVocab);
  m.tied_embeddings = r.boolean("tied_embeddings");
  m.max_context_tokens = r.integer_in("max_context_tokens", 1, kMaxContext);
  if (auto moe = r.object_if("moe")) m.moe = parse_card_moe(*moe);
  if (auto mla = r.object_if("mla")) {
    m.mla = parse_card_mla(*mla);
    m.head_dim = m.mla.qk_head_dim();
  }
  if (auto sw = r.object_if("sliding_window")) {
    m.sliding_window.tokens = sw->integer_in("tokens", 1, kMaxContext);
    m.sliding_window.layers = sw->integer_in("layers", 1, kMaxLayers);
    sw->finish();
  }
  r.finish();
  return m;
}

// Keys the llama-shaped families share (llama, mistral, qwen2, qwen3, phi3, gemma2/3, mixtral,
// qwen3_moe, llama4's text part, gpt_oss).
void parse_llama_like(JsonReader& r, ModelSpec& m, bool tied_default) {
  m.num_layers = r.integer_in("num_hidden_layers", 1, kMaxLayers);
  m.hidden_size = r.integer_in("hidden_size", 1, kMaxWidth);
  m.num_attention_heads = r.integer_in("num_attention_heads", 1, kMaxHeads);
  m.num_kv_heads = int_or_null(r, "num_key_value_heads", 1, kMaxHeads, m.num_attention_heads);
  m.head_dim = int_or_null(r, "head_dim", 1, kMaxWidth, m.hidden_size / m.num_attention_heads);
  m.gated_mlp = true;  // SiLU- or GELU-gated MLPs in every family read here
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", tied_default);
}

// The layers a config's layer_types list names "sliding_attention" (Gemma 3's newer configs,
// GPT-OSS), or -1 when it has no such list.
std::int64_t sliding_layer_types(JsonReader& r) {
  if (!r.has("layer_types") || !r.raw("layer_types").is_array()) return -1;
  std::int64_t sliding = 0;
  for (const auto& t : r.raw("layer_types")) {
    if (!t.is_string()) r.fail("layer_types", "must be a list of strings");
    if (t.get<std::string>() == "sliding_attention") ++sliding;
  }
  return sliding;
}

// Gemma 2 and 3: sliding-window layers alternate with global ones. Gemma 3 names each layer's
// kind in layer_types (newer configs) or repeats a pattern of (p - 1) sliding layers and one
// global (sliding_window_pattern, default 6 in transformers' Gemma3TextConfig).
void parse_gemma_window(JsonReader& r, ModelSpec& m, bool gemma3) {
  m.sliding_window.tokens = int_or_null(r, "sliding_window", 1, kMaxContext, gemma3 ? 1024 : 4096);
  if (const std::int64_t listed = sliding_layer_types(r); listed >= 0) {
    m.sliding_window.layers = listed;
  } else if (gemma3) {
    const std::string key = r.has("sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
    const std::int64_t p = int_or_null(r, key, 1, kMaxLayers, 6);
    m.sliding_window.layers = m.num_layers - m.num_layers / p;
  } else {
    m.sliding_window.layers = (m.num_layers + 1) / 2;  // Gemma 2: even-indexed layers are local
  }
}

// ChatGLM2/3: its own key names (num_layers, kv_channels, multi_query_group_num, seq_length).
void parse_hf_chatglm(JsonReader& r, ModelSpec& m) {
  m.num_layers = r.integer_in("num_layers", 1, kMaxLayers);
  m.hidden_size = r.integer_in("hidden_size", 1, kMaxWidth);
  m.num_attention_heads = r.integer_in("num_attention_heads", 1, kMaxHeads);
  const bool mqa = r.boolean_or("multi_query_attention", false);
  m.num_kv_heads = mqa ? r.integer_in("multi_query_group_num", 1, kMaxHeads) : m.num_attention_heads;
  m.head_dim = r.integer_in_or("kv_channels", 1, kMaxWidth, m.hidden_size / m.num_attention_heads);
  m.ffn_size = r.integer_in("ffn_hidden_size", 1, kMaxWidth);
  m.gated_mlp = true;  // ChatGLM2/3 use SwiGLU
  m.vocab_size = r.integer_in("padded_vocab_size", 1, kMaxVocab);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  m.max_context_tokens = r.integer_in("seq_length", 1, kMaxContext);
}

// Llama, Mistral, Qwen2, Phi-3: dense decoders, grouped-query attention.
void parse_hf_llama_family(JsonReader& r, ModelSpec& m) {
  m.num_layers = r.integer_in("num_hidden_layers", 1, kMaxLayers);
  m.hidden_size = r.integer_in("hidden_size", 1, kMaxWidth);
  m.num_attention_heads = r.integer_in("num_attention_heads", 1, kMaxHeads);
  m.num_kv_heads = r.integer_in_or("num_key_value_heads", 1, kMaxHeads, m.num_attention_heads);
  m.head_dim = m.hidden_size / m.num_attention_heads;
  if (r.has("head_dim") && !r.raw("head_dim").is_null()) m.head_dim = r.integer_in("head_dim", 1, kMaxWidth);
  m.ffn_size = r.integer_in("intermediate_size", 1, kMaxWidth);
  m.gated_mlp = true;  // all four families use SiLU-gated MLPs
  m.vocab_size = r.integer_in("vocab_size", 1, kMaxVocab);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  m.max_context_tokens = r.integer_in("max_position_embeddings", 1, kMaxContext);
}

// Qwen3 and Gemma 2/3: llama-like keys; Gemma adds sliding-window layers.
void parse_hf_qwen3_gemma(JsonReader& r, ModelSpec& m, const std::string& type) {
  // Gemma ties its embeddings and defaults (transformers' Gemma3TextConfig) vocab 262208 and
  // 131072 positions, which the released text_config leaves out.
  const bool gemma = type != "qwen3", gemma3 = type != "qwen3" && type != "gemma2";
  parse_llama_like(r, m, gemma);
  m.ffn_size = r.integer_in("intermediate_size", 1, kMaxWidth);
  m.vocab_size = gemma3 ? r.integer_in_or("vocab_size", 1, kMaxVocab, 262208) : r.integer_in("vocab_size", 1, kMaxVocab);
  m.max_context_tokens = gemma3 ? r.integer_in_or("max_position_embeddings", 1, kMaxContext, 131072)
                                : r.integer_in("max_position_embeddings", 1, kMaxContext);
  if (gemma) parse_gemma_window(r, m, gemma3);
}

// Mixtral, Qwen3-MoE and GPT-OSS: llama-like attention, routed experts in the MLP. GPT-OSS keys
// its experts as Mixtral does (num_local_experts of intermediate_size, every layer) and windows
// the layers its layer_types names (absent: the even-indexed ones, as transformers' GptOssConfig
// and OpenAI's reference model, gpt_oss/torch/model.py, place them) to sliding_window tokens.
void parse_hf_mixtral_qwen3_moe(JsonReader& r, ModelSpec& m, const std::string& type) {
  parse_llama_like(r, m, false);
  m.vocab_size = r.integer_in("vocab_size", 1, kMaxVocab);
  m.max_context_tokens = r.integer_in("max_position_embeddings", 1, kMaxContext);
  if (type == "gpt_oss") {
    m.sliding_window.tokens = int_or_null(r, "sliding_window", 1, kMaxContext, 128);
    const std::int64_t listed = sliding_layer_types(r);
    m.sliding_window.layers = listed >= 0 ? listed : (m.num_layers + 1) / 2;
  }
  if (type == "mixtral" || type == "gpt_oss") {
    m.moe.num_experts = r.integer_in("num_local_experts", 1, kMaxExperts);
    m.moe.expert_ffn_size = r.integer_in("intermediate_size", 1, kMaxWidth);
    m.ffn_size = m.moe.expert_ffn_size;  // no dense layers
  } else {
    m.moe.num_experts = r.integer_in("num_experts", 1, kMaxExperts);
    m.moe.expert_ffn_size = r.integer_in("moe_intermediate_size", 1, kMaxWidth);
    m.ffn_size = r.integer_in("intermediate_size", 1, kMaxWidth);  // layers listed in mlp_only_layers
    // A layer is dense when listed in mlp_only_layers or off the decoder_sparse_step grid.
    const std::int64_t step = int_or_null(r, "decoder_sparse_step", 1, kMaxLayers, 1);
    const std::int64_t listed = std::max<std::int64_t>(0, list_size_or(r, "mlp_only_layers"));
    m.moe.dense_layers = std::min(m.num_layers - 1, m.num_layers - m.num_layers / step + listed);
    m.moe.shared_expert_ffn_size = int_or_null(r, "shared_expert_intermediate_size", 0, kMaxWidth, 0);
    m.moe.shared_experts = m.moe.shared_expert_ffn_size > 0 ? 1 : 0;
  }
  m.moe.experts_per_token = r.integer_in("num_experts_per_tok", 1, kMaxExperts);
}

// DeepSeek-V3: multi-head latent attention, routed and shared experts, the first layers dense.
void parse_hf_deepseek_v3(JsonReader& r, ModelSpec& m) {
  parse_llama_like(r, m, false);
  m.num_kv_heads = m.num_attention_heads;  // MLA: the latent cache replaces per-head KV
  m.ffn_size = r.integer_in("intermediate_size", 1, kMaxWidth);
  m.vocab_size = r.integer_in("vocab_size", 1, kMaxVocab);
  m.max_context_tokens = r.integer_in("max_position_embeddings", 1, kMaxContext);
  m.mla.q_lora_rank = int_or_null(r, "q_lora_rank", 0, kMaxWidth, 0);
  m.mla.kv_lora_rank = r.integer_in("kv_lora_rank", 1, kMaxWidth);
  m.mla.qk_nope_head_dim = r.integer_in("qk_nope_head_dim", 1, kMaxWidth);
  m.mla.qk_rope_head_dim = r.integer_in("qk_rope_head_dim", 1, kMaxWidth);
  m.mla.v_head_dim = r.integer_in("v_head_dim", 1, kMaxWidth);
  m.head_dim = m.mla.qk_head_dim();
  m.moe.num_experts = r.integer_in("n_routed_experts", 1, kMaxExperts);
  m.moe.experts_per_token = r.integer_in("num_experts_per_tok", 1, kMaxExperts);
  m.moe.expert_ffn_size = r.integer_in("moe_intermediate_size", 1, kMaxWidth);
  // DeepSeek's shared experts are one MLP n_shared_experts times an expert's width.
  const std::int64_t shared = int_or_null(r, "n_shared_experts", 0, kMaxExperts, 0);
  m.moe.shared_experts = shared > 0 ? 1 : 0;
  m.moe.shared_expert_ffn_size = shared * m.moe.expert_ffn_size;
  const std::int64_t freq = int_or_null(r, "moe_layer_freq", 1, kMaxLayers, 1);
  const std::int64_t first_dense = int_or_null(r, "first_k_dense_replace", 0, kMaxLayers, 0);
  std::int64_t moe_layers = 0;
  for (std::int64_t i = first_dense; i < m.num_layers; ++i) moe_layers += i % freq == 0 ? 1 : 0;
  m.moe.dense_layers = m.num_layers - moe_layers;
  m.moe.router_scoring = r.string_or("scoring_func", "softmax");
  if (m.moe.router_scoring != "softmax" && m.moe.router_scoring != "sigmoid") {
    r.fail("scoring_func", "must be softmax or sigmoid, got '" + m.moe.router_scoring + "'");
  }
  m.moe.router_groups = int_or_null(r, "n_group", 0, kMaxExperts, 0);
  m.moe.router_groups_per_token = int_or_null(r, "topk_group", 0, kMaxExperts, 0);
}

// Llama 4, the text part: routed experts of intermediate_size plus one shared expert of the same
// width in every MoE layer; dense layers use intermediate_size_mlp. Chunked attention
// (attention_chunk_size) on the RoPE layers, global attention on the NoPE ones.
void parse_hf_llama4(JsonReader& r, ModelSpec& m) {
  parse_llama_like(r, m, false);
  m.vocab_size = r.integer_in("vocab_size", 1, kMaxVocab);
  m.max_context_tokens = r.integer_in("max_position_embeddings", 1, kMaxContext);
  m.moe.num_experts = r.integer_in("num_local_experts", 1, kMaxExperts);
  m.moe.experts_per_token = r.integer_in("num_experts_per_tok", 1, kMaxExperts);
  m.moe.expert_ffn_size = r.integer_in("intermediate_size", 1, kMaxWidth);
  m.moe.shared_experts = 1;
  m.moe.shared_expert_ffn_size = m.moe.expert_ffn_size;
  m.moe.router_scoring = "sigmoid";
  m.ffn_size = r.integer_in_or("intermediate_size_mlp", 1, kMaxWidth, m.moe.expert_ffn_size);
  const std::int64_t listed = list_size_or(r, "moe_layers");
  const std::int64_t step = int_or_null(r, "interleave_moe_layer_step", 0, kMaxLayers, 1);
  const std::int64_t moe_layers = listed > 0 ? listed : (step > 0 ? m.num_layers / step : 0);
  if (moe_layers < 1) r.fail("interleave_moe_layer_step", "the model has no MoE layer");
  m.moe.dense_layers = m.num_layers - std::min(moe_layers, m.num_layers);
  const std::int64_t chunk = int_or_null(r, "attention_chunk_size", 1, kMaxContext, 0);
  if (chunk > 0) {
    std::int64_t chunked = m.num_layers - m.num_layers / 4;  // every 4th layer is global (NoPE)
    if (r.has("no_rope_layers") && r.raw("no_rope_layers").is_array() && !r.raw("no_rope_layers").empty()) {
      chunked = 0;
      for (const auto& v : r.raw("no_rope_layers")) chunked += v.is_number_integer() && v.get<std::int64_t>() != 0 ? 1 : 0;
    }
    m.sliding_window = {chunk, chunked};
  }
}

// A Hugging Face config's model name: its folder's (models/Llama-3-8B/config.json), or the file's
// own stem when it is named otherwise (./my-model.json), else its model_type.
std::string hf_model_name(const std::string& file, const std::string& type) {
  const std::filesystem::path p(file);
  std::error_code ec;
  std::string name = p.filename() == "config.json" ? std::filesystem::weakly_canonical(p, ec).parent_path().filename().string()
                                                   : p.stem().string();
  return name.empty() || name == "." || name == ".." ? type : name;
}

// Hugging Face config.json. The families differ only in key names; `names` receives the file's
// names of the keys check_consistent names.
ModelSpec parse_hf(JsonReader& top, const std::string& file, KeyNames& names) {
  ModelSpec m;
  const std::string type = top.string("model_type");
  m.family = type;
  m.name = hf_model_name(file, type);
  // Multimodal wrappers (Gemma 3, Llama 4) keep the language model's keys under text_config.
  const bool nested = (type == "gemma3" || type == "llama4") && top.has("text_config");
  std::optional<JsonReader> text;
  if (nested) text.emplace(top.raw("text_config"), file, "text_config");
  JsonReader& r = nested ? *text : top;
  names = hf_key_names(type, nested ? "text_config." : "", r);
  if (type == "chatglm") {
    parse_hf_chatglm(r, m);
  } else if (type == "llama" || type == "mistral" || type == "qwen2" || type == "phi3") {
    parse_hf_llama_family(r, m);
  } else if (type == "qwen3" || type == "gemma2" || type == "gemma3" || type == "gemma3_text") {
    parse_hf_qwen3_gemma(r, m, type);
  } else if (type == "mixtral" || type == "qwen3_moe" || type == "gpt_oss") {
    parse_hf_mixtral_qwen3_moe(r, m, type);
  } else if (type == "deepseek_v3") {
    parse_hf_deepseek_v3(r, m);
  } else if (type == "llama4") {
    parse_hf_llama4(r, m);
  } else {
    top.fail("model_type", "unsupported model_type '" + type +
                               "' (supported: llama, mistral, qwen2, qwen3, phi3, chatglm, gemma2, gemma3, mixtral, "
                               "qwen3_moe, deepseek_v3, llama4, gpt_oss)");
  }
  return m;
}

}  // namespace

ModelSpec parse_model(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file, "");
  if (!r.has("model_type") && !r.has("name") && (r.has("num_hidden_layers") || r.has("architectures"))) {
    r.fail("model_type", "missing: a Hugging Face config.json names its family in model_type (a model card names itself in name)");
  }
  KeyNames names;
  ModelSpec m = r.has("model_type") ? parse_hf(r, file, names) : parse_card(r);
  check_consistent(m, file, names);
  return m;
}

ModelSpec load_model(const std::string& path) { return parse_model(load_json_file(path), path); }

namespace {
// "meta-llama/Llama-3.1-8B-Instruct" -> "llama-3.1-8b": the name after the last '/', lower case,
// without the words of its '-'-separated parts that name a release, not an architecture.
std::string architecture_name(const std::string& id) {
  std::string name = id.substr(id.find_last_of('/') == std::string::npos ? 0 : id.find_last_of('/') + 1);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('-', start), name.size());
    const std::string part = name.substr(start, end - start);
    if (!part.empty() && part != "instruct" && part != "chat" && part != "hf" && part != "it" && part != "base") {
      out += (out.empty() ? "" : "-") + part;
    }
    start = end + 1;
  }
  return out;
}
}  // namespace

std::string bundled_model_for(const std::string& model_id, std::vector<std::string>* candidates) {
  const auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  std::vector<std::string> exact, same_architecture;
  for (const std::string& name : bundled_names("models")) {
    const nlohmann::json card = load_json_file((std::filesystem::path(data_dir()) / "models" / (name + ".json")).string());
    const std::string hf_id = card.value("hf_id", "");
    if (hf_id.empty()) continue;
    const std::string id = lower(model_id);
    if (id == lower(hf_id) || (id.size() > hf_id.size() && id.compare(id.size() - hf_id.size() - 1, std::string::npos, "/" + lower(hf_id)) == 0)) {
      exact.push_back(name);
    } else if (architecture_name(model_id) == architecture_name(hf_id)) {
      same_architecture.push_back(name);
    }
  }
  const std::vector<std::string>& found = exact.empty() ? same_architecture : exact;
  if (found.size() == 1) return found.front();
  if (candidates) *candidates = found;
  return "";
}

nlohmann::json model_to_json(const ModelSpec& m) {
  nlohmann::json j = {{"name", m.name},
                      {"family", m.family},
                      {"num_layers", m.num_layers},
                      {"hidden_size", m.hidden_size},
                      {"num_attention_heads", m.num_attention_heads},
                      {"num_kv_heads", m.num_kv_heads},
                      {"head_dim", m.head_dim},
                      {"ffn_size", m.ffn_size},
                      {"gated_mlp", m.gated_mlp},
                      {"vocab_size", m.vocab_size},
                      {"tied_embeddings", m.tied_embeddings},
                      {"max_context_tokens", m.max_context_tokens},
                      {"params", m.total_params()}};
  // Only models that have them carry these keys, so dense reports keep their bytes.
  if (m.is_moe()) {
    j["moe"] = {{"num_experts", m.moe.num_experts},
                {"experts_per_token", m.moe.experts_per_token},
                {"expert_ffn_size", m.moe.expert_ffn_size},
                {"shared_experts", m.moe.shared_experts},
                {"shared_expert_ffn_size", m.moe.shared_expert_ffn_size},
                {"dense_layers", m.moe.dense_layers},
                {"router", {{"scoring", m.moe.router_scoring},
                            {"groups", m.moe.router_groups},
                            {"groups_per_token", m.moe.router_groups_per_token}}}};
    j["active_params"] = m.total_params() - m.all_layers_params() + m.active_layers_params();
  }
  if (m.is_mla()) {
    j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                {"kv_lora_rank", m.mla.kv_lora_rank},
                {"qk_nope_head_dim", m.mla.qk_nope_head_dim},
                {"qk_rope_head_dim", m.mla.qk_rope_head_dim},
                {"v_head_dim", m.mla.v_head_dim}};
  }
  if (m.has_sliding_window()) {
    j["sliding_window"] = {{"tokens", m.sliding_window.tokens}, {"layers", m.sliding_window.layers}};
  }
  return j;
}

}  // namespace servesim
