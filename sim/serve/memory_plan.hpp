// How a replica's GPU memory splits into weights, activations, runtime overhead and KV cache,
// following vLLM's accounting: KV gets gpu_memory_utilization * memory minus everything else.
// With tensor/pipeline parallelism every figure is per GPU (the fullest stage): weights and KV
// heads split tp ways and layers pp ways, so KV capacity in tokens grows with tp x pp. Routed
// experts split over the expert-parallel GPUs (and each expert's columns over the rest of the TP
// group); MLA's latent cache is whole on every GPU of the group. Sliding-window layers keep at
// most their window per sequence: the capacity counts them at window / max_model_len of a full
// layer, exact for a max_model_len sequence (the fit check) and generous for shorter ones; an
// engine whose cache keeps the whole sequence there (kv_cache_windowed_layers full) counts them
// as full layers.
#pragma once
#include <cstdint>
#include <string>

#include "sim/config/scenario.hpp"

namespace servesim {

struct MemoryPlan {
  double budget_bytes = 0.0;      // gpu_memory_utilization * GPU memory (one GPU)
  double weight_bytes = 0.0;      // per GPU
  double activation_bytes = 0.0;  // peak of a max_num_batched_tokens forward pass, per GPU
  double runtime_bytes = 0.0;     // CUDA context, workspaces, graphs
  double kv_bytes = 0.0;          // per GPU
  double kv_bytes_per_token = 0.0;  // per GPU (its layers and KV heads)
  std::int64_t kv_unit_tokens = 0;  // allocation unit: block_size, or 1 under token reservation
  std::int64_t kv_blocks = 0;     // allocation units the replica holds
  std::int64_t tensor_parallel_size = 1;
  std::int64_t pipeline_parallel_size = 1;
  double kv_block_bytes() const { return kv_bytes_per_token * static_cast<double>(kv_unit_tokens); }
};

// The split for any (model, hardware, precision, engine, tp, pp), with `instances` copies of the
// replica sharing each GPU's memory evenly; never throws (kv_blocks may be 0, for what-if tables).
// `engine` must have max_num_batched_tokens resolved (> 0).
// attention_dp > 1 (ParallelConfig::enable_attention_dp over the tp GPUs): each GPU holds the
// parts outside the routed experts whole and the KV cache of its own sequences (every KV head),
// the experts split over ep; activations for its share of the token budget; kv_blocks is then
// every rank's together (the replica's pool).
MemoryPlan plan_memory(const ModelSpec& model, const HwProfile& hw, const Precision& precision, const EngineConfig& engine,
                       std::int64_t tp, std::int64_t pp, std::int64_t instances = 1, std::int64_t ep = 1, std::int64_t attention_dp = 1);

// The scenario's replica shape (parallel.tensor/pipeline_parallel_size, or a disaggregated pool's).
// Throws InputError (naming the scenario's model key) when the model does not fit.
MemoryPlan plan_memory(const Scenario& s, std::int64_t tp, std::int64_t pp);
MemoryPlan plan_memory(const Scenario& s);

// For capacity planning (`plan`): does the model fit a replica of tp x pp GPUs of `hw` in `dtype`,
// and how many KV tokens does that replica hold? Engine defaults are vLLM's (max_model_len = the
// model's context, max_num_batched_tokens = max(max_model_len, 2048)) unless `engine` sets them.
struct FitCheck {
  bool fits = false;
  std::int64_t kv_capacity_tokens = 0;
  MemoryPlan memory;
  std::string reason;  // why not, when !fits
};
FitCheck check_fit(const ModelSpec& model, const HwProfile& hw, Dtype dtype, std::int64_t tp, std::int64_t pp = 1,
                   EngineConfig engine = {}, std::int64_t ep = 1);

}  // namespace servesim
