// Reads a ModelSpec from a servesim model card (models/*.json) or a Hugging Face config.json
// (Llama, Mistral, Qwen2, Phi-3 and ChatGLM key names).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/model_spec.hpp"

namespace servesim {

ModelSpec load_model(const std::string& path);
ModelSpec parse_model(const nlohmann::json& doc, const std::string& file);
nlohmann::json model_to_json(const ModelSpec& m);

// The bundled card (models/<name>.json) of a model as a benchmark names it: a Hugging Face id
// ("meta-llama/Llama-3.1-8B-Instruct") or a local path ending in one. Matched against each card's
// hf_id, first exactly (case aside), then by the name after the last '/' with the release words
// that leave the architecture alone (instruct, chat, hf, it, base) dropped, so a base model finds
// its instruct card. "" when no card or more than one matches (`candidates` lists the latter).
std::string bundled_model_for(const std::string& model_id, std::vector<std::string>* candidates = nullptr);

}  // namespace servesim
