// Issue 40: an engine names the kernel its MoE layers run per scheme and GPU generation (engine
// profile `moe_quant_kernels`), and that kernel, not the checkpoint, decides the activations an
// MXFP4 expert multiplies: TensorRT-LLM runs GPT-OSS's MXFP4 experts x bf16 on Hopper (Triton MoE
// backend, W4A16_MXFP4) and x MXFP8 on Blackwell (CUTLASS, W4A8_MXFP4_MXFP8); vLLM x bf16 on both
// (Triton on Hopper, FlashInfer's TRT-LLM-gen on Blackwell).
#include <cmath>

#include <doctest/doctest.h>

#include "sim/config/engine_profile.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/model/ops.hpp"
#include "tests/op_lookup.hpp"
#include "tests/support.hpp"

using namespace servesim;
using servesim::test::find_op;

namespace {
HwProfile hw(const std::string& n) { return load_hw_profile(resolve_data_ref("hwprofiles", n, "", "")); }
ModelSpec card(const std::string& n) { return load_model(resolve_data_ref("models", n, "", "")); }
EngineProfile engine(const std::string& n, const HwProfile& h) {
  EngineProfile e = load_engine_profile(n, "", "");
  resolve_quant_kernels(e, h);
  return e;
}
constexpr std::size_t kMx = static_cast<std::size_t>(QuantScheme::mxfp4);

Precision experts_mxfp4() {
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  p.quant = QuantScheme::mxfp4;
  p.quant_scope = QuantScope::experts;
  return p;
}

std::vector<Op> decode_ops(const ModelSpec& m, const Precision& p, int batch, const KernelPlan& plan) {
  BatchShape b;
  for (int i = 0; i < batch; ++i) b.add_decode(1024);
  std::vector<Op> ops;
  build_iteration_ops(m, b, p, ops, plan);
  return ops;
}

// One GEMM of M rows on GPT-OSS's expert gate/up shape (n 5760, k 2880) in scheme q, run by
// kernel k, with the bytes that kernel moves: its input (`in_bytes` per element), the weights as
// stored, a bf16 output. (A dense layer GEMM takes no MoE kernel; the op stands for one expert.)
Op gemm(std::int64_t m, QuantScheme q, QuantKernel k, double in_bytes) {
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  p.quant = q;
  Op op = make_gemm_op("g", 1, m, 5760, 2880, p);
  op.quant_kernel = k;
  const double w = q == QuantScheme::none ? 2.0 : quant_weight_bytes(q, Dtype::bf16, 128);
  op.bytes = static_cast<double>(m) * 2880.0 * in_bytes + 5760.0 * 2880.0 * w + static_cast<double>(m) * 5760.0 * 2.0;
  return op;
}

nlohmann::json engine_doc(const char* key, const nlohmann::json& kernels) {
  auto doc = nlohmann::json::parse(R"({"name":"x","kernels_per_layer":{},"cuda_graphs":{"decode":true},
      "host":{"overhead_per_step_s":0,"overhead_per_seq_s":0},"defaults":{"scheduler":"continuous","kv_cache":"paged","block_size":16}})");
  doc[key] = kernels;
  return doc;
}
std::string refusal(const char* key, const nlohmann::json& kernels) {
  try {
    parse_engine_profile(engine_doc(key, kernels), "x.json");
  } catch (const InputError& err) {
    return err.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("moe_quant_kernels: the engine's MoE kernel per GPU generation; dense quant_kernels untouched") {
  const HwProfile h100 = hw("h100-sxm"), b200 = hw("b200"), a100 = hw("a100-80gb-sxm");
  CHECK(engine("tensorrt-llm-pytorch", h100).kernels.moe_quant_kernels[kMx] == QuantKernel::triton_mxfp4);
  CHECK(engine("tensorrt-llm-pytorch", b200).kernels.moe_quant_kernels[kMx] == QuantKernel::cutlass_mxfp4_mxfp8);
  CHECK(engine("tensorrt-llm-pytorch", a100).kernels.moe_quant_kernels[kMx] == QuantKernel::auto_);  // not named: generic
  CHECK(engine("vllm", h100).kernels.moe_quant_kernels[kMx] == QuantKernel::triton_mxfp4);
  CHECK(engine("vllm", b200).kernels.moe_quant_kernels[kMx] == QuantKernel::trtllm_gen_mxfp4_bf16);
  CHECK(engine("sglang", b200).kernels.moe_quant_kernels[kMx] == QuantKernel::auto_);
  // The dense-GEMM kernels are a separate table: no engine names an MXFP4 dense kernel.
  CHECK(engine("tensorrt-llm-pytorch", b200).kernels.quant_kernels[kMx] == QuantKernel::auto_);
  // What each kernel multiplies: the weights are the checkpoint's, the activations the kernel's.
  CHECK_FALSE(kernel_gemm_dtype(QuantScheme::mxfp4, QuantKernel::triton_mxfp4).has_value());
  CHECK_FALSE(kernel_gemm_dtype(QuantScheme::mxfp4, QuantKernel::trtllm_gen_mxfp4_bf16).has_value());
  CHECK(kernel_gemm_dtype(QuantScheme::mxfp4, QuantKernel::cutlass_mxfp4_mxfp8) == Dtype::fp8);
  CHECK(kernel_gemm_dtype(QuantScheme::mxfp4, QuantKernel::auto_) == Dtype::fp4);  // servesim's generic W4A4
  CHECK(kernel_input_bytes(QuantScheme::mxfp4, QuantKernel::cutlass_mxfp4_mxfp8) == 1.03125);  // E4M3 + E8M0 per 32
  CHECK(std::string(kernel_activation_name(QuantScheme::mxfp4, QuantKernel::triton_mxfp4, Dtype::bf16)) == "bf16");
  CHECK(std::string(kernel_activation_name(QuantScheme::mxfp4, QuantKernel::cutlass_mxfp4_mxfp8, Dtype::bf16)) == "mxfp8");
  CHECK(std::string(kernel_activation_name(QuantScheme::mxfp4, QuantKernel::auto_, Dtype::bf16)) == "mxfp4");
}

TEST_CASE("moe_quant_kernels refusals name the file and key") {
  const std::string dense = refusal("moe_quant_kernels", {{"hopper", {{"mxfp4", "cublaslt"}}}});
  CHECK(dense.find("x.json") != std::string::npos);
  CHECK(dense.find("moe_quant_kernels.hopper.mxfp4") != std::string::npos);
  CHECK(dense.find("not a grouped (MoE) one (triton_mxfp4, trtllm_gen_mxfp4_bf16, cutlass_mxfp4_mxfp8)") != std::string::npos);
  CHECK(refusal("moe_quant_kernels", {{"hopper", {{"fp8", "triton_mxfp4"}}}}).find("does not run fp8 GEMMs") != std::string::npos);
  CHECK(refusal("moe_quant_kernels", {{"hopper", {{"mxfp4", "triton"}}}}).find("unknown kernel 'triton'") != std::string::npos);
  CHECK(refusal("moe_quant_kernels", {{"volta", {{"mxfp4", "triton_mxfp4"}}}}).find("moe_quant_kernels.volta") != std::string::npos);
  const std::string grouped_in_dense = refusal("quant_kernels", {{"blackwell", {{"mxfp4", "cutlass_mxfp4_mxfp8"}}}});
  CHECK(grouped_in_dense.find("quant_kernels.blackwell.mxfp4") != std::string::npos);
  CHECK(grouped_in_dense.find("name it under moe_quant_kernels") != std::string::npos);
}

TEST_CASE("GPT-OSS-120B experts: bytes and kernels by generation (hand arithmetic)") {
  const ModelSpec m = card("gpt-oss-120b");
  // Weights: the checkpoint's, whatever the kernel. Experts 36 x 128 x (5760 x 2880 + 2880 x 2880)
  // = 114,661,785,600 parameters at 0.5 + 1/32 bytes; every other parameter in bf16.
  const double experts = 36.0 * 128.0 * (5760.0 * 2880.0 + 2880.0 * 2880.0);
  CHECK(experts == 114661785600.0);
  const double weights = (m.total_params() - experts) * 2.0 + experts * 0.53125;
  CHECK(m.weight_bytes(Dtype::bf16, QuantScheme::mxfp4, 128, QuantScope::experts) == doctest::Approx(weights).epsilon(1e-12));
  CHECK(weights / 1e9 == doctest::Approx(65.17).epsilon(1e-3));  // one GPU at TP 1 (servesim step: weights 65.17 GB)

  // Batch 8 decode: 32 token copies over the 128 experts, 128 x (1 - (127/128)^32) of them active.
  const Precision p = experts_mxfp4();
  const double copies = 32.0, active = 128.0 * (1.0 - std::pow(127.0 / 128.0, 32.0));
  const auto hopper = decode_ops(m, p, 8, engine("tensorrt-llm-pytorch", hw("h100-sxm")).kernels);
  const auto blackwell = decode_ops(m, p, 8, engine("tensorrt-llm-pytorch", hw("b200")).kernels);
  const auto generic = decode_ops(m, p, 8, KernelPlan{});
  const Op& h = find_op(hopper, "experts_gate_up");
  const Op& b = find_op(blackwell, "experts_gate_up");
  const Op& g = find_op(generic, "experts_gate_up");
  CHECK(h.quant_kernel == QuantKernel::triton_mxfp4);
  CHECK(b.quant_kernel == QuantKernel::cutlass_mxfp4_mxfp8);
  CHECK(g.quant_kernel == QuantKernel::auto_);
  const double wbytes = active * 2880.0 * 5760.0 * 0.53125, out = copies * 5760.0 * 2.0;
  CHECK(h.bytes == doctest::Approx(copies * 2880.0 * 2.0 + wbytes + out).epsilon(1e-12));      // bf16 input
  CHECK(b.bytes == doctest::Approx(copies * 2880.0 * 1.03125 + wbytes + out).epsilon(1e-12));  // MXFP8 input
  CHECK(g.bytes == doctest::Approx(copies * 2880.0 * 0.53125 + wbytes + out).epsilon(1e-12));  // generic W4A4: MXFP4 input
  // Dense GEMMs keep bf16 and no dense kernel (scope experts).
  CHECK(find_op(hopper, "qkv_proj").quant == QuantScheme::none);
  CHECK(find_op(hopper, "qkv_proj").quant_kernel == QuantKernel::auto_);

  // Input quantization: none for MXFP4 x bf16; MXFP8 for the two expert inputs on Blackwell (gate/up
  // 2880 wide and down ffn_size 2880 wide: per launch 8 x 2880 x (2 + 1.03125) bytes).
  for (const Op& op : hopper) CHECK(std::string(op.name) != "act_quant");
  const Op& q = find_op(blackwell, "act_quant");
  CHECK(q.per_layer == 2);
  CHECK(q.bytes == doctest::Approx(8.0 * 2880.0 * (2.0 + 1.03125)).epsilon(1e-12));
  CHECK(find_op(generic, "act_quant").bytes == doctest::Approx(8.0 * 2880.0 * (2.0 + 0.53125)).epsilon(1e-12));

  // Emulated: the generic W4A4 on Hopper (no FP4 tensor cores); not the engine's MXFP4 x bf16 kernel.
  const HwProfile h100 = hw("h100-sxm");
  CHECK(quant_emulated(p, KernelPlan{}, h100));
  CHECK_FALSE(quant_emulated(p, engine("tensorrt-llm-pytorch", h100).kernels, h100));
  CHECK(choose_gemm_kernel(h, h100) == GemmKernel::weight_only_fused);
  CHECK(choose_gemm_kernel(g, h100) == GemmKernel::w8a8_emulated);
  CHECK(choose_gemm_kernel(b, hw("b200")) == GemmKernel::w8a8);
}

TEST_CASE("MXFP4 x bf16 is priced as a fused weight-only kernel: bf16 tensor cores plus one dequantization per 128-row tile") {
  const HwProfile h = hw("h100-sxm");
  for (std::int64_t m : {1, 64, 128, 129, 1024}) {
    INFO(m);
    const KernelTime mx = estimate(gemm(m, QuantScheme::mxfp4, QuantKernel::triton_mxfp4, 2.0), h, Dtype::bf16);
    const KernelTime bf = estimate(gemm(m, QuantScheme::none, QuantKernel::auto_, 2.0), h, Dtype::bf16);
    CHECK(mx.gemm == GemmKernel::weight_only_fused);
    const double tiles = std::ceil(static_cast<double>(m) / 128.0);
    CHECK(mx.compute_s == doctest::Approx(bf.compute_s + 5760.0 * 2880.0 * tiles / h.dequant_weights_per_s(4)).epsilon(1e-9));
    CHECK(mx.bytes == doctest::Approx(m * 2880.0 * 2.0 + 5760.0 * 2880.0 * 0.53125 + m * 5760.0 * 2.0).epsilon(1e-12));
    CHECK(mx.memory_s < bf.memory_s);  // 0.53 bytes a weight streamed where bf16 streams 2
  }
  // At M = 1 the step streams weights: MXFP4 x bf16 beats bf16 by most of the 2 / 0.53 byte ratio.
  const double m1 = estimate(gemm(1, QuantScheme::mxfp4, QuantKernel::triton_mxfp4, 2.0), h, Dtype::bf16).time_s;
  const double b1 = estimate(gemm(1, QuantScheme::none, QuantKernel::auto_, 2.0), h, Dtype::bf16).time_s;
  CHECK(b1 / m1 > 2.0);
  CHECK(b1 / m1 < 2.0 / 0.53125);
}

TEST_CASE("MXFP4 x MXFP8 is priced at the FP8 tensor-core rate on 4.25-bit weights, without dequantization") {
  const HwProfile b = hw("b200");
  for (std::int64_t m : {1, 256, 4096}) {
    INFO(m);
    const KernelTime mx = estimate(gemm(m, QuantScheme::mxfp4, QuantKernel::cutlass_mxfp4_mxfp8, 1.03125), b, Dtype::bf16);
    const KernelTime f8 = estimate(gemm(m, QuantScheme::fp8, QuantKernel::auto_, 1.0), b, Dtype::bf16);
    const KernelTime f4 = estimate(gemm(m, QuantScheme::mxfp4, QuantKernel::auto_, 0.53125), b, Dtype::bf16);
    CHECK(mx.gemm == GemmKernel::w8a8);
    CHECK(mx.compute_s == doctest::Approx(f8.compute_s).epsilon(1e-12));  // same FLOPs, same FP8 rate
    CHECK(mx.bytes == doctest::Approx(m * 2880.0 * 1.03125 + 5760.0 * 2880.0 * 0.53125 + m * 5760.0 * 2.0).epsilon(1e-12));
    CHECK(mx.bytes < f8.bytes);
    if (m == 4096) CHECK(f4.compute_s < mx.compute_s);  // FP4 x FP4 (kind mxf4) would run at twice the MMA rate
  }
}
