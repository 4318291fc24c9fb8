// Reads a ModelSpec from a servesim model card (models/*.json) or a Hugging Face config.json
// (Llama, Mistral, Qwen2, Phi-3 and ChatGLM key names).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "sim/model/model_spec.hpp"

namespace servesim {

ModelSpec load_model(const std::string& path);
ModelSpec parse_model(const nlohmann::json& doc, const std::string& file);
nlohmann::json model_to_json(const ModelSpec& m);

}  // namespace servesim
