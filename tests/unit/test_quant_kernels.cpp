// Issue 40: the engine names the quantized GEMM kernel it runs (engine profile `quant_kernels`, by
// GPU architecture and scheme), the hardware profile holds measured tables per kernel
// (calibration.quant_kernels), and the cost model times a GEMM by the kernel it is given.
#include <doctest/doctest.h>

#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {
HwProfile hw(const std::string& n) { return load_hw_profile(resolve_data_ref("hwprofiles", n, "", "")); }

Op quant_gemm(std::int64_t m, std::int64_t n, std::int64_t k, QuantScheme q, QuantKernel kernel) {
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  p.quant = q;
  Op op = make_gemm_op("g", 1, m, n, k, p);
  op.quant_kernel = kernel;
  return op;
}

nlohmann::json engine_doc(const nlohmann::json& quant_kernels) {
  auto doc = nlohmann::json::parse(R"({"name":"x","kernels_per_layer":{},"cuda_graphs":{"decode":true},
      "host":{"overhead_per_step_s":0,"overhead_per_seq_s":0},"defaults":{"scheduler":"continuous","kv_cache":"paged","block_size":16}})");
  doc["quant_kernels"] = quant_kernels;
  return doc;
}
}  // namespace

TEST_CASE("engine quant_kernels: parsed per architecture, resolved for the GPU, bad names rejected with the key") {
  EngineProfile e = parse_engine_profile(engine_doc({{"hopper", {{"w4a16-gptq", "machete"}, {"fp8", "cutlass_scaled_mm"}}},
                                                     {"ampere", {{"w4a16-gptq", "marlin"}}}}),
                                         "x.json");
  resolve_quant_kernels(e, hw("h100-sxm"));
  CHECK(e.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::w4a16_gptq)] == QuantKernel::machete);
  CHECK(e.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::fp8)] == QuantKernel::cutlass_scaled_mm);
  CHECK(e.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::w4a16_awq)] == QuantKernel::auto_);
  resolve_quant_kernels(e, hw("a100-80gb-sxm"));
  CHECK(e.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::w4a16_gptq)] == QuantKernel::marlin);
  CHECK(e.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::fp8)] == QuantKernel::auto_);
  resolve_quant_kernels(e, hw("l40s"));  // ada: not named, servesim's generic choice
  CHECK(e.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::w4a16_gptq)] == QuantKernel::auto_);

  const auto message = [](const nlohmann::json& q) {
    try {
      parse_engine_profile(engine_doc(q), "x.json");
    } catch (const InputError& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  CHECK(message({{"volta", {{"fp8", "cublaslt"}}}}).find("quant_kernels.volta") != std::string::npos);
  CHECK(message({{"hopper", {{"fp9", "cublaslt"}}}}).find("quant_kernels.hopper.fp9") != std::string::npos);
  const std::string unknown = message({{"hopper", {{"fp8", "cuBLAS"}}}});
  CHECK(unknown.find("quant_kernels.hopper.fp8") != std::string::npos);
  CHECK(unknown.find("unknown kernel 'cuBLAS'") != std::string::npos);
  CHECK(unknown.find("cutlass_scaled_mm") != std::string::npos);  // the names it takes
  CHECK(message({{"hopper", {{"fp8", "tinygemm"}}}}).find("does not run fp8") != std::string::npos);
  CHECK(message({{"hopper", {{"w8a16", "exllama"}}}}).find("does not run w8a16") != std::string::npos);
  CHECK(message({{"hopper", {{"fp8", "auto"}}}}).find("unknown kernel 'auto'") != std::string::npos);
}

TEST_CASE("engine quant_kernels reach the quantized layer GEMMs only") {
  const ModelSpec m = load_model(resolve_data_ref("models", "llama-3-8b", "", ""));
  BatchShape b;
  b.add_decode(100);
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  p.quant = QuantScheme::w4a16_awq;
  KernelPlan plan;
  plan.quant_kernels[static_cast<std::size_t>(QuantScheme::w4a16_awq)] = QuantKernel::marlin;
  std::vector<Op> ops;
  build_iteration_ops(m, b, p, ops, plan);
  int quantized = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::gemm && op.quant == QuantScheme::w4a16_awq) {
      CHECK(op.quant_kernel == QuantKernel::marlin);
      ++quantized;
    } else {
      CHECK(op.quant_kernel == QuantKernel::auto_);  // lm_head stays 16-bit, other ops have no kernel
    }
  }
  CHECK(quantized == 4);  // qkv, o_proj, gate_up, down
  // Another scheme's entry does not apply.
  p.quant = QuantScheme::w4a16_gptq;
  build_iteration_ops(m, b, p, ops, plan);
  for (const Op& op : ops) CHECK(op.quant_kernel == QuantKernel::auto_);
}

TEST_CASE("weight-only kernel choice follows the engine's kernel, not the checkpoint format") {
  const HwProfile h = hw("h100-sxm");
  // servesim's generic rule by format: GPTQ fused up to M = 50, AWQ up to 255.
  CHECK(estimate(quant_gemm(64, 4096, 4096, QuantScheme::w4a16_gptq, QuantKernel::auto_), h, Dtype::bf16).gemm == GemmKernel::dequant_gemm);
  CHECK(estimate(quant_gemm(64, 4096, 4096, QuantScheme::w4a16_awq, QuantKernel::auto_), h, Dtype::bf16).gemm ==
        GemmKernel::weight_only_fused);
  // The engine's kernel decides: exllama switches at 50 and AWQ's GEMM at 255 whatever the checkpoint.
  CHECK(estimate(quant_gemm(64, 4096, 4096, QuantScheme::w4a16_awq, QuantKernel::exllama), h, Dtype::bf16).gemm ==
        GemmKernel::dequant_gemm);
  CHECK(estimate(quant_gemm(64, 4096, 4096, QuantScheme::w4a16_gptq, QuantKernel::awq_gemm), h, Dtype::bf16).gemm ==
        GemmKernel::weight_only_fused);
  // Marlin and Machete run fused at every M, and without a table of their own take the analytic
  // (Marlin-class) model, not the profile's measured CUDA-core GEMV table.
  for (QuantKernel k : {QuantKernel::marlin, QuantKernel::machete}) {
    const KernelTime big = estimate(quant_gemm(4096, 4096, 4096, QuantScheme::w4a16_gptq, k), h, Dtype::bf16);
    CHECK(big.gemm == GemmKernel::weight_only_fused);
    CHECK(big.launches == 1);
    const double analytic = estimate(quant_gemm(16, 4096, 4096, QuantScheme::w4a16_gptq, k), h, Dtype::bf16).time_s;
    const double gemv = estimate(quant_gemm(16, 4096, 4096, QuantScheme::w4a16_gptq, QuantKernel::auto_), h, Dtype::bf16).time_s;
    CHECK(analytic < gemv);  // our GEMV at M = 16 is far slower than a tensor-core mixed-input kernel
  }
}

TEST_CASE("w8a8 kernels: a kernel without a table on the GPU runs the profile's 8-bit table; bit for bit") {
  const HwProfile h = hw("h200-sxm");  // no calibration.quant_kernels
  for (QuantKernel k : {QuantKernel::cublaslt, QuantKernel::cutlass_scaled_mm, QuantKernel::torch_scaled_mm}) {
    CHECK(estimate(quant_gemm(64, 6144, 4096, QuantScheme::fp8, k), h, Dtype::bf16).time_s ==
          estimate(quant_gemm(64, 6144, 4096, QuantScheme::fp8, QuantKernel::auto_), h, Dtype::bf16).time_s);
  }
  // The kernel is part of the memo's key: two kernels of one shape are two entries.
  HwProfile with = h;
  KernelTimeCache cache(with, Dtype::bf16);
  const Op a = quant_gemm(1, 4096, 4096, QuantScheme::w4a16_gptq, QuantKernel::auto_);
  const Op b = quant_gemm(1, 4096, 4096, QuantScheme::w4a16_gptq, QuantKernel::marlin);
  const double ta = cache.get(a).time_s, tb = cache.get(b).time_s;  // copies: an entry may be replaced
  CHECK(ta == estimate(a, with, Dtype::bf16).time_s);
  CHECK(tb == estimate(b, with, Dtype::bf16).time_s);
  CHECK(ta != tb);
  CHECK(cache.get(a).time_s == ta);
}

TEST_CASE("calibration.quant_kernels: a measured kernel table times the ops that name it; bad names rejected") {
  const std::string path = resolve_data_ref("hwprofiles", "h200-sxm", "", "");
  nlohmann::json doc = load_json_file(path);
  inline_hw_tables(doc, path);
  // One shape, fraction 0.5 at every M: the kernel takes twice its roofline plus its launches.
  doc["tables"]["calibration"]["quant_kernels"] = {
      {"torch_int_mm", {{"int8", {{"m", {1, 4096}}, {"shapes", {{4096, 4096, 0.5, 0.5}}}, {"launches", 4}, {"source", "test"}}}}}};
  const HwProfile h = parse_hw_profile(doc, path);
  const Op op = quant_gemm(8, 4096, 4096, QuantScheme::int8, QuantKernel::torch_int_mm);
  const KernelTime t = estimate(op, h, Dtype::bf16);
  const double roofline = std::max(op.flops / h.peak_flops(Dtype::int8), op.bytes / h.hbm_bandwidth_bytes_per_s);
  CHECK(t.time_s == doctest::Approx(2.0 * roofline + 4 * h.kernel_overhead_s));
  CHECK(t.launches == 4);
  CHECK(t.gemm == GemmKernel::w8a8);
  // Another kernel of the same format is not timed by it.
  CHECK(estimate(quant_gemm(8, 4096, 4096, QuantScheme::int8, QuantKernel::cutlass_scaled_mm), h, Dtype::bf16).time_s != t.time_s);
  doc["tables"]["calibration"]["quant_kernels"] = {{"cuBLAS", nlohmann::json::object()}};
  CHECK_THROWS_AS(parse_hw_profile(doc, path), InputError);
  doc["tables"]["calibration"]["quant_kernels"] = {{"tinygemm", {{"w3a16", nlohmann::json::object()}}}};
  CHECK_THROWS_AS(parse_hw_profile(doc, path), InputError);
}

TEST_CASE("h100-sxm Marlin from its published benchmark: the derivation reproduces the published speed-ups") {
  // inclusionAI/humming PR #2 (H100, n = k = 8192 channelwise): marlin over torch fp16 at M = 1, 2, 4.
  const HwProfile h = hw("h100-sxm");
  const double w4[] = {4.98 / 2.30, 10.02 / 4.63, 19.85 / 9.26}, w8[] = {3.46 / 2.30, 6.87 / 4.63, 13.75 / 9.26};
  const std::int64_t ms[] = {1, 2, 4};
  for (std::size_t i = 0; i < 3; ++i) {
    Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
    const double dense = estimate(make_gemm_op("g", 1, ms[i], 8192, 8192, p), h, Dtype::bf16).time_s;
    for (const auto& scheme : {std::pair{QuantScheme::w4a16_gptq, w4[i]}, std::pair{QuantScheme::w8a16, w8[i]}}) {
      const QuantScheme q = scheme.first;  // not structured bindings: doctest's INFO captures them (clang 14)
      const double published = scheme.second;
      p.quant = q;
      p.group_size = 8192;  // channelwise, as the benchmark
      Op op = make_gemm_op("g", 1, ms[i], 8192, 8192, p);
      op.quant_kernel = QuantKernel::marlin;
      const double speedup = dense / estimate(op, h, Dtype::bf16).time_s;
      INFO("M " << ms[i] << " " << quant_name(q) << ": servesim " << speedup << "x, published " << published << "x");
      CHECK(std::abs(speedup / published - 1.0) < 0.02);
      // Machete has no entry on this GPU: it takes Marlin's.
      op.quant_kernel = QuantKernel::machete;
      CHECK(estimate(op, h, Dtype::bf16).time_s == doctest::Approx(dense / speedup).epsilon(1e-9));
    }
  }
}

TEST_CASE("block-wise fp8: scale bytes, the measured block-wise kernel, vLLM's CUTLASS one standing on it") {
  CHECK(quant_weight_bytes(QuantScheme::fp8_block, Dtype::bf16, 128) == doctest::Approx(1.0 + 4.0 / 16384.0));
  CHECK(quant_input_bytes(QuantScheme::fp8_block) == doctest::Approx(1.0 + 4.0 / 128.0));
  CHECK(parse_quant("fp8-block") == QuantScheme::fp8_block);
  const HwProfile h = hw("h100-sxm");
  const Op measured = quant_gemm(64, 6144, 4096, QuantScheme::fp8_block, QuantKernel::torch_scaled_mm_blockwise);
  const Op cutlass = quant_gemm(64, 6144, 4096, QuantScheme::fp8_block, QuantKernel::cutlass_scaled_mm);
  const Op generic = quant_gemm(64, 6144, 4096, QuantScheme::fp8_block, QuantKernel::auto_);
  CHECK(estimate(measured, h, Dtype::bf16).gemm == GemmKernel::w8a8);
  CHECK(estimate(cutlass, h, Dtype::bf16).time_s == estimate(measured, h, Dtype::bf16).time_s);
  CHECK(estimate(generic, h, Dtype::bf16).time_s != estimate(measured, h, Dtype::bf16).time_s);  // the per-tensor table
  // A bundled scenario runs it under vLLM, whose profile names CUTLASS on Hopper.
  const Scenario s = load_scenario(resolve_data_ref("scenarios", "quantized", "", ""), {});
  CHECK(s.precision.quant == QuantScheme::fp8_block);
  CHECK(s.engine.profile.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::fp8_block)] == QuantKernel::cutlass_scaled_mm);
}
