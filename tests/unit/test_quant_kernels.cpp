// Issue 40: the engine names the quantized GEMM kernel it runs (engine profile `quant_kernels`, by
// GPU architecture and scheme), the hardware profile holds measured tables per kernel
// (calibration.quant_kernels), and the cost model times a GEMM by the kernel it is given.
#include <doctest/doctest.h>

#include "sim/calib/kv_decode_fit.hpp"
#include "sim/calib/quant_kernels_fit.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/memory_plan.hpp"
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

namespace {
std::string load_error(const std::vector<std::string>& overrides) {
  try {
    load_scenario(resolve_data_ref("scenarios", "quantized", "", ""), overrides);
  } catch (const InputError& err) {
    return err.what();
  }
  return "no error";
}
// The decode attention op of `seqs` sequences at `context` tokens each (under `plan`'s kernels).
Op decode_attention(const ModelSpec& m, std::int64_t seqs, std::int64_t context, Dtype kv, const KernelPlan& plan = {}) {
  BatchShape b;
  for (std::int64_t i = 0; i < seqs; ++i) b.add_decode(context);
  Precision p{Dtype::bf16, Dtype::bf16, kv};
  std::vector<Op> ops;
  build_iteration_ops(m, b, p, ops, plan);
  for (const Op& op : ops) {
    if (op.kind == OpKind::attention_decode) return op;
  }
  return {};
}
}  // namespace

TEST_CASE("integer KV caches: bytes with their per-token scales, capacity, dequantization in attention, engines that run them") {
  const ModelSpec m = load_model(resolve_data_ref("models", "llama-3-8b", "", ""));
  // One 4-byte scale per token and KV head for K and for V (head_dim 128).
  CHECK(m.kv_element_bytes(Dtype::int8) == doctest::Approx(1.0 + 4.0 / 128.0));
  CHECK(m.kv_element_bytes(Dtype::int4) == doctest::Approx(0.5 + 4.0 / 128.0));
  CHECK(m.kv_element_bytes(Dtype::fp8) == 1.0);
  CHECK(m.kv_bytes_per_token(Dtype::int4) == doctest::Approx(m.kv_bytes_per_token(Dtype::bf16) * 0.53125 / 2.0));

  const Scenario bf16 = load_scenario(resolve_data_ref("scenarios", "quantized", "", ""), {"quantization.method=none", "engine.profile=generic"});
  const Scenario int4 = load_scenario(resolve_data_ref("scenarios", "quantized", "", ""),
                                      {"quantization.method=none", "engine.profile=generic", "quantization.kv_cache_dtype=int4"});
  const MemoryPlan a = plan_memory(bf16), b = plan_memory(int4);
  CHECK(b.kv_bytes == doctest::Approx(a.kv_bytes));
  CHECK(static_cast<double>(b.kv_blocks) / static_cast<double>(a.kv_blocks) == doctest::Approx(2.0 / 0.53125).epsilon(0.01));

  // Attention reads the smaller cache and spends CUDA-core time converting it (modelled: a profile
  // without a measured calibration.attention_decode_kv).
  const HwProfile h = hw("h200-sxm");
  REQUIRE(h.kv_decode_time_over_bf16.int8 == 0.0);
  const Op att16 = decode_attention(m, 64, 4096, Dtype::bf16), att4 = decode_attention(m, 64, 4096, Dtype::int4);
  const Op att8 = decode_attention(m, 64, 4096, Dtype::int8);
  CHECK(att4.bytes < 0.3 * att16.bytes);
  const KernelTime t16 = estimate(att16, h, Dtype::bf16), t4 = estimate(att4, h, Dtype::bf16), t8 = estimate(att8, h, Dtype::bf16);
  const double elements = 2.0 * 64.0 * 4097.0 * 8.0 * 128.0;  // K and V of every cached token, per layer
  CHECK(t4.compute_s - t16.compute_s == doctest::Approx(elements / h.dequant_weights_per_s(4)).epsilon(1e-6));
  CHECK(t8.compute_s - t16.compute_s == doctest::Approx(elements / h.dequant_weights_per_s(8)).epsilon(1e-6));
  CHECK(estimate(decode_attention(m, 64, 4096, Dtype::fp8), h, Dtype::bf16).compute_s == doctest::Approx(t16.compute_s));

  // vLLM (the scenario's engine) runs no integer KV cache; TensorRT-LLM's TensorRT backend runs int8.
  const std::string no = load_error({"quantization.kv_cache_dtype=int8"});
  CHECK(no.find("quantization.kv_cache_dtype") != std::string::npos);
  CHECK(no.find("kv_cache_dtypes") != std::string::npos);
  CHECK(load_error({"quantization.kv_cache_dtype=int8", "engine.profile=tensorrt-llm", "quantization.method=int8"}) == "no error");
  CHECK(load_error({"quantization.kv_cache_dtype=int3"}).find("quantization.kv_cache_dtype") != std::string::npos);
}

TEST_CASE("W4A8: 4-bit weights on 8-bit tensor cores, the engine's kernel or a refusal naming the key") {
  CHECK(quant_weight_bytes(QuantScheme::w4afp8, Dtype::bf16, 128) == doctest::Approx(0.5 + 2.0 / 128.0));
  CHECK(w8a8_dtype(QuantScheme::w4a8) == Dtype::int8);
  CHECK(w8a8_dtype(QuantScheme::w4afp8) == Dtype::fp8);
  const HwProfile h = hw("h100-sxm");
  const auto ratio = [&](std::int64_t m, std::int64_t k, std::int64_t n, QuantKernel w4) {
    return estimate(quant_gemm(m, n, k, QuantScheme::w4afp8, w4), h, Dtype::bf16).time_s /
           estimate(quant_gemm(m, n, k, QuantScheme::fp8, QuantKernel::cutlass_scaled_mm), h, Dtype::bf16).time_s;
  };
  // M = 1, generic kernel: memory-bound, the 4-bit weights in about half the fp8 kernel's time.
  CHECK(ratio(1, 4096, 14336, QuantKernel::auto_) > 0.5);
  CHECK(ratio(1, 4096, 14336, QuantKernel::auto_) < 0.56);
  // vLLM's CUTLASS W4A8 on h100-sxm streams at its published rate: vLLM PR #23198's M = 1 ratios
  // over CUTLASS fp8 (94.5/129, 82.3/114.4, 196.3/298.2, 104.2/155.2) reproduced on average within 2%.
  const double published = (94.5 / 129 + 82.3 / 114.4 + 196.3 / 298.2 + 104.2 / 155.2) / 4.0;
  const double model = (ratio(1, 12288, 14336, QuantKernel::cutlass_w4a8) + ratio(1, 12288, 12288, QuantKernel::cutlass_w4a8) +
                        ratio(1, 12288, 73728, QuantKernel::cutlass_w4a8) + ratio(1, 36864, 12288, QuantKernel::cutlass_w4a8)) /
                       4.0;
  CHECK(model == doctest::Approx(published).epsilon(0.02));
  // M = 4096: compute-bound at the fp8 table's rate, plus widening the int4 weights once per 128 rows.
  const KernelTime w4 = estimate(quant_gemm(4096, 14336, 4096, QuantScheme::w4afp8, QuantKernel::cutlass_w4a8), h, Dtype::bf16);
  const KernelTime f8 = estimate(quant_gemm(4096, 14336, 4096, QuantScheme::fp8, QuantKernel::cutlass_scaled_mm), h, Dtype::bf16);
  CHECK(w4.bound == Bound::compute);
  CHECK(w4.compute_s - f8.compute_s == doctest::Approx(4096.0 * 14336.0 * 32.0 / h.dequant_weights_per_s(4)).epsilon(1e-6));

  const Scenario s = load_scenario(resolve_data_ref("scenarios", "quantized", "", ""), {"quantization.method=w4afp8"});
  CHECK(s.engine.profile.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::w4afp8)] == QuantKernel::cutlass_w4a8);
  // vLLM has no int8-activation W4A8 kernel, nor a W4A8 kernel off Hopper.
  CHECK(load_error({"quantization.method=w4a8"}).find("quantization.method") != std::string::npos);
  CHECK(load_error({"quantization.method=w4afp8", "hardware=a100-80gb-sxm"}).find("quant_kernels.ampere") != std::string::npos);
  CHECK(load_error({"quantization.method=w4a8", "engine.profile=generic"}) == "no error");
}

TEST_CASE("activation scales: dynamic per-token scales cost a reduction and a scale per token, and no producer fuses them") {
  const ModelSpec m = load_model(resolve_data_ref("models", "llama-3-8b", "", ""));
  const EngineProfile trt = load_engine_profile("tensorrt-llm-pytorch", "", "");
  BatchShape b;
  for (int i = 0; i < 8; ++i) b.add_decode(1024);
  const auto act_quant = [&](bool dynamic) {
    Precision p{Dtype::bf16, Dtype::bf16, Dtype::fp8};
    p.quant = QuantScheme::fp8;
    p.dynamic_activation_scales = dynamic;
    std::vector<Op> ops;
    build_iteration_ops(m, b, p, ops, trt.kernels);
    for (const Op& op : ops) {
      if (std::string(op.name) == "act_quant") return op;
    }
    return Op{"none", OpKind::elementwise, 0};
  };
  const Op fixed = act_quant(false), dynamic = act_quant(true);
  CHECK(fixed.count < dynamic.count);  // TensorRT-LLM folds static-scale quantization into attention and SwiGLU
  CHECK(dynamic.count == 4 * m.num_layers);
  // Per launch: the mean input width read in 16 bits and written in 8, plus an fp32 scale per token.
  const double width = (2.0 * 4096.0 + 4096.0 + 14336.0) / 4.0;
  CHECK(dynamic.bytes == doctest::Approx(8.0 * width * 3.0 + 4.0 * 8.0));
  CHECK(dynamic.flops == doctest::Approx(3.0 * 8.0 * width));
}

TEST_CASE("integer KV caches on a profile with the measured paged-decode ratio: the bf16 kernel's time times the ratio") {
  const ModelSpec m = load_model(resolve_data_ref("models", "llama-3-8b", "", ""));
  const HwProfile h = hw("h100-sxm");
  // h100-sxm's ratios are `servesim calibrate kv-decode` over the measurement the repository holds.
  const std::string file = std::string(servesim::test::test_data_dir()) + "/../calibrate/results/h100/attention_decode_kv.json";
  const KvDecodeFit fit = fit_kv_decode(load_json_file(file), file, "test");
  REQUIRE(fit.formats.size() == 3);
  for (const KvDecodeFormatFit& f : fit.formats) {
    CAPTURE(f.format);
    CHECK(f.ratios.size() == 12);
    const Dtype kv = f.format == "fp8" ? Dtype::fp8 : f.format == "int8" ? Dtype::int8 : Dtype::int4;
    CHECK(h.kv_decode_time_over_bf16.of(kv) == doctest::Approx(f.median).epsilon(1e-4));  // the tables' 5 digits
  }
  CHECK(h.kv_decode_time_over_bf16.int8 == doctest::Approx(1.57).epsilon(0.01));  // docs/calibration.md's table
  CHECK(h.kv_decode_time_over_bf16.int4 == doctest::Approx(1.55).epsilon(0.01));

  for (const std::int64_t seqs : {1, 16, 256}) {
    CAPTURE(seqs);
    const Op att16 = decode_attention(m, seqs, 2048, Dtype::bf16);
    const KernelTime t16 = estimate(att16, h, Dtype::bf16);
    for (const Dtype kv : {Dtype::int8, Dtype::int4}) {
      CAPTURE(dtype_name(kv));
      const Op att = decode_attention(m, seqs, 2048, kv);
      const KernelTime t = estimate(att, h, Dtype::bf16);
      const double ratio = h.kv_decode_time_over_bf16.of(kv);
      // The kernel's busy time is the bf16 kernel's times the ratio; the launch cost is kept.
      CHECK(t.time_s - t.overhead_s == doctest::Approx(ratio * (t16.time_s - t16.overhead_s)).epsilon(1e-12));
      CHECK(t.overhead_s == t16.overhead_s);
      CHECK(t.time_s > t16.time_s);  // slower than bf16, as measured, though it reads fewer bytes
      CHECK(t.bytes == att.bytes);
      DecodeAttentionCursor cursor;
      CHECK(estimate_decode_attention(att, h, Dtype::bf16, cursor).time_s == t.time_s);
      // A kernel family the measurement is not of (PyTorch SDPA) keeps the modelled cost.
      Op sdpa = att;
      sdpa.attn_kernel = AttentionKernel::sdpa;
      Op sdpa16 = att16;
      sdpa16.attn_kernel = AttentionKernel::sdpa;
      CHECK(estimate(sdpa, h, Dtype::bf16).compute_s - estimate(sdpa16, h, Dtype::bf16).compute_s ==
            doctest::Approx(2.0 * static_cast<double>(seqs) * 2049.0 * 8.0 * 128.0 / h.dequant_weights_per_s(kv == Dtype::int4 ? 4 : 8))
                .epsilon(1e-6));
    }
    // fp8 caches keep the model (fewer bytes, no measured ratio applied).
    const Op att8 = decode_attention(m, seqs, 2048, Dtype::fp8);
    CHECK(estimate(att8, h, Dtype::bf16).memory_s < t16.memory_s);
  }

  // A profile without the measurement is the model, as before (h200-sxm: the test case above).
  // A malformed table is refused naming the key.
  nlohmann::json doc = load_json_file(resolve_data_ref("hwprofiles", "a100-80gb-sxm", "", ""));
  inline_hw_tables(doc, resolve_data_ref("hwprofiles", "a100-80gb-sxm", "", ""));
  doc["tables"]["calibration"]["attention_decode_kv"] = {{"kernel", "sdpa"}, {"time_over_bf16", {{"int8", 1.5}}}};
  std::string err;
  try {
    parse_hw_profile(doc, "x.json");
  } catch (const InputError& e) {
    err = e.what();
  }
  CHECK(err.find("attention_decode_kv.kernel") != std::string::npos);
}

TEST_CASE("qserve: W4A8 through its own kernel on Ampere and Ada, a grouped-query int4 cache dequantized once per query head") {
  const EngineProfile qserve = load_engine_profile("qserve", "", "");
  CHECK(qserve.kernels.decode_attention_per_query_head);
  const KernelPlan plain{};
  REQUIRE_FALSE(plain.decode_attention_per_query_head);
  const HwProfile a100 = hw("a100-80gb-sxm"), h100 = hw("h100-sxm");
  // (clang 14 cannot capture a structured binding in CAPTURE's lambda: a pair, read by member)
  for (const std::pair<const char*, int>& model : {std::pair<const char*, int>{"llama-3-8b", 4}, {"llama-2-7b", 1}}) {
    const char* name = model.first;
    const int group = model.second;
    CAPTURE(name);
    const ModelSpec m = load_model(resolve_data_ref("models", name, "", ""));
    const Op per_head = decode_attention(m, 64, 2048, Dtype::int4, qserve.kernels), grouped = decode_attention(m, 64, 2048, Dtype::int4, plain);
    CHECK(per_head.attn_dequant_copies == group);
    CHECK(grouped.attn_dequant_copies == 1);
    CHECK(per_head.bytes == grouped.bytes);  // the cache is read from HBM once either way (the group's blocks share it in L2)
    // Modelled dequantization (a100-80gb-sxm has no measured int-cache ratio): the group size times the work.
    const double elements = 2.0 * per_head.attn_kv_tokens * static_cast<double>(m.num_kv_heads * m.head_dim);
    CHECK(estimate(per_head, a100, Dtype::bf16).compute_s - estimate(grouped, a100, Dtype::bf16).compute_s ==
          doctest::Approx((group - 1) * elements / a100.dequant_weights_per_s(4)).epsilon(1e-6));
    // h100-sxm's measured ratio is of a kernel that serves the group per program: applied where the
    // group is one head, the model where it is not.
    const KernelTime measured = estimate(grouped, h100, Dtype::bf16), q = estimate(per_head, h100, Dtype::bf16);
    if (group == 1) {
      CHECK(q.time_s == measured.time_s);
    } else {
      const Op bf16 = decode_attention(m, 64, 2048, Dtype::bf16, plain);
      const KernelTime t16 = estimate(bf16, h100, Dtype::bf16);
      CHECK(measured.time_s - measured.overhead_s == doctest::Approx(h100.kv_decode_time_over_bf16.int4 * (t16.time_s - t16.overhead_s)));
      CHECK(q.compute_s - t16.compute_s == doctest::Approx(group * elements / h100.dequant_weights_per_s(4)).epsilon(1e-6));
    }
    // Only integer caches pay it: a 16-bit cache's op is timed the same under both plans.
    CHECK(estimate(decode_attention(m, 64, 2048, Dtype::bf16, qserve.kernels), a100, Dtype::bf16).time_s ==
          estimate(decode_attention(m, 64, 2048, Dtype::bf16, plain), a100, Dtype::bf16).time_s);
  }
  // QServe names its W4A8 kernel on Ampere and Ada (its benchmarks' A100 and L40S), none on Hopper.
  const Scenario a = load_scenario(resolve_data_ref("scenarios", "quantized", "", ""),
                                   {"quantization.method=w4a8", "engine.profile=qserve", "hardware=a100-80gb-sxm", "quantization.kv_cache_dtype=int4"});
  CHECK(a.engine.profile.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::w4a8)] == QuantKernel::qserve_w4a8);
  CHECK(load_error({"quantization.method=w4a8", "engine.profile=qserve"}).find("quant_kernels.hopper") != std::string::npos);
  CHECK(load_error({"quantization.method=w4a8", "engine.profile=qserve", "hardware=l40s", "quantization.kv_cache_dtype=fp8"})
            .find("quantization.kv_cache_dtype") != std::string::npos);
}

TEST_CASE("tuned_int8: TensorRT-LLM's SmoothQuant GEMM on h100-sxm from the measured gemm8 section, its own run cited") {
  const std::string file = std::string(servesim::test::test_data_dir()) + "/../calibrate/results/h100/quant_kernels.json";
  const nlohmann::json doc = load_json_file(file);
  const nlohmann::json& gemm8 = doc["sections"]["gemm8"];
  const HwProfile h = hw("h100-sxm");
  const QuantKernelFit fit = fit_quant_kernels(doc, file, h, "test", 3);
  REQUIRE(fit.tables.contains("tuned_int8"));
  const std::string source = fit.tables["tuned_int8"]["int8"]["source"].get<std::string>();
  CHECK(source.find(gemm8["command"].get<std::string>()) != std::string::npos);
  CHECK(source.find(gemm8["date_utc"].get<std::string>()) != std::string::npos);
  CHECK(fit.tables["torch_int_mm"]["int8"]["source"].get<std::string>().find("--sections gemm8") == std::string::npos);
  // The shipped profile reproduces a fitted point (M = 1 is never held out) of the measured kernel.
  for (const auto& p : gemm8["points"]) {
    if (p["m"] != 1) continue;
    const Op op = quant_gemm(1, p["n"].get<std::int64_t>(), p["k"].get<std::int64_t>(), QuantScheme::int8, QuantKernel::tuned_int8);
    CAPTURE(p["n"].get<int>());
    CHECK(estimate(op, h, Dtype::bf16).time_s == doctest::Approx(p["triton_int8_s"].get<double>()).epsilon(0.01));
  }
  // TensorRT-LLM names it on Hopper; without a table (h200-sxm) it is the profile's int8 table, bit for bit.
  EngineProfile trt = load_engine_profile("tensorrt-llm", "t", "--engine");
  resolve_quant_kernels(trt, h);
  CHECK(trt.kernels.quant_kernels[static_cast<std::size_t>(QuantScheme::int8)] == QuantKernel::tuned_int8);
  const HwProfile h200 = hw("h200-sxm");
  CHECK(estimate(quant_gemm(8, 4096, 4096, QuantScheme::int8, QuantKernel::tuned_int8), h200, Dtype::bf16).time_s ==
        estimate(quant_gemm(8, 4096, 4096, QuantScheme::int8, QuantKernel::auto_), h200, Dtype::bf16).time_s);
}

TEST_CASE("weight-only MoE experts: a fused kernel's tile is priced once, not again at 128 padded rows per expert") {
  // Qwen3-30B-A3B decoding 64 sequences on one H100: 512 token-expert pairs over 128 experts, 4
  // rows each, padded to 128-row tiles for the CUTLASS-style grouped GEMM. A fused weight-only
  // kernel (vLLM's fused_marlin_moe blocks an expert's rows by 8-64) dequantizes each expert once
  // there, so its 4-bit experts stream fewer bytes than the bf16 ones and cost less.
  const HwProfile h = hw("h100-sxm");
  const ModelSpec m = load_model(resolve_data_ref("models", "qwen3-30b-a3b", "", ""));
  BatchShape batch;
  for (int i = 0; i < 64; ++i) batch.add_decode(2048);
  auto experts_s = [&](QuantScheme q, QuantKernel kernel) {
    Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
    p.quant = q;
    std::vector<Op> ops;
    build_iteration_ops(m, batch, p, ops);
    for (Op& op : ops) {
      if (op.kind != OpKind::grouped_gemm) continue;
      op.quant_kernel = kernel;
      REQUIRE(op.m == 4);
      REQUIRE(op.tile_padding > 8.0);
    }
    double s = 0.0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::grouped_gemm) s += static_cast<double>(op.count) * estimate(op, h, Dtype::bf16).time_s;
    }
    return s;
  };
  const double bf16 = experts_s(QuantScheme::none, QuantKernel::auto_);
  const double marlin = experts_s(QuantScheme::w4a16_awq, QuantKernel::marlin);
  const double machete = experts_s(QuantScheme::w4a16_gptq, QuantKernel::machete);
  MESSAGE("experts per step at 4 rows per expert: bf16 " << bf16 * 1e3 << " ms, Marlin " << marlin * 1e3 << " ms, Machete "
                                                      << machete * 1e3 << " ms");
  CHECK(marlin < 0.6 * bf16);
  // Marlin's 64-row and Machete's 128-row tiles both hold the 4 rows in one tile.
  CHECK(marlin == doctest::Approx(machete).epsilon(1e-9));
}
