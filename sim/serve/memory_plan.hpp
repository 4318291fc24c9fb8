// How a replica's GPU memory splits into weights, activations, runtime overhead and KV cache,
// following vLLM's accounting: KV gets gpu_memory_utilization * memory minus everything else.
#pragma once
#include <cstdint>

#include "sim/config/scenario.hpp"

namespace servesim {

struct MemoryPlan {
  double budget_bytes = 0.0;      // gpu_memory_utilization * GPU memory
  double weight_bytes = 0.0;
  double activation_bytes = 0.0;  // peak of a max_num_batched_tokens forward pass
  double runtime_bytes = 0.0;     // CUDA context, workspaces, graphs
  double kv_bytes = 0.0;
  double kv_bytes_per_token = 0.0;
  std::int64_t kv_unit_tokens = 0;  // allocation unit: block_size, or 1 under token reservation
  std::int64_t kv_blocks = 0;       // allocation units that fit
  double kv_block_bytes() const { return kv_bytes_per_token * static_cast<double>(kv_unit_tokens); }
};

// The split without the fit check (kv_blocks may be 0), for what-if tables.
MemoryPlan split_memory(const ModelSpec& m, const HwProfile& hw, const Precision& precision, const EngineConfig& e,
                        std::int64_t instances);
// Throws InputError (naming the scenario's model/hardware keys) when the model does not fit.
MemoryPlan plan_memory(const Scenario& s);

}  // namespace servesim
