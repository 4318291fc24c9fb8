// Op-list formulas checked by hand: GEMM FLOPs, weight bytes read once per step, attention terms.
#include <doctest/doctest.h>

#include "sim/io/data_paths.hpp"
#include "sim/io/model_io.hpp"
#include "sim/model/ops.hpp"

using namespace servesim;

namespace {
ModelSpec llama2_7b() { return load_model(resolve_data_ref("models", "llama-2-7b", "", "")); }
const Op& find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) if (name == op.name) return op;
  FAIL("no op " << name);
  return ops.front();
}
}  // namespace

TEST_CASE("Llama-2-7B parameter count matches the published 6.74 B") {
  CHECK(llama2_7b().total_params() == doctest::Approx(6.738e9).epsilon(0.002));
}

TEST_CASE("a decode step reads every weight once") {
  const ModelSpec m = llama2_7b();
  BatchShape b;
  b.add_decode(100);
  std::vector<Op> ops;
  build_iteration_ops(m, b, Precision{Dtype::fp16, Dtype::fp16, Dtype::fp16}, ops);
  double gemm_weight_bytes = 0.0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::gemm) gemm_weight_bytes += static_cast<double>(op.count) * op.k * op.n * 2.0;
  }
  // All parameters except the embedding table (gathered, one row) and norm weights are GEMM weights.
  const double expected = (m.total_params() - m.embedding_params() - 2.0 * m.num_layers * m.hidden_size - m.hidden_size) * 2.0;
  CHECK(gemm_weight_bytes == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("GEMM FLOPs are 2MNK; decode attention reads the whole KV cache") {
  const ModelSpec m = llama2_7b();
  BatchShape b;
  for (int i = 0; i < 8; ++i) b.add_decode(1023);
  std::vector<Op> ops;
  build_iteration_ops(m, b, Precision{Dtype::fp16, Dtype::fp16, Dtype::fp16}, ops);
  const Op& qkv = find(ops, "qkv_proj");
  CHECK(qkv.m == 8);
  CHECK(qkv.n == 3 * 4096);
  CHECK(qkv.flops == 2.0 * 8 * 3 * 4096 * 4096);
  const Op& attn = find(ops, "attention_decode");
  // 8 sequences x 1024 tokens x (K and V) x 4096 wide x 2 bytes, plus q in and out.
  CHECK(attn.bytes == 8.0 * 1024 * 2 * 4096 * 2 + 2.0 * 8 * 4096 * 2);
  CHECK(attn.flops == 4.0 * 4096 * 8 * 1024);
  CHECK(find(ops, "lm_head").m == 8);
}

TEST_CASE("causal prefill pairs: n(n+1)/2 for a fresh prompt, n*c more after a cached prefix") {
  BatchShape b;
  b.add_prefill(4, 0, true);
  CHECK(b.prefill_attn_pairs == 10.0);
  b.add_prefill(2, 5, false);
  CHECK(b.prefill_attn_pairs == 10.0 + 2 * 5 + 3);
  CHECK(b.prefill_sampled == 1);
  CHECK(b.total_tokens() == 6);
}
