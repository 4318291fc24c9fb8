// Speculative decoding's drafters (engine.speculative.method), one registry entry each: what
// proposes the k draft tokens the target verifies in one pass, the drafter's architecture (a
// small model of its own, or a one-layer head on the target's hidden state that shares its
// embedding and LM head), its precision, and the per-position acceptance rate it defaults to
// with the source of that number. The acceptance model itself (a draft token is accepted with
// probability alpha when every one before it was: truncated geometric) is here too.
#pragma once
#include <cstdint>

#include "sim/core/registry.hpp"
#include "sim/model/model_spec.hpp"

namespace servesim {

struct SpeculativeMethodEntry : RegistryEntry {
  // The drafter from the target and, for a separate draft model, its card (unused by heads).
  ModelSpec (*drafter)(const ModelSpec& target, const ModelSpec& draft_card) = nullptr;
  bool needs_draft_card = false;   // engine.speculative.draft_model is required (and read)
  bool shares_embeddings = false;  // a head: the target's embedding and LM head, plus an fc of 2H -> H
  bool target_precision = false;   // quantized as the target is (DeepSeek's MTP layer); else 16-bit
  double default_acceptance_rate = -1.0;  // < 0: none, the scenario must give one
  const char* acceptance_source = "";
};
const Registry<SpeculativeMethodEntry>& speculative_methods();

// One decoder layer of the target's shape with its own KV cache: dense (an EAGLE head: the
// target's dense MLP width, or for an MoE target its active experts' width), or a layer of the
// target's own kind (DeepSeek's MTP module, MoE when the target's layers are). vocab, embedding
// and LM head as the target's (shared, so not counted as the head's weights).
ModelSpec speculative_head(const ModelSpec& target, bool same_layer_kind);

// Parameters of a head's input projection: fc(embed(token) ++ hidden) from 2H to H (EAGLE's fc,
// MTP's eh_proj), replicated on every GPU (vLLM: a plain Linear).
inline double speculative_fc_params(const ModelSpec& target) {
  return 2.0 * static_cast<double>(target.hidden_size) * static_cast<double>(target.hidden_size);
}

// Expected tokens one verify pass emits per sequence: the accepted drafts plus the target's own
// token, sum_{j=0..k} alpha^j = (1 - alpha^(k+1)) / (1 - alpha).
double speculative_tokens_per_step(double alpha, std::int64_t k);

// Accepted drafts of one verify pass from a uniform draw u in [0, 1): the largest a <= k with
// u < alpha^a... written as a = min(k, floor(log(1 - u) / log(alpha))), so P(a >= j) = alpha^j.
std::int64_t speculative_accepted(double alpha, std::int64_t k, double u);

}  // namespace servesim
