// Memory split; see memory_plan.hpp.
#include "sim/serve/memory_plan.hpp"

#include <cmath>
#include <sstream>

#include "sim/core/error.hpp"

namespace servesim {

namespace {
std::string gb(double bytes) {
  std::ostringstream os;
  os.precision(3);
  os << bytes / 1e9 << " GB";
  return os.str();
}
}  // namespace

MemoryPlan split_memory(const ModelSpec& m, const HwProfile& hw, const Precision& precision, const EngineConfig& e,
                        std::int64_t instances) {
  MemoryPlan p;
  // Instances sharing one GPU split its memory evenly (each runs with the same utilization share).
  p.budget_bytes = e.gpu_memory_utilization * hw.memory_bytes / static_cast<double>(instances);
  p.weight_bytes = m.weight_bytes(precision.weights, precision.quant, precision.group_size);
  // Peak activations of vLLM's profiling run (max_num_batched_tokens tokens through one layer):
  // the widest intermediates (QKV output, MLP input) plus two residual-stream copies, and fp32
  // logits for max_num_seqs sampled rows.
  const double ab = dtype_bytes(precision.activations);
  const double tokens = static_cast<double>(e.max_num_batched_tokens);
  p.activation_bytes = tokens * ab * static_cast<double>(m.qkv_width() + m.mlp_in_width() + 2 * m.hidden_size) +
                       static_cast<double>(e.max_num_seqs) * static_cast<double>(m.vocab_size) * 4.0;
  p.runtime_bytes = e.runtime_overhead_bytes;
  p.kv_bytes = p.budget_bytes - p.weight_bytes - p.activation_bytes - p.runtime_bytes;
  p.kv_bytes_per_token = m.kv_bytes_per_token(precision.kv_cache);
  p.kv_unit_tokens = e.kv_reservation == KvReservation::token ? 1 : e.block_size;
  const double block_bytes = p.kv_block_bytes();
  p.kv_blocks = p.kv_bytes > 0.0 ? static_cast<std::int64_t>(std::floor(p.kv_bytes / block_bytes)) : 0;
  return p;
}

MemoryPlan plan_memory(const Scenario& s) {
  const ModelSpec& m = s.model;
  const EngineConfig& e = s.engine;
  const MemoryPlan p = split_memory(m, s.hw, s.precision, e, s.instances);

  if (p.kv_blocks * p.kv_unit_tokens < e.max_model_len) {
    std::ostringstream os;
    os << "model " << m.name << " does not fit on " << s.hw.name << ": " << gb(p.budget_bytes) << " usable ("
       << e.gpu_memory_utilization << " x " << gb(s.hw.memory_bytes) << ") minus weights " << gb(p.weight_bytes)
       << ", activations " << gb(p.activation_bytes) << " and runtime " << gb(p.runtime_bytes)
       << " leaves KV cache for " << p.kv_blocks * p.kv_unit_tokens << " tokens, fewer than max_model_len "
       << e.max_model_len;
    throw InputError(s.file, "model", os.str());
  }
  return p;
}

}  // namespace servesim
