// EngineProfile: what a serving framework does to every step, independent of the model: how it
// cuts a layer into kernels, whether decode runs in CUDA graphs (and at which batch sizes), its
// host overhead, start-up costs and its default scheduler and KV strategy. Read from
// scenarios/engines/<name>.json (each number's source is in the file).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/hw/cost_model.hpp"
#include "sim/hw/hw_profile.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

struct ColdStartConfig {
  double disk_bandwidth_bytes_per_s = 2e9;   // weights read from local NVMe (safetensors, page cache cold)
  double cuda_context_s = 0.5;               // CUDA context + cuBLAS/NCCL handles
  double framework_init_s = 0.0;             // imports, model construction, profiling run, compile
  double graph_capture_s_per_batch_size = 0.0;
};

// Which iterations replay CUDA graphs. decode: decode-only batches, padded to the next captured
// batch size, eager above the largest (vLLM V0, TensorRT-LLM, SGLang). full_and_piecewise: vLLM
// V1's default since 0.11 (cudagraph_mode FULL_AND_PIECEWISE): every batch whose token count
// (prefill chunks plus decodes) is at most the largest captured size runs from graphs, padded up
// to the next captured size in tokens (full graphs for decode-only batches; piecewise graphs for
// mixed ones, with attention launched between the pieces, priced as graph replay: under async
// scheduling the host issues them ahead of the GPU); larger batches run without graphs.
enum class CudaGraphMode { decode, full_and_piecewise };

// Settings an engine picks by GPU (vLLM V1's EngineArgs defaults for the OpenAI server: a GPU with
// at least min_memory_bytes of memory that is not of an excluded architecture gets the large
// token budget and sequence limit).
struct GpuSizedDefaults {
  double min_memory_bytes = 0.0;     // 0: no rule
  std::vector<std::string> except_architectures;
  std::int64_t max_num_batched_tokens = 0, max_num_seqs = 0;  // on GPUs the rule picks
};

// The quantized GEMM kernels an engine runs on GPUs of one architecture (hw.architecture), one
// per scheme (index: QuantScheme; auto_ where the profile names none). Key `quant_kernels`.
struct QuantKernelChoice {
  std::string architecture;
  std::array<QuantKernel, kNumQuantSchemes> kernels{};
};

// What the engine's KV cache holds for a sliding-window or chunked-attention layer
// (ModelSpec::sliding_window). window: at most the window per sequence (vLLM V1's hybrid KV cache
// manager); full: the whole sequence, as in a full-attention layer (TensorRT-LLM's PyTorch backend
// unless KvCacheConfig.max_attention_window lists per-layer windows). The decode kernels read
// only the window either way, so only the KV capacity differs. Profile key
// defaults.kv_cache_windowed_layers, scenario key engine.kv_cache_windowed_layers.
enum class KvWindowedLayers { window, full };
inline const char* kv_windowed_layers_name(KvWindowedLayers w) { return w == KvWindowedLayers::full ? "full" : "window"; }
inline std::optional<KvWindowedLayers> parse_kv_windowed_layers(const std::string& s) {
  if (s == "window") return KvWindowedLayers::window;
  if (s == "full") return KvWindowedLayers::full;
  return std::nullopt;
}
// `m` as the engine's KV cache stores it: under full no layer is windowed. For the cache's bytes
// only (capacity, transfers); attention reads what `m` itself says.
inline ModelSpec kv_cache_layout(const ModelSpec& m, KvWindowedLayers w) {
  ModelSpec s = m;
  if (w == KvWindowedLayers::full) s.sliding_window = {};
  return s;
}

struct EngineProfile {
  std::string name;          // the bundled profile's name, or a profile file's
  std::string display_name;
  KernelPlan kernels;
  LaunchConfig launch;
  std::vector<std::int64_t> cuda_graph_batch_sizes;  // empty: every decode batch size is captured
  CudaGraphMode cuda_graph_mode = CudaGraphMode::decode;
  // vLLM V1's capture list (cuda_graphs.batch_sizes "vllm-v1"): 1, 2, 4, 8..248 by 8, 256..max by
  // 16, max = min(2 x max_num_seqs, 512, max_num_batched_tokens); resolved once those are known.
  bool vllm_v1_capture_sizes = false;
  std::string scheduler = "continuous";              // the framework's own default policy
  std::string kv_cache = "paged";                    // paged, radix (prefix tree), token (block 1), contiguous
  std::int64_t block_size = 16;
  std::int64_t max_num_batched_tokens = 0;           // the engine's token budget per step (0: servesim's)
  std::int64_t max_num_seqs = 0;                     // the engine's sequence limit (0: servesim's)
  GpuSizedDefaults gpu_sized;                        // per-GPU overrides of the two limits above
  bool enable_prefix_caching = false;                // the engine's default
  KvWindowedLayers kv_windowed_layers = KvWindowedLayers::window;  // what windowed layers keep
  double watermark_frac = -1.0;                      // KV blocks kept free at admission (< 0: servesim's)
  // Async scheduling (vLLM V1 from 0.14 on): the engine schedules step k+1 while step k runs, so
  // a request arriving during step k first runs in step k+2, and the host's per-step work
  // overlaps the GPU (launch.overlap_host).
  bool async_scheduling = false;
  // The server's own latency on a request outside the engine's steps (HTTP, tokenization, the
  // queue to the engine, detokenizing and streaming the first token): taken as a delay before the
  // engine sees the request, so it adds to TTFT and E2E, not to TPOT. Key host.frontend_latency_s.
  double frontend_latency_s = 0.0;
  ColdStartConfig cold_start;
  std::vector<QuantKernelChoice> quant_kernels;     // by architecture; resolved into kernels.quant_kernels
  std::vector<QuantKernelChoice> moe_quant_kernels; // the same for grouped (MoE) GEMMs (key moe_quant_kernels)
  // GPU architectures whose chunked-attention layers the engine decodes with one program per
  // query head (kernels_per_layer.chunked_attention_decode_per_query_head); resolved into
  // kernels.chunked_decode_attention_per_query_head.
  std::vector<std::string> chunked_decode_per_query_head_architectures;
  // The smallest token tile of its grouped (MoE) GEMMs by GPU architecture
  // (kernels_per_layer.moe_token_tile_rows); resolved into kernels.moe_token_tile_rows, 128 elsewhere.
  std::vector<std::pair<std::string, int>> moe_token_tile_rows;
  // The quantized KV cache formats the engine runs (key kv_cache_dtypes); a profile without the
  // key runs any (servesim's generic attention kernel).
  std::optional<std::vector<Dtype>> kv_cache_dtypes;
};

// Where and why the engine cannot run precision `p` on `hw` (empty key: it can), for the caller's
// error naming the scenario key: a scheme that needs the engine's own kernel (needs_engine_kernel)
// where its quant_kernels, resolved for `hw`, name none; a quantized KV cache its kv_cache_dtypes
// leaves out. Call after resolve_quant_kernels.
struct PrecisionSupport {
  std::string key, why;
};
inline PrecisionSupport engine_supports(const EngineProfile& e, const Precision& p, const HwProfile& hw) {
  if (needs_engine_kernel(p.quant) && !e.quant_kernels.empty() &&
      e.kernels.quant_kernels[static_cast<std::size_t>(p.quant)] == QuantKernel::auto_) {
    return {"quantization.method", std::string(quant_name(p.quant)) + ": engine profile '" + e.name + "' names no kernel for it on " +
                                        hw.architecture + " GPUs (its quant_kernels." + hw.architecture +
                                        "; scenarios/engines/" + e.name + ".json)"};
  }
  const bool quantized_kv = p.kv_cache == Dtype::fp8 || integer_kv_cache(p.kv_cache);
  if (quantized_kv && e.kv_cache_dtypes &&
      std::find(e.kv_cache_dtypes->begin(), e.kv_cache_dtypes->end(), p.kv_cache) == e.kv_cache_dtypes->end()) {
    std::string listed;
    for (Dtype d : *e.kv_cache_dtypes) listed += std::string(listed.empty() ? "" : ", ") + dtype_name(d);
    return {"quantization.kv_cache_dtype", std::string(dtype_name(p.kv_cache)) + ": engine profile '" + e.name +
                                               "' runs no such KV cache (its kv_cache_dtypes: " + listed +
                                               "; scenarios/engines/" + e.name + ".json)"};
  }
  return {};
}

// Whether precision `p`'s quantized GEMMs run emulated on `hw` (the GPU lacks the format they
// compute in): the scheme's format, or at scope experts the format of the engine's MoE kernel
// (`plan`, resolved for `hw`), which may keep the activations 16-bit (Hopper's MXFP4 x bf16).
inline bool quant_emulated(const Precision& p, const KernelPlan& plan, const HwProfile& hw) {
  const QuantKernel k = p.quant_scope == QuantScope::experts ? plan.moe_quant_kernels[static_cast<std::size_t>(p.quant)] : QuantKernel::auto_;
  const auto d = kernel_gemm_dtype(p.quant, k);
  return d && !hw.supports(*d);
}

// The engine's quantized GEMM kernels on `hw` (its architecture's entry in `quant_kernels`, else
// servesim's generic choice), its chunked layers' decode kernel and its MoE token tile there into
// the kernel plan:
// the one place they are resolved (the simulator and `servesim step`).
inline void resolve_quant_kernels(EngineProfile& p, const HwProfile& hw) {
  // The architecture's entry of a per-architecture kernel table, else servesim's generic choices.
  const auto for_hw = [&hw](const std::vector<QuantKernelChoice>& table) {
    std::array<QuantKernel, kNumQuantSchemes> kernels{};
    for (const QuantKernelChoice& c : table) {
      if (c.architecture == hw.architecture) kernels = c.kernels;
    }
    return kernels;
  };
  p.kernels.quant_kernels = for_hw(p.quant_kernels);
  p.kernels.moe_quant_kernels = for_hw(p.moe_quant_kernels);
  const auto& archs = p.chunked_decode_per_query_head_architectures;
  p.kernels.chunked_decode_attention_per_query_head = std::find(archs.begin(), archs.end(), hw.architecture) != archs.end();
  p.kernels.moe_token_tile_rows = 128;
  for (const auto& [arch, rows] : p.moe_token_tile_rows) {
    if (arch == hw.architecture) p.kernels.moe_token_tile_rows = rows;
  }
}

// vLLM V1's CUDA-graph capture sizes in tokens (vllm/config/vllm.py _set_cudagraph_sizes, without
// speculative decoding): [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16).
inline std::vector<std::int64_t> vllm_v1_capture_sizes(std::int64_t max_num_seqs, std::int64_t max_num_batched_tokens) {
  const std::int64_t max_size = std::min<std::int64_t>({2 * max_num_seqs, 512, max_num_batched_tokens});
  std::vector<std::int64_t> sizes;
  for (std::int64_t s : {1, 2, 4}) {
    if (s <= max_size) sizes.push_back(s);
  }
  for (std::int64_t s = 8; s < 256 && s <= max_size; s += 8) sizes.push_back(s);
  for (std::int64_t s = 256; s <= max_size; s += 16) sizes.push_back(s);
  return sizes;
}

// The limits the engine itself picks on `hw` (its gpu_sized rule, else its own defaults, else
// vLLM's 256 sequences and 2048 tokens), for a step timed outside a scenario (`servesim step
// --engine`): what its capture list ("vllm-v1") is resolved from.
inline void resolve_for_gpu(EngineProfile& p, const HwProfile& hw) {
  std::int64_t seqs = p.max_num_seqs > 0 ? p.max_num_seqs : 256;
  std::int64_t tokens = p.max_num_batched_tokens > 0 ? p.max_num_batched_tokens : 2048;
  const GpuSizedDefaults& g = p.gpu_sized;
  if (g.min_memory_bytes > 0.0 && static_cast<double>(hw.memory_bytes) >= g.min_memory_bytes &&
      std::find(g.except_architectures.begin(), g.except_architectures.end(), hw.architecture) == g.except_architectures.end()) {
    seqs = g.max_num_seqs;
    tokens = g.max_num_batched_tokens;
  }
  if (p.vllm_v1_capture_sizes) p.cuda_graph_batch_sizes = vllm_v1_capture_sizes(seqs, tokens);
  resolve_quant_kernels(p, hw);
}

// Padded decode batch under CUDA graphs: the next captured size >= seqs, or 0 when seqs exceeds
// every captured size (the step then runs eagerly, as vLLM does).
inline std::int64_t graph_batch_size(const std::vector<std::int64_t>& sizes, std::int64_t seqs) {
  if (sizes.empty()) return seqs;
  for (std::int64_t s : sizes) {
    if (s >= seqs) return s;
  }
  return 0;
}

// CUDA graphs for an iteration of `shape`, under an engine that captures them at
// `captured_sizes` (vLLM's rule): an iteration with a prefill launches its kernels eagerly
// (launch.cuda_graphs cleared); a decode batch runs in the graph of the next captured size,
// `shape` padded with empty decodes (context 0) up to it, or eagerly when it is larger than every
// captured size. The one place graph padding is written (the simulator and `servesim step`).
// A decode-only iteration also pays the engine's decode-step host work.
// Under CudaGraphMode::full_and_piecewise a mixed iteration is padded by tokens the same way
// (empty decodes up to the captured token count), and only one over every captured size is eager.
inline void apply_cuda_graphs(LaunchConfig& launch, const std::vector<std::int64_t>& captured_sizes, BatchShape& shape,
                              CudaGraphMode mode = CudaGraphMode::decode) {
  if (shape.prefill_seqs == 0) launch.host_overhead_per_step_s += launch.host_overhead_per_decode_step_s;
  if (shape.prefill_seqs > 0 && mode == CudaGraphMode::decode) {
    launch.cuda_graphs = false;
  } else if (launch.cuda_graphs) {
    const std::int64_t tokens = shape.total_tokens();
    const std::int64_t padded = graph_batch_size(captured_sizes, tokens);
    if (padded == 0) launch.cuda_graphs = false;
    // Each padded slot is an empty decode (of decode_query_tokens tokens in a verify pass).
    for (std::int64_t i = tokens; i < padded; i += shape.decode_query_tokens) shape.add_decode(0);
  }
}

// The per-step host work of a replica of `tp` tensor-parallel GPUs: the engine's
// host_overhead_per_step_per_tp_worker_s for each worker beyond the first (vLLM 0.5.x's driver
// broadcasts every step's inputs to its workers before any of them can launch). The one place the
// term is applied (the simulator and `servesim step`).
inline void apply_tp_workers(LaunchConfig& launch, std::int64_t tp) {
  if (tp > 1) launch.host_overhead_per_step_s += static_cast<double>(tp - 1) * launch.host_overhead_per_step_per_tp_worker_s;
}

}  // namespace servesim
