// Engine profile parsing; see sim/config/engine_profile.hpp for the meaning of each field.
#include "sim/io/engine_io.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

#include "sim/io/data_paths.hpp"
#include "sim/io/increasing_sizes.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {
constexpr const char* kArchitectures[] = {"ampere", "ada", "hopper", "blackwell"};
constexpr const char* kArchitectureNames = "ampere, ada, hopper or blackwell";

bool is_architecture(const std::string& name) {
  return std::find_if(std::begin(kArchitectures), std::end(kArchitectures), [&](const char* a) { return name == a; }) !=
         std::end(kArchitectures);
}

int kernel_count(JsonReader& r, const std::string& key, int lo, int hi, int fallback) {
  if (!r.has(key)) return fallback;
  const std::int64_t v = r.integer(key);
  if (v < lo || v > hi) r.fail(key, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

// fused_fp8_input_quant: a list of distinct GEMM-input names (qkv, o_proj, gate_up, down) whose
// FP8 quantization the engine writes from the producing kernel. "down" needs the one fused
// activation kernel (act_kernels 1) that would write it.
unsigned parse_fused_input_quant(JsonReader& k, const KernelPlan& kp) {
  const std::string key = "fused_fp8_input_quant";
  if (!k.has(key)) return 0;
  const auto& a = k.raw(key);
  const std::string names = "must be an array of distinct names from qkv, o_proj, gate_up, down";
  if (!a.is_array()) k.fail(key, names);
  unsigned sites = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!a[i].is_string()) k.fail(at, names);
    const std::string name = a[i].get<std::string>();
    unsigned bit = 0;
    for (InputQuantSite s : kInputQuantSites) {
      if (name == input_quant_site_name(s)) bit = static_cast<unsigned>(s);
    }
    if (bit == 0) k.fail(at, names + ", got '" + name + "'");
    if (sites & bit) k.fail(at, "'" + name + "' is listed twice");
    sites |= bit;
  }
  if ((sites & static_cast<unsigned>(InputQuantSite::down)) && kp.act_kernels != 1) {
    k.fail(key, "down needs act_kernels 1 (the fused activation kernel writes the quantized input), got " +
                    std::to_string(kp.act_kernels));
  }
  return sites;
}

// chunked_attention_decode_per_query_head: the distinct GPU architectures on which the engine
// decodes chunked-attention layers with one program per query head.
std::vector<std::string> parse_architecture_list(JsonReader& k, const std::string& key) {
  std::vector<std::string> out;
  if (!k.has(key)) return out;
  const auto& a = k.raw(key);
  const std::string names = std::string("must be an array of distinct GPU architectures: ") + kArchitectureNames;
  if (!a.is_array()) k.fail(key, names);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!a[i].is_string()) k.fail(at, names);
    const std::string name = a[i].get<std::string>();
    if (!is_architecture(name)) k.fail(at, names + ", got '" + name + "'");
    if (std::find(out.begin(), out.end(), name) != out.end()) k.fail(at, "'" + name + "' is listed twice");
    out.push_back(name);
  }
  return out;
}

// moe_token_tile_rows: {"ARCHITECTURE": ROWS, ...}, the smallest token tile of the engine's grouped
// (MoE) GEMMs on GPUs of that architecture: 8, 16, 32, 64 or 128 rows (tiles of it times a power
// of two up to 128).
std::vector<std::pair<std::string, int>> parse_moe_token_tiles(JsonReader& k) {
  std::vector<std::pair<std::string, int>> out;
  JsonReader t = k.object("moe_token_tile_rows");
  for (const auto& item : t.json().items()) {
    const std::string arch = item.key();
    if (!is_architecture(arch)) t.fail(arch, std::string("must be a GPU architecture: ") + kArchitectureNames);
    const double value = t.number_in_or(arch, 8.0, 128.0, 128.0);
    const int rows = static_cast<int>(value);
    if (static_cast<double>(rows) != value || (rows != 8 && rows != 16 && rows != 32 && rows != 64 && rows != 128)) {
      t.fail(arch, "must be 8, 16, 32, 64 or 128");
    }
    out.emplace_back(arch, rows);
  }
  t.finish();
  return out;
}

// kernels_per_layer: how many kernels each part of a layer launches, and how fast the
// engine's own kernels run against the profile's; `chunked_archs` receives the architectures of
// chunked_attention_decode_per_query_head, `moe_tiles` the entries of moe_token_tile_rows.
KernelPlan parse_kernel_plan(JsonReader k, std::vector<std::string>& chunked_archs, std::vector<std::pair<std::string, int>>& moe_tiles) {
  KernelPlan kp;
  kp.qkv_gemms = kernel_count(k, "qkv_gemms", 1, 3, 1);
  kp.gate_up_gemms = kernel_count(k, "gate_up_gemms", 1, 2, 1);
  kp.norm_kernels = kernel_count(k, "norm_kernels", 1, 32, 1);
  kp.fused_add_norm = k.boolean_or("fused_add_norm", false);
  kp.rope_kernels = kernel_count(k, "rope_kernels", 0, 32, 1);
  kp.kv_write_kernels = kernel_count(k, "kv_write_kernels", 0, 8, 1);
  kp.qk_norm_kernels = kernel_count(k, "qk_norm_kernels", 0, 8, 0);
  kp.attention_kernels = kernel_count(k, "attention_kernels", 1, 8, 1);
  kp.act_kernels = kernel_count(k, "act_kernels", 0, 4, 1);
  kp.kv_cache_concat = k.boolean_or("kv_cache_concat", false);
  kp.extra_kernels_per_layer = kernel_count(k, "extra_kernels", 0, 64, 0);
  kp.sampler_kernels = kernel_count(k, "sampler_kernels", 1, 64, 1);
  kp.elementwise_bw_frac = k.number_in_or("elementwise_bw_frac", 0.05, 1.0, 1.0);
  kp.packed_attention_compute_frac = k.number_in_or("packed_attention_compute_frac", 0.01, 2.0, 1.0);
  kp.prefill_attention_peak_frac = k.number_in_or("prefill_attention_peak_frac", 0.0, 1.0, 0.0);
  if (k.has("attention_impl")) {
    const std::string impl = k.string("attention_impl");
    bool known = false;
    for (std::size_t i = 0; i < kAttentionKernels; ++i) {
      if (impl == attention_kernel_name(static_cast<AttentionKernel>(i))) {
        kp.attention_kernel = static_cast<AttentionKernel>(i);
        known = true;
      }
    }
    if (!known) k.fail("attention_impl", "must be standard, sdpa or sdpa_packed, got '" + impl + "'");
  }
  kp.decode_attention_per_query_head = k.boolean_or("decode_attention_per_query_head", false);
  chunked_archs = parse_architecture_list(k, "chunked_attention_decode_per_query_head");
  if (k.has("moe_token_tile_rows")) moe_tiles = parse_moe_token_tiles(k);
  kp.moe_route_kernels = kernel_count(k, "moe_route_kernels", 1, 64, kp.moe_route_kernels);
  kp.moe_permute_kernels = kernel_count(k, "moe_permute_kernels", 0, 16, kp.moe_permute_kernels);
  if (k.has("attention_dp_moe_comm")) {
    const std::string comm = k.string("attention_dp_moe_comm");
    if (comm != "all_to_all" && comm != "allgather_reducescatter") {
      k.fail("attention_dp_moe_comm", "must be all_to_all or allgather_reducescatter, got '" + comm + "'");
    }
    kp.moe_dp_allgather = comm == "allgather_reducescatter";
  }
  kp.fused_fp8_input_quant = parse_fused_input_quant(k, kp);
  kp.custom_allreduce_max_bytes = k.number_in_or("custom_allreduce_max_bytes", 0.0, 1e12, 0.0);
  k.finish();
  return kp;
}

// cuda_graphs: whether decode steps run as graphs, and the batch sizes captured; `mode`
// full_and_piecewise (vLLM V1) also runs mixed batches from graphs, sizes counted in tokens;
// batch_sizes "vllm-v1" is V1's capture list, resolved from the scenario's limits.
void parse_cuda_graphs(JsonReader g, EngineProfile& p) {
  p.launch.cuda_graphs = g.boolean("decode");
  const std::string mode = g.string_or("mode", "decode");
  if (mode == "full_and_piecewise") {
    p.cuda_graph_mode = CudaGraphMode::full_and_piecewise;
  } else if (mode != "decode") {
    g.fail("mode", "must be decode or full_and_piecewise, got '" + mode + "'");
  }
  if (g.has("batch_sizes") && g.raw("batch_sizes").is_string()) {
    if (g.string("batch_sizes") != "vllm-v1") g.fail("batch_sizes", "must be an array of sizes or \"vllm-v1\"");
    p.vllm_v1_capture_sizes = true;
  } else if (g.has("batch_sizes")) {
    const auto& a = g.raw("batch_sizes");
    if (!a.is_array()) g.fail("batch_sizes", "must be an array of increasing positive integers or \"vllm-v1\"");
    const std::size_t bad = read_increasing_sizes(a, std::numeric_limits<std::int64_t>::max(), p.cuda_graph_batch_sizes);
    if (bad < a.size()) g.fail("batch_sizes[" + std::to_string(bad) + "]", "must be an increasing positive integer");
  }
  g.finish();
}

// host: CPU time per step, per sequence and per extra tensor-parallel worker, whether it
// overlaps the GPU, and the front end's latency per request.
void parse_host(JsonReader h, LaunchConfig& launch, double& frontend_latency_s) {
  frontend_latency_s = h.number_in_or("frontend_latency_s", 0.0, 10.0, 0.0);
  launch.host_overhead_per_step_s = h.number_in("overhead_per_step_s", 0.0, 10.0);
  launch.host_overhead_per_decode_step_s = h.number_in_or("overhead_per_decode_step_s", 0.0, 10.0, 0.0);
  launch.host_overhead_per_seq_s = h.number_in("overhead_per_seq_s", 0.0, 1.0);
  launch.host_overhead_per_step_per_tp_worker_s = h.number_in_or("overhead_per_step_per_tp_worker_s", 0.0, 1.0, 0.0);
  launch.overlap_host = h.boolean_or("overlap_with_gpu", false);
  launch.dispatch_s_per_kernel = h.number_in_or("dispatch_s_per_kernel", 0.0, 1.0, 0.0);
  h.finish();
}

// gpu_sized: the token budget and sequence limit an engine picks on large GPUs.
GpuSizedDefaults parse_gpu_sized(JsonReader g) {
  GpuSizedDefaults d;
  d.min_memory_bytes = g.number_in("min_memory_bytes", 1.0, 1e15);
  if (g.has("except_architectures")) {
    const auto& a = g.raw("except_architectures");
    if (!a.is_array()) g.fail("except_architectures", "must be an array of architecture names");
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) g.fail("except_architectures[" + std::to_string(i) + "]", "must be an architecture name");
      d.except_architectures.push_back(a[i].get<std::string>());
    }
  }
  d.max_num_batched_tokens = g.positive_integer("max_num_batched_tokens");
  d.max_num_seqs = g.positive_integer("max_num_seqs");
  g.finish();
  return d;
}

// defaults: the scenario settings the engine brings (policy, KV cache, block size).
void parse_defaults(JsonReader d, EngineProfile& p) {
  p.scheduler = d.string("scheduler");
  p.kv_cache = d.string("kv_cache");
  if (p.kv_cache != "paged" && p.kv_cache != "radix" && p.kv_cache != "token" && p.kv_cache != "contiguous") {
    d.fail("kv_cache", "must be paged, radix, token or contiguous");
  }
  p.block_size = d.positive_integer("block_size");
  if (d.has("max_num_batched_tokens")) p.max_num_batched_tokens = d.positive_integer("max_num_batched_tokens");
  if (d.has("max_num_seqs")) p.max_num_seqs = d.positive_integer("max_num_seqs");
  if (auto g = d.object_if("gpu_sized")) p.gpu_sized = parse_gpu_sized(std::move(*g));
  p.enable_prefix_caching = d.boolean_or("enable_prefix_caching", false);
  if (p.enable_prefix_caching && p.kv_cache != "paged") d.fail("enable_prefix_caching", "needs kv_cache paged");
  if (d.has("kv_cache_windowed_layers")) {
    const std::string w = d.string("kv_cache_windowed_layers");
    const auto parsed = parse_kv_windowed_layers(w);
    if (!parsed) d.fail("kv_cache_windowed_layers", "must be window or full, got '" + w + "'");
    p.kv_windowed_layers = *parsed;
  }
  p.watermark_frac = d.number_in_or("watermark_frac", 0.0, 0.5, -1.0);
  p.async_scheduling = d.boolean_or("async_scheduling", false);
  d.finish();
  if (p.async_scheduling) p.launch.overlap_host = true;
}

// quant_kernels: {"ARCHITECTURE": {"SCHEME": "KERNEL", ...}, ...}, the GEMM kernel the engine runs
// for each quantization scheme on GPUs of that architecture (QuantKernel names). moe_quant_kernels
// (`grouped`), the same for the routed experts' grouped GEMMs: only the MoE kernels there
// (moe_only_kernel), and none of them among the dense ones.
std::vector<QuantKernelChoice> parse_quant_kernels(JsonReader q, bool grouped) {
  std::vector<QuantKernelChoice> out;
  for (const auto& [key, schemes] : q.json().items()) {
    const std::string arch = key;  // a copy: clang 14 does not capture structured bindings
    if (!is_architecture(arch)) q.fail(arch, std::string("must be a GPU architecture: ") + kArchitectureNames);
    JsonReader by_scheme = q.object(arch);
    QuantKernelChoice c{arch, {}};
    for (const auto& [scheme_name, kernel_json] : schemes.items()) {
      const auto scheme = parse_quant(scheme_name);
      if (!scheme || *scheme == QuantScheme::none) by_scheme.fail(scheme_name, std::string("must be a quantization scheme: ") + kQuantNames);
      const std::string name = by_scheme.string(scheme_name);
      const auto kernel = parse_quant_kernel(name);
      if (!kernel || *kernel == QuantKernel::auto_) {
        std::string names;
        for (std::size_t i = 1; i < kNumQuantKernels; ++i) names += std::string(i > 1 ? ", " : "") + quant_kernel_name(static_cast<QuantKernel>(i));
        by_scheme.fail(scheme_name, "unknown kernel '" + name + "' (" + names + ")");
      }
      if (grouped && !moe_only_kernel(*kernel)) {
        std::string names;
        for (std::size_t i = 1; i < kNumQuantKernels; ++i) {
          if (moe_only_kernel(static_cast<QuantKernel>(i))) names += std::string(names.empty() ? "" : ", ") + quant_kernel_name(static_cast<QuantKernel>(i));
        }
        by_scheme.fail(scheme_name, "kernel '" + name + "' is a dense GEMM kernel, not a grouped (MoE) one (" + names + ")");
      }
      if (!grouped && moe_only_kernel(*kernel)) by_scheme.fail(scheme_name, "kernel '" + name + "' runs grouped (MoE) GEMMs only: name it under moe_quant_kernels");
      if (!kernel_runs_scheme(*kernel, *scheme)) by_scheme.fail(scheme_name, "kernel '" + name + "' does not run " + scheme_name + " GEMMs");
      c.kernels[static_cast<std::size_t>(*scheme)] = *kernel;
    }
    by_scheme.finish();
    out.push_back(c);
  }
  q.finish();
  return out;
}

}  // namespace

EngineProfile parse_engine_profile(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file, "");
  EngineProfile p;
  r.accept("schema");
  r.accept("description");
  r.accept("sources");  // free-form documentation of every number, kept in the file
  r.accept("provenance");  // a fitted profile's: the command, date and runs (servesim calibrate engine)
  p.name = r.string("name");
  p.display_name = r.string_or("display_name", p.name);
  p.kernels = parse_kernel_plan(r.object("kernels_per_layer"), p.chunked_decode_per_query_head_architectures, p.moe_token_tile_rows);
  parse_cuda_graphs(r.object("cuda_graphs"), p);
  parse_host(r.object("host"), p.launch, p.frontend_latency_s);
  parse_defaults(r.object("defaults"), p);
  if (auto c = r.object_if("cold_start")) {
    p.cold_start.cuda_context_s = c->number_in_or("cuda_context_s", 0.0, 600.0, p.cold_start.cuda_context_s);
    p.cold_start.framework_init_s = c->number_in_or("framework_init_s", 0.0, 3600.0, 0.0);
    p.cold_start.graph_capture_s_per_batch_size = c->number_in_or("graph_capture_s_per_batch_size", 0.0, 60.0, 0.0);
    c->finish();
  }
  if (auto q = r.object_if("quant_kernels")) p.quant_kernels = parse_quant_kernels(std::move(*q), false);
  if (auto q = r.object_if("moe_quant_kernels")) p.moe_quant_kernels = parse_quant_kernels(std::move(*q), true);
  if (r.has("kv_cache_dtypes")) {
    p.kv_cache_dtypes.emplace();
    const nlohmann::json& list = r.raw("kv_cache_dtypes");
    if (!list.is_array()) r.fail("kv_cache_dtypes", "must be a list of KV cache dtypes (fp8, int8, int4)");
    for (const nlohmann::json& d : list) {
      const auto kv = d.is_string() ? parse_kv_cache_dtype(d.get<std::string>(), Dtype::bf16) : std::nullopt;
      if (!kv || *kv == Dtype::bf16) r.fail("kv_cache_dtypes", "must list fp8, int8 or int4, got " + d.dump());
      p.kv_cache_dtypes->push_back(*kv);
    }
  }
  r.finish();
  return p;
}

EngineProfile load_engine_profile(const std::string& ref, const std::string& file, const std::string& key) {
  const std::string path = resolve_data_ref("scenarios/engines", ref, file, key);
  return parse_engine_profile(load_json_file(path), path);
}

nlohmann::json engine_profile_summary(const EngineProfile& p) {
  nlohmann::json out = {{"name", p.name.empty() ? "none" : p.name},
          {"display_name", p.display_name},
          {"default_scheduler", p.scheduler},
          {"kv_cache", p.kv_cache},
          {"cuda_graph_batch_sizes", p.cuda_graph_batch_sizes}};
  if (p.cuda_graph_mode == CudaGraphMode::full_and_piecewise) out["cuda_graph_mode"] = "full_and_piecewise";
  if (p.async_scheduling) out["async_scheduling"] = true;
  // Only when not the default: reports of other engines keep their bytes.
  if (p.kv_windowed_layers != KvWindowedLayers::window) out["kv_cache_windowed_layers"] = kv_windowed_layers_name(p.kv_windowed_layers);
  if (p.kernels.custom_allreduce_max_bytes > 0.0) out["custom_allreduce_max_bytes"] = p.kernels.custom_allreduce_max_bytes;
  // The quantized GEMM kernels resolved for the run's GPU (schemes the profile names only).
  for (std::size_t q = 0; q < kNumQuantSchemes; ++q) {
    const QuantKernel k = p.kernels.quant_kernels[q];
    if (k != QuantKernel::auto_) out["quant_kernels"][quant_name(static_cast<QuantScheme>(q))] = quant_kernel_name(k);
  }
  return out;
}

}  // namespace servesim
