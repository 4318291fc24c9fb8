// The drafters and the acceptance model; see speculative.hpp.
#include "sim/model/speculative.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

namespace servesim {

ModelSpec speculative_head(const ModelSpec& target, bool same_layer_kind) {
  ModelSpec h = target;
  h.name = target.name + (same_layer_kind ? "-mtp-layer" : "-eagle-head");
  h.num_layers = 1;
  h.sliding_window = {};  // the head attends to its whole (own) cache
  if (same_layer_kind) {
    if (h.is_moe()) h.moe.dense_layers = 0;  // DeepSeek-V3's MTP module is an MoE layer
    return h;
  }
  if (h.is_moe()) {
    // A dense layer as wide as the tokens' active experts when the target has no dense MLP.
    if (h.ffn_size <= 0) h.ffn_size = h.moe.experts_per_token * h.moe.expert_ffn_size + h.moe.shared_experts * h.moe.shared_expert_ffn_size;
    h.moe = MoeSpec{};
  }
  return h;
}

double speculative_tokens_per_step(double alpha, std::int64_t k) {
  if (alpha <= 0.0) return 1.0;
  return (1.0 - std::pow(alpha, static_cast<double>(k + 1))) / (1.0 - alpha);
}

std::int64_t speculative_accepted(double alpha, std::int64_t k, double u) {
  if (alpha <= 0.0) return 0;
  const double a = std::floor(std::log1p(-u) / std::log(alpha));
  return a >= static_cast<double>(k) ? k : static_cast<std::int64_t>(a);
}

const Registry<SpeculativeMethodEntry>& speculative_methods() {
  const auto entry = [](std::string name, std::string description, bool card, bool shares, bool target_precision, double alpha,
                        const char* source, ModelSpec (*drafter)(const ModelSpec&, const ModelSpec&)) {
    SpeculativeMethodEntry e;
    e.name = std::move(name);
    e.description = std::move(description);
    e.needs_draft_card = card;
    if (card) e.own_keys = {"engine.speculative.draft_model"};
    e.shares_embeddings = shares;
    e.target_precision = target_precision;
    e.default_acceptance_rate = alpha;
    e.acceptance_source = source;
    e.drafter = drafter;
    // `servesim list policies` prints the default with its source.
    char alpha_text[16];
    std::snprintf(alpha_text, sizeof alpha_text, "%.2f", alpha);
    e.params = {{"engine.speculative.acceptance_rate", "number", alpha < 0.0 ? "none (required)" : alpha_text,
                 alpha < 0.0 ? "depends on the draft/target pair" : source}};
    return e;
  };
  static const Registry<SpeculativeMethodEntry> registry(
      "speculative method",
      {entry("draft_model",
             "a separate small model (engine.speculative.draft_model, same vocabulary) runs k decode steps over its own KV "
             "cache; acceptance_rate required (it depends on the pair)",
             true, false, false, -1.0, "",
             [](const ModelSpec&, const ModelSpec& card) { return card; }),
       entry("eagle",
             "EAGLE-style head: fc(embedding ++ target hidden state) and one dense decoder layer of the target's width with its "
             "own KV cache, the target's LM head; k steps",
             false, true, false, 0.62,
             "an EAGLE head on Llama-3.1-8B-Instruct, ShareGPT, vLLM on H100: 2.254 tokens per verify pass at k = 3 over 310 "
             "requests (per-position acceptance 0.62, 0.61, 0.66), from the per-token acceptance lengths SpecDecode-Bench "
             "published (their acc_eagle field, which their simulator's eagle3 proposer reads; the study's EAGLE and EAGLE-3 "
             "speed-ups on this set coincide) "
             "(Liu et al., 'Speculative Decoding: Performance or Illusion?', arXiv 2601.11580; "
             "github.com/SpecDecode-Bench/simulator data/llama3.1-8B/combined_sharegpt.jsonl @2fdccbd)",
             [](const ModelSpec& target, const ModelSpec&) { return speculative_head(target, false); }),
       entry("mtp",
             "multi-token prediction (DeepSeek-V3's MTP module): eh_proj(embedding ++ hidden state) and one decoder layer of the "
             "target's own kind (MoE), quantized as the target, the target's LM head; the one module reused for k steps",
             false, true, true, 0.85,
             "DeepSeek-V3 Technical Report (arXiv 2412.19437) section 5.4.3: 'the acceptance rate of the second token prediction "
             "ranges between 85% and 90%' (one draft token); the lower end. A module reused for later positions accepts less "
             "(SpecDecode-Bench: GLM-4.5-Air's one MTP head 0.92, 0.68, 0.38 on GPQA), which one alpha does not describe",
             [](const ModelSpec& target, const ModelSpec&) { return speculative_head(target, true); })});
  return registry;
}

}  // namespace servesim
