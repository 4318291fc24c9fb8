// The cost of one iteration under speculative decoding (engine.speculative): a StepCostModel that
// wraps the replica's own (which prices the target) and adds the drafter. For the batch the
// scheduler planned (decodes of one token each), an iteration is
//   - the verify pass: the target over k + 1 query tokens per decoding sequence (the last
//     accepted token and k drafts), attention causal within them over the whole cache, logits for
//     every position (BatchShape::decode_query_tokens), through the wrapped model, so CUDA-graph
//     padding, tensor/pipeline parallelism and the engine's kernels apply as to any step;
//   - the drafter's k steps, one token per decoding sequence each, over its own cache (a draft
//     model, or a one-layer head plus its 2H -> H input projection); the first also runs the
//     iteration's prefill chunks through the drafter (it keeps its own KV of every prompt).
// Draft steps are priced as GPU time (kernels, launch waits, CUDA graphs as the engine captures
// them) with no host work of their own: the engine proposes inside the step it already prepared.
// The drafts follow the verify pass on the GPU, so their time adds to the step's; with host work
// overlapped (vLLM V1's async scheduling) that overstates a step only when the host, not the GPU,
// is the longer of the two. How many tokens a step yields is the replica's (acceptance drawn per
// sequence: Replica::speculate), not the cost model's.
#pragma once
#include <memory>

#include "sim/config/scenario.hpp"
#include "sim/serve/step_cost.hpp"

namespace servesim {

// `target` prices the target model's steps of the replica `parallel` of `scenario`.
std::unique_ptr<StepCostModel> make_speculative_step_cost(std::unique_ptr<StepCostModel> target, const Scenario& scenario,
                                                          const ParallelConfig& parallel);

// The verify pass of `planned`: each decoding sequence with k + 1 query tokens over a context k
// tokens longer (a shape with no decodes is returned as it is).
BatchShape speculative_verify_shape(const BatchShape& planned, std::int64_t k);

// The scenario the drafter runs as: the drafter's architecture at its precision, the engine and
// hardware of `target`.
Scenario drafter_scenario(const Scenario& target);

}  // namespace servesim
