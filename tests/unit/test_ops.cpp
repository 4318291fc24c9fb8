// Op-list formulas checked by hand: GEMM FLOPs, weight bytes read once per step, attention terms.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/config/engine_profile.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/model/ops.hpp"
#include "tests/op_lookup.hpp"

using namespace servesim;
using servesim::test::find_op;

namespace {
ModelSpec llama2_7b() { return load_model(resolve_data_ref("models", "llama-2-7b", "", "")); }
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
  const Op& qkv = find_op(ops, "qkv_proj");
  CHECK(qkv.m == 8);
  CHECK(qkv.n == 3 * 4096);
  CHECK(qkv.flops == 2.0 * 8 * 3 * 4096 * 4096);
  const Op& attn = find_op(ops, "attention_decode");
  // 8 sequences x 1024 tokens x (K and V) x 4096 wide x 2 bytes, plus q in and out.
  CHECK(attn.bytes == 8.0 * 1024 * 2 * 4096 * 2 + 2.0 * 8 * 4096 * 2);
  CHECK(attn.flops == 4.0 * 4096 * 8 * 1024);
  CHECK(find_op(ops, "lm_head").m == 8);
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

TEST_CASE("fused FP8 input quantization removes the named quantize kernels and narrows their producers' writes") {
  const ModelSpec m = llama2_7b();
  const double L = static_cast<double>(m.num_layers), h = 4096.0, q_w = 4096.0, ffn = 11008.0;
  BatchShape b;
  for (int i = 0; i < 8; ++i) b.add_decode(1023);
  const double t = 8.0;
  const Precision fp8{Dtype::bf16, Dtype::bf16, Dtype::fp8, QuantScheme::fp8};
  std::vector<Op> plain, fused;
  build_iteration_ops(m, b, fp8, plain);
  const Op& q4 = find_op(plain, "act_quant");
  CHECK(q4.count == 4 * m.num_layers);
  CHECK(q4.per_layer == 4);
  CHECK(q4.bytes == t * (2 * h + q_w + ffn) / 4.0 * 3.0);  // each reads 16 bits, writes 8

  KernelPlan plan;
  plan.fused_fp8_input_quant = static_cast<unsigned>(InputQuantSite::o_proj) | static_cast<unsigned>(InputQuantSite::down);
  build_iteration_ops(m, b, fp8, fused, plan);
  const Op& q2 = find_op(fused, "act_quant");  // qkv and gate_up are left: both hidden wide
  CHECK(q2.count == 2 * m.num_layers);
  CHECK(q2.per_layer == 2);
  CHECK(q2.bytes == t * h * 3.0);
  CHECK(q2.flops == 2.0 * t * h);
  // Attention writes its output (o_proj's input) in 8 bits, the activation writes down's input in 8 bits.
  CHECK(find_op(fused, "attention_decode").bytes == find_op(plain, "attention_decode").bytes - t * q_w * 1.0);
  CHECK(find_op(plain, "mlp_act").bytes == 3.0 * t * ffn * 2.0);
  CHECK(find_op(fused, "mlp_act").bytes == (2.0 * 2.0 + 1.0) * t * ffn);
  // The launches and bytes the step no longer has: two quantize kernels per layer.
  double launches_plain = 0, launches_fused = 0;
  for (const Op& op : plain) launches_plain += static_cast<double>(op.count);
  for (const Op& op : fused) launches_fused += static_cast<double>(op.count);
  CHECK(launches_plain - launches_fused == 2.0 * L);

  // All four: no quantize kernel left; both norms write 8 bits.
  plan.fused_fp8_input_quant = 0xF;
  build_iteration_ops(m, b, fp8, fused, plan);
  for (const Op& op : fused) CHECK(std::string(op.name) != "act_quant");
  CHECK(find_op(fused, "rmsnorm").bytes == find_op(plain, "rmsnorm").bytes - t * h * 1.0);

  // The attention kernel only writes 8 bits from its FP8-KV path; other schemes keep their kernels.
  plan.fused_fp8_input_quant = static_cast<unsigned>(InputQuantSite::o_proj);
  build_iteration_ops(m, b, Precision{Dtype::bf16, Dtype::bf16, Dtype::bf16, QuantScheme::fp8}, fused, plan);
  CHECK(find_op(fused, "act_quant").count == 4 * m.num_layers);
  build_iteration_ops(m, b, Precision{Dtype::bf16, Dtype::bf16, Dtype::fp8, QuantScheme::int8}, fused, plan);
  CHECK(find_op(fused, "act_quant").count == 4 * m.num_layers);
}

TEST_CASE("Qwen3's per-head query/key norm: one in-place kernel per layer where the engine names it") {
  // Qwen3-8B: 36 layers, 32 query heads and 8 KV heads of 128. A decode batch of 8.
  const ModelSpec qwen = load_model(resolve_data_ref("models", "qwen3-8b", "", ""));
  BatchShape b;
  for (int i = 0; i < 8; ++i) b.add_decode(1023);
  const double t = 8.0, qk_w = 32.0 * 128.0 + 8.0 * 128.0;  // the query heads and the key heads
  const Precision bf16{Dtype::bf16, Dtype::bf16, Dtype::bf16, QuantScheme::none};
  std::vector<Op> ops;
  KernelPlan plan;  // no qk_norm_kernels: not priced
  build_iteration_ops(qwen, b, bf16, ops, plan);
  for (const Op& op : ops) CHECK(std::string(op.name) != "qk_norm");

  // TensorRT-LLM's fused_qk_norm_rope: the rope the attention kernel skips is fused into it.
  plan.rope_kernels = 0;
  plan.qk_norm_kernels = 1;
  build_iteration_ops(qwen, b, bf16, ops, plan);
  const Op& fused = find_op(ops, "qk_norm");
  CHECK(fused.count == 36);
  CHECK(fused.per_layer == 1);
  CHECK(fused.bytes == 2.0 * t * qk_w * 2.0);  // read and written once, 16 bits: 8 x 5120 x 4 B = 163840
  CHECK(fused.bytes == 163840.0);
  CHECK(fused.flops == 7.0 * t * qk_w);  // the norm's 4 per element and the rotation's 3

  // With a rope kernel of its own the norm kernel does not rotate.
  plan.rope_kernels = 1;
  build_iteration_ops(qwen, b, bf16, ops, plan);
  CHECK(find_op(ops, "qk_norm").flops == 4.0 * t * qk_w);

  // A family without the per-head norm gets no such op from the same plan.
  build_iteration_ops(llama2_7b(), b, bf16, ops, plan);
  for (const Op& op : ops) CHECK(std::string(op.name) != "qk_norm");

  // The TensorRT-LLM PyTorch profile names the kernel; vLLM's does not (not read).
  CHECK(load_engine_profile("tensorrt-llm-pytorch", "t", "--engine").kernels.qk_norm_kernels == 1);
  CHECK(load_engine_profile("vllm", "t", "--engine").kernels.qk_norm_kernels == 0);
}

TEST_CASE("MoE token tiles: a smaller smallest tile halves the padding of a few tokens per expert") {
  // Qwen3-30B-A3B: 128 experts, top 8. A decode batch of 64: 512 token copies over
  // 128 x (1 - (127/128)^512) = 125.69 active experts, about 4 each (Poisson, sd 2): P(count > 64)
  // is nil, so each active expert computes one tile: 128 rows, or 64 with a 64-row smallest tile.
  const ModelSpec m = load_model(resolve_data_ref("models", "qwen3-30b-a3b", "", ""));
  const Precision bf16{Dtype::bf16, Dtype::bf16, Dtype::bf16, QuantScheme::none};
  const auto padding = [&m, &bf16](int decodes, int tile) {
    BatchShape b;
    for (int i = 0; i < decodes; ++i) b.add_decode(2048);
    KernelPlan plan;
    plan.moe_token_tile_rows = tile;
    std::vector<Op> ops;
    build_iteration_ops(m, b, bf16, ops, plan);
    return find_op(ops, "experts_gate_up").tile_padding;
  };
  const double active = 128.0 * (1.0 - std::pow(127.0 / 128.0, 512.0));
  CHECK(active == doctest::Approx(125.69).epsilon(1e-4));
  CHECK(padding(64, 128) == doctest::Approx(active * 128.0 / 512.0).epsilon(1e-9));  // 31.42
  CHECK(padding(64, 64) == doctest::Approx(active * 64.0 / 512.0).epsilon(1e-9));    // 15.71
  CHECK(padding(64, 16) == doctest::Approx(active * 16.0 / 512.0).epsilon(1e-6));    // 3.93: P(count > 16) = 1.4e-9
  // A batch of 1536: 12288 copies, all 128 experts active, 96 each (sd 9.8): P(count > 64) = 0.99946
  // and P(count > 128) = 0.00054, so 64-row tiles compute 64 + 64 x 0.99946 + 128 x 0.00054 rows,
  // 128-row tiles 128 + 128 x 0.00054: the same to 0.03%.
  CHECK(padding(1536, 64) < padding(1536, 128));
  CHECK(padding(1536, 64) == doctest::Approx(padding(1536, 128)).epsilon(3e-4));

  // TensorRT-LLM's CUTLASS MoE GEMMs on Blackwell have a 64-token tile; 128 on other GPUs and engines.
  EngineProfile trt = load_engine_profile("tensorrt-llm-pytorch", "t", "--engine");
  resolve_quant_kernels(trt, load_hw_profile(resolve_data_ref("hwprofiles", "b200", "", "")));
  CHECK(trt.kernels.moe_token_tile_rows == 64);
  resolve_quant_kernels(trt, load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "", "")));
  CHECK(trt.kernels.moe_token_tile_rows == 128);
  EngineProfile vllm = load_engine_profile("vllm", "t", "--engine");
  resolve_quant_kernels(vllm, load_hw_profile(resolve_data_ref("hwprofiles", "b200", "", "")));
  CHECK(vllm.kernels.moe_token_tile_rows == 128);
}
