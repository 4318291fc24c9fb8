// Model card and Hugging Face config parsing. Model cards are strict (unknown keys are errors);
// HF configs carry many keys irrelevant to serving cost, so only the ones we need are read,
// each with its type checked.
#include "sim/io/model_io.hpp"

#include <filesystem>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

// Upper bounds well above any real model (Llama-3-405B: 126 layers, hidden 16384, vocab 128K),
// so sizes multiplied together stay far from int64 overflow.
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxWidth = 1 << 20;    // hidden, ffn, head_dim x heads
constexpr std::int64_t kMaxHeads = 1 << 14;
constexpr std::int64_t kMaxVocab = 1 << 24;
constexpr std::int64_t kMaxContext = 1 << 24;  // 16M tokens

void check_consistent(const ModelSpec& m, const std::string& file) {
  if (m.head_dim <= 0) {
    throw InputError(file, "head_dim", "must be > 0 (hidden_size " + std::to_string(m.hidden_size) + " / " +
                                           std::to_string(m.num_attention_heads) + " heads rounds to 0)");
  }
  if (m.head_dim * m.num_attention_heads > kMaxWidth) {
    throw InputError(file, "head_dim", "head_dim x num_attention_heads must be <= " + std::to_string(kMaxWidth));
  }
  if (m.num_kv_heads > m.num_attention_heads) {
    throw InputError(file, "num_kv_heads", "must be <= num_attention_heads (" + std::to_string(m.num_attention_heads) + ")");
  }
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    throw InputError(file, "num_kv_heads", "must divide num_attention_heads (" + std::to_string(m.num_attention_heads) +
                                               "), got " + std::to_string(m.num_kv_heads));
  }
}

ModelSpec parse_card(JsonReader& r) {
  ModelSpec m;
  r.accept("schema");
  r.accept("source");
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
  r.finish();
  return m;
}

// Hugging Face config.json. The families differ only in key names.
ModelSpec parse_hf(JsonReader& r, const std::string& file) {
  ModelSpec m;
  const std::string type = r.string("model_type");
  m.family = type;
  std::string stem = std::filesystem::path(file).parent_path().filename().string();
  m.name = stem.empty() ? type : stem;
  if (type == "chatglm") {
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
  } else if (type == "llama" || type == "mistral" || type == "qwen2" || type == "phi3") {
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
  } else {
    r.fail("model_type", "unsupported model_type '" + type + "' (supported: llama, mistral, qwen2, phi3, chatglm)");
  }
  return m;
}

}  // namespace

ModelSpec parse_model(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file, "");
  ModelSpec m = r.has("model_type") ? parse_hf(r, file) : parse_card(r);
  check_consistent(m, file);
  return m;
}

ModelSpec load_model(const std::string& path) { return parse_model(load_json_file(path), path); }

nlohmann::json model_to_json(const ModelSpec& m) {
  return {{"name", m.name},
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
}

}  // namespace servesim
