// Memory split; see memory_plan.hpp.
#include "sim/serve/memory_plan.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/model/speculative.hpp"
#include "sim/serve/parallel.hpp"

namespace servesim {

namespace {
std::string gb(double bytes) {
  std::ostringstream os;
  os.precision(3);
  os << bytes / 1e9 << " GB";
  return os.str();
}

std::string no_fit_message(const ModelSpec& m, const HwProfile& hw, const EngineConfig& e, const MemoryPlan& p) {
  std::ostringstream os;
  os << "model " << m.name << " does not fit on " << hw.name;
  if (p.tensor_parallel_size * p.pipeline_parallel_size > 1) {
    os << " x" << p.tensor_parallel_size * p.pipeline_parallel_size << " (tp " << p.tensor_parallel_size << ", pp "
       << p.pipeline_parallel_size << ", per GPU)";
  }
  os << ": " << gb(p.budget_bytes) << " usable (" << e.gpu_memory_utilization << " x " << gb(hw.memory_bytes)
     << ") minus weights " << gb(p.weight_bytes) << ", activations " << gb(p.activation_bytes) << " and runtime "
     << gb(p.runtime_bytes) << " leaves KV cache for " << p.kv_blocks * p.kv_unit_tokens << " tokens, fewer than max_model_len "
     << e.max_model_len;
  return os.str();
}

// The speculative drafter on each GPU of the group (split over tp as the target): its weights (a
// head's without the embedding and LM head it shares with the target, plus its replicated fc)
// and its own KV cache, which vLLM allocates per token beside the target's in the same blocks.
void add_drafter(const SpeculativeConfig& sp, const Precision& target, std::int64_t tp, std::int64_t ep, MemoryPlan& p) {
  const ModelSpec d = sp.drafter.sharded(tp, ep);
  const Precision dp = sp.precision(target);
  double w = d.weight_bytes(dp.weights, dp.quant, dp.group_size, dp.quant_scope);
  if (sp.shares_embeddings) {
    const double shared = d.embedding_params() * (d.tied_embeddings ? 1.0 : 2.0);
    w += (speculative_fc_params(sp.drafter) - shared) * dtype_bytes(dp.weights);
  }
  p.weight_bytes += w;
  p.kv_bytes_per_token += d.kv_bytes_per_token(dp.kv_cache);
}
}  // namespace

MemoryPlan plan_memory(const ModelSpec& full, const HwProfile& hw, const Precision& precision, const EngineConfig& e,
                       std::int64_t tp, std::int64_t pp, std::int64_t instances, std::int64_t ep, std::int64_t attention_dp) {
  MemoryPlan p;
  p.tensor_parallel_size = tp;
  p.pipeline_parallel_size = pp;
  const std::int64_t shard_tp = attention_dp > 1 ? 1 : tp;  // attention DP: whole parts outside the experts
  const ModelSpec m = full.sharded(shard_tp, ep);
  const double stage_layers = static_cast<double>((m.num_layers + pp - 1) / pp);
  // Instances sharing one GPU split its memory evenly (each runs with the same utilization share).
  p.budget_bytes = e.gpu_memory_utilization * hw.memory_bytes / static_cast<double>(instances);
  const double all_weight_bytes = m.weight_bytes(precision.weights, precision.quant, precision.group_size, precision.quant_scope);
  if (pp <= 1) {
    p.weight_bytes = all_weight_bytes;
  } else {
    // The fullest stage: its share of the quantized layers plus the larger of the embedding
    // (first stage) and LM head (last), which stay in the base dtype.
    const double edge_bytes = (m.embedding_params() + static_cast<double>(m.hidden_size)) * dtype_bytes(precision.weights);
    const double all_layer_bytes = all_weight_bytes - (m.total_params() - m.all_layers_params()) * dtype_bytes(precision.weights);
    p.weight_bytes = all_layer_bytes * stage_layers / static_cast<double>(m.num_layers) + edge_bytes;
  }
  // Peak activations of vLLM's profiling run (max_num_batched_tokens tokens through one layer):
  // the widest intermediates (QKV output, MLP input) plus two residual-stream copies, and fp32
  // logits for max_num_seqs sampled rows.
  const double ab = dtype_bytes(precision.activations);
  // Under attention DP each GPU runs its share of the replica's token budget and sequences.
  const double ranks = static_cast<double>(std::max<std::int64_t>(1, attention_dp));
  const double tokens = static_cast<double>(e.max_num_batched_tokens) / ranks;
  const double seqs = static_cast<double>(e.max_num_seqs) / ranks;
  if (!m.is_moe() && !m.is_mla()) {
    p.activation_bytes = tokens * ab * static_cast<double>(m.qkv_width() + m.mlp_in_width() + 2 * m.hidden_size) +
                         seqs * static_cast<double>(m.vocab_size) * 4.0;
  } else {
    // MLA: the down-projection, per-head queries and the prefill's up-projected keys and values.
    // MoE: vLLM's fused_moe caches (gate/up output, activation, down output per token copy),
    // allocated for at most 32768 tokens at a time (VLLM_FUSED_MOE_CHUNK_SIZE).
    const double attn = m.is_mla() ? static_cast<double>(m.mla_down_width() + m.mla_q_width() + m.mla_kv_up_width())
                                   : static_cast<double>(m.qkv_width());
    double mlp = m.dense_mlp_layers() > 0 ? tokens * static_cast<double>(m.mlp_in_width()) : 0.0;
    if (m.is_moe()) {
      const double f = static_cast<double>(m.moe.expert_ffn_size);
      // Under attention DP with the gathered exchange (TensorRT-LLM) the fused MoE runs on every
      // rank's tokens, and the memory profiling run gives each rank a full token budget
      // (KvCacheCreator._create_dummy_context_requests repeats its requests tp_size times).
      const double moe_tokens = e.profile.kernels.moe_dp_allgather ? tokens * ranks : tokens;
      mlp = std::max(mlp, std::min(moe_tokens, 32768.0) * static_cast<double>(m.moe.experts_per_token) *
                              (static_cast<double>(m.gated_width(m.moe.expert_ffn_size)) + f + static_cast<double>(m.hidden_size)));
    }
    p.activation_bytes = ab * (tokens * (attn + 2.0 * static_cast<double>(m.hidden_size)) + mlp) + seqs * static_cast<double>(m.vocab_size) * 4.0;
  }
  p.runtime_bytes = e.runtime_overhead_bytes;
  // The layers as the engine's KV cache holds them (kv_cache_windowed_layers full: windowed layers
  // keep every token).
  const ModelSpec stage = kv_cache_layout(m.stage(static_cast<std::int64_t>(stage_layers)), e.profile.kv_windowed_layers);
  p.kv_bytes_per_token = stage.has_sliding_window() && e.max_model_len > 0
                             ? stage.kv_bytes(e.max_model_len, precision.kv_cache) / static_cast<double>(e.max_model_len)
                             : stage.kv_bytes_per_token(precision.kv_cache);
  if (e.speculative.enabled()) add_drafter(e.speculative, precision, shard_tp, ep, p);
  p.kv_bytes = p.budget_bytes - p.weight_bytes - p.activation_bytes - p.runtime_bytes;
  p.kv_unit_tokens = e.kv_reservation == KvReservation::token ? 1 : e.block_size;
  const double block_bytes = p.kv_block_bytes();
  p.kv_blocks = p.kv_bytes > 0.0 ? static_cast<std::int64_t>(std::floor(p.kv_bytes / block_bytes)) : 0;
  if (attention_dp > 1) p.kv_blocks *= attention_dp;  // each rank's cache, pooled for the replica's scheduler
  return p;
}

MemoryPlan plan_memory(const Scenario& s, std::int64_t tp, std::int64_t pp) {
  const MemoryPlan p = plan_memory(s.model, s.hw, s.precision, s.engine, tp, pp, s.instances, s.parallel.expert_parallel_size,
                                   s.parallel.attention_dp_size());
  if (p.kv_blocks * p.kv_unit_tokens < s.engine.max_model_len) {
    throw InputError(s.file, "model", no_fit_message(s.model, s.hw, s.engine, p));
  }
  // 2^24 blocks (16.7M) is 50 times a 125M-parameter model's on a 192 GB GPU; past it the
  // allocator's tables alone take gigabytes (a config.json with hidden_size 8 asked for 148M).
  constexpr std::int64_t kMaxKvBlocks = std::int64_t{1} << 24;
  if (p.kv_blocks > kMaxKvBlocks) {
    throw InputError(s.file, "model",
                     s.model.name + " needs " + std::to_string(static_cast<long long>(p.kv_bytes_per_token)) + " bytes of KV cache per token, so " +
                         s.hw.name + " would hold " + std::to_string(p.kv_blocks) + " KV blocks, more than the 16777216 (2^24) simulated: " +
                         "check the model's sizes (hidden_size, num_key_value_heads, head_dim), or raise engine.block_size");
  }
  return p;
}

MemoryPlan plan_memory(const Scenario& s) {
  return plan_memory(s, s.parallel.tensor_parallel_size, s.parallel.pipeline_parallel_size);
}

FitCheck check_fit(const ModelSpec& model, const HwProfile& hw, Dtype dtype, std::int64_t tp, std::int64_t pp,
                   EngineConfig engine, std::int64_t ep) {
  FitCheck r;
  if (!hw.supports(dtype)) {
    r.reason = std::string(dtype_name(dtype)) + " is not supported by " + hw.name;
    return r;
  }
  r.reason = parallel_config_error(model, tp, pp);
  if (r.reason.empty()) r.reason = expert_parallel_error(model, ep);
  if (!r.reason.empty()) return r;
  if (engine.max_model_len <= 0) engine.max_model_len = model.max_context_tokens;
  if (engine.max_num_batched_tokens <= 0) engine.max_num_batched_tokens = std::max<std::int64_t>(engine.max_model_len, 2048);
  r.memory = plan_memory(model, hw, Precision{dtype, dtype, dtype}, engine, tp, pp, 1, ep);
  r.kv_capacity_tokens = r.memory.kv_blocks * r.memory.kv_unit_tokens;
  r.fits = r.kv_capacity_tokens >= engine.max_model_len;
  if (!r.fits) r.reason = no_fit_message(model, hw, engine, r.memory);
  return r;
}

}  // namespace servesim
