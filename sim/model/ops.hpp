// The op list of one iteration: what a batch of prefill chunks and decode tokens asks the GPU
// to do, as FLOPs and bytes per op kind. Pure functions of (ModelSpec, BatchShape, dtypes).
#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/model/model_spec.hpp"

namespace servesim {

enum class OpKind {
  embedding, norm, gemm, rope, kv_write, attention_prefill, attention_decode, elementwise, sampler,
  all_reduce, all_gather  // tensor-parallel communication, timed by the interconnect model
};
bool is_communication(OpKind k);

// Where an op runs when layers are split into pipeline stages: every stage (per layer), only the
// first stage (embedding) or only the last (final norm, LM head, sampling).
enum class Placement : std::uint8_t { layer, first_stage, last_stage };
const char* op_kind_name(OpKind k);

// One kind of kernel in the iteration; `count` identical launches (e.g. once per layer).
// flops and bytes are per launch.
struct Op {
  const char* name;
  OpKind kind;
  std::int64_t count = 1;
  double flops = 0.0;
  double bytes = 0.0;
  // GEMM shape (C[m,n] = A[m,k] * W[k,n]); zero for other kinds.
  std::int64_t m = 0, n = 0, k = 0;
  // Attention: number of sequences, KV heads and tokens of KV read, for efficiency lookups.
  std::int64_t attn_seqs = 0;
  std::int64_t attn_kv_heads = 0;
  double attn_kv_tokens = 0.0;
  // Communication ops: GPUs in the collective (bytes is the message size per GPU).
  int comm_gpus = 0;
  Placement placement = Placement::layer;
};

// Aggregated shape of one iteration's batch. Sums (not per-sequence lists) are enough for the
// FLOP and byte counts, which keeps op construction O(1) per iteration.
struct BatchShape {
  std::int64_t prefill_seqs = 0;        // sequences with a prefill chunk in this iteration
  std::int64_t prefill_tokens = 0;      // new tokens across those chunks
  double prefill_attn_pairs = 0.0;      // sum over chunks of n*c + n*(n+1)/2 (causal query-key pairs)
  double prefill_kv_tokens = 0.0;       // sum over chunks of c + n (KV tokens each chunk reads)
  std::int64_t prefill_sampled = 0;     // chunks that finish their prompt and sample a token
  std::int64_t decode_seqs = 0;         // sequences producing one token each
  double decode_kv_tokens = 0.0;        // sum over decode sequences of context length (incl. new token)

  std::int64_t total_tokens() const { return prefill_tokens + decode_seqs; }
  std::int64_t sampled_seqs() const { return prefill_sampled + decode_seqs; }
  std::int64_t total_seqs() const { return prefill_seqs + decode_seqs; }

  // Adds a prefill chunk of `new_tokens` after `context_tokens` already in the KV cache.
  void add_prefill(std::int64_t new_tokens, std::int64_t context_tokens, bool samples);
  // Adds a decoding sequence whose KV cache holds `context_tokens` before this step.
  void add_decode(std::int64_t context_tokens);
};

struct Precision {
  Dtype weights = Dtype::bf16;
  Dtype activations = Dtype::bf16;
  Dtype kv_cache = Dtype::bf16;
};

// One GEMM C[m,n] = A[m,k] W[k,n]: activations in precision.activations, weights in
// precision.weights, output in the activation dtype (16-bit for 8-bit inputs).
Op make_gemm_op(const char* name, std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k,
                const Precision& precision);

// Builds the iteration's ops into `out` (cleared first; reused to avoid allocation per iteration)
// for one GPU of a tensor-parallel group of `tp` GPUs: GEMMs, heads and the vocabulary are split
// (ModelSpec::sharded), and tp > 1 adds two all-reduces per layer (after the attention output
// projection and after the MLP down projection), one after the vocab-parallel embedding, and an
// all-gather of the logits. tp = 1 gives the single-GPU op list unchanged.
void build_iteration_ops(const ModelSpec& model, const BatchShape& batch, const Precision& precision,
                         std::vector<Op>& out, std::int64_t tp = 1);

}  // namespace servesim
