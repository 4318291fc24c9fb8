// Hardware profile parsing: datasheet peaks, efficiency tables (checked increasing in size,
// fractions in (0, 1]), the measured tables (inline or in the tables file the profile names) and
// provenance.
#include "sim/io/hw_io.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

// Plausible hardware bounds, decades around every GPU profiled (a T4 to a GB200): a value outside
// them is a typo or a unit slip (bytes for GB, ms for s), and would give finite nonsense (a TTFT
// of 1 ns, a GPU busy 1e12 times over) rather than an error.
constexpr double kMinFlopsPerS = 1e9, kMaxFlopsPerS = 1e18;        // also dequantised weights per s
constexpr double kMinLinkBytesPerS = 1e8, kMaxLinkBytesPerS = 1e14;  // PCIe, NVLink, network
constexpr double kMaxLinkLatencyS = 1e-2;
constexpr double kMinLaunchS = 1e-9, kMaxLaunchS = 1e-3;  // per-kernel launch and overhead costs

namespace {

constexpr const char* kTablesSchema = "servesim-hwtables/1";

EfficiencyTable parse_table(JsonReader& r, const std::string& key) {
  const auto& j = r.raw(key);
  if (!j.is_array() || j.empty()) r.fail(key, "must be a non-empty array of [size, fraction] pairs");
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& p = j[i];
    const std::string where = key + "[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
      r.fail(where, "must be a [size, fraction] pair of numbers");
    }
    const double x = p[0].get<double>(), y = p[1].get<double>();
    if (!(x > 0.0) || !std::isfinite(x)) r.fail(where, "size must be finite and > 0");
    if (!(y > 0.0 && y <= 1.0)) r.fail(where, "fraction must be in (0, 1]");
    if (!points.empty() && x <= points.back().first) r.fail(where, "sizes must increase");
    points.emplace_back(x, y);
  }
  return EfficiencyTable(std::move(points));
}

std::vector<double> positive_list(JsonReader& r, const std::string& key) {
  const auto& j = r.raw(key);
  if (!j.is_array() || j.empty()) r.fail(key, "must be a non-empty array of numbers");
  std::vector<double> out;
  for (const auto& v : j) {
    if (!v.is_number() || !(v.get<double>() > 0.0)) r.fail(key, "must hold numbers > 0");
    if (!out.empty() && v.get<double>() <= out.back()) r.fail(key, "must increase");
    out.push_back(v.get<double>());
  }
  return out;
}

// A GEMM table in columns: {"m": [m, ...], "shapes": [[n, k, frac at m[0], frac at m[1], ...], ...]},
// one row per calibrated weight shape; null where the shape has no point at that m, and a row may
// end early (shapes measured over fewer m share the grid's start).
GemmTable parse_gemm_columns(JsonReader r) {
  const std::vector<double> m = positive_list(r, "m");
  const auto& rows = r.raw("shapes");
  if (!rows.is_array() || rows.empty()) r.fail("shapes", "must be a non-empty array of [n, k, frac...] rows");
  std::vector<GemmShapeCurve> shapes;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const std::string where = "shapes[" + std::to_string(i) + "]";
    if (!row.is_array() || row.size() < 3 || row.size() > m.size() + 2) {
      r.fail(where, "must be [n, k, then one fraction per m (at most " + std::to_string(m.size()) + ")]");
    }
    if (!row[0].is_number() || !row[1].is_number() || !(row[0].get<double>() > 0.0) || !(row[1].get<double>() > 0.0)) {
      r.fail(where, "n and k must be numbers > 0");
    }
    // The cells through the array itself, each converted once: a100-80gb-sxm's tables have ~72k
    // (nlohmann's checked operator[] and get<double>() three times a cell were ~3M instructions).
    const auto& cells = row.get_ref<const nlohmann::json::array_t&>();
    std::vector<std::pair<double, double>> points;
    points.reserve(cells.size() - 2);
    for (std::size_t j = 2; j < cells.size(); ++j) {
      const nlohmann::json& cell = cells[j];
      if (cell.is_null()) continue;
      const double frac = cell.is_number() ? cell.get<double>() : std::numeric_limits<double>::quiet_NaN();
      if (!(frac > 0.0 && frac <= 1.0)) r.fail(where, "fractions must be in (0, 1] (null: not measured at that m)");
      points.emplace_back(m[j - 2], frac);
    }
    if (points.empty()) r.fail(where, "has no measured fraction");
    shapes.push_back({row[0].get<double>(), row[1].get<double>(), EfficiencyTable(std::move(points))});
  }
  r.finish();
  return GemmTable(std::move(shapes));
}

// A grid {x_key: [...], y_key: [...], values_key: [one row per x value, one value per y value]},
// bilinear in the logs (LogGrid2D), its values in [lo, hi] (`lo_open`: (lo, hi]); `range` is how
// messages write that interval.
LogGrid2D parse_log_grid(JsonReader& r, const std::string& x_key, const std::string& y_key, const std::string& values_key, double lo,
                         bool lo_open, double hi, const std::string& range) {
  std::vector<double> xs = positive_list(r, x_key);
  std::vector<double> ys = positive_list(r, y_key);
  const auto& rows = r.raw(values_key);
  if (!rows.is_array() || rows.size() != xs.size()) r.fail(values_key, "must have one row per " + x_key + " value");
  std::vector<double> values;
  for (const auto& row : rows) {
    if (!row.is_array() || row.size() != ys.size()) r.fail(values_key, "each row must have one value per " + y_key.substr(0, y_key.find('_')));
    for (const auto& v : row) {
      const double x = v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
      if (!((lo_open ? x > lo : x >= lo) && x <= hi)) r.fail(values_key, "values must be in " + range);
      values.push_back(x);
    }
  }
  r.finish();
  return LogGrid2D(std::move(xs), std::move(ys), std::move(values));
}

// A decode-attention grid {"kv_head_tokens", "context_tokens", "frac": one row per kv_head_tokens}.
LogGrid2D parse_decode_grid(JsonReader& attn) {
  return parse_log_grid(attn, "kv_head_tokens", "context_tokens", "frac", 0.0, true, 1.0, "(0, 1]");
}

// One attention kernel family: {"decode", "prefill_compute_frac_by_flops", "source", and
// optionally "head_dim" (what the decode grid was measured at) with "other_head_dims": {"96":
// {"decode"}, ...}}.
HwProfile::AttentionKernelTables parse_attention_tables(JsonReader& f) {
  HwProfile::AttentionKernelTables t;
  JsonReader decode = f.object("decode");
  t.decode_frac = parse_decode_grid(decode);
  t.prefill_compute_frac_by_flops = parse_table(f, "prefill_compute_frac_by_flops");
  t.source = f.string_or("source", "");
  t.head_dim = f.integer_in_or("head_dim", 1, 1024, 0);
  if (f.has("prefill_head_dim_tiles")) {
    const auto& tiles = f.raw("prefill_head_dim_tiles");
    if (!tiles.is_array()) f.fail("prefill_head_dim_tiles", "must be an array of increasing head dimensions (1-1024)");
    for (const auto& v : tiles) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1024 ||
          (!t.prefill_head_dim_tiles.empty() && v.get<std::int64_t>() <= t.prefill_head_dim_tiles.back())) {
        f.fail("prefill_head_dim_tiles", "must be an array of increasing head dimensions (1-1024)");
      }
      t.prefill_head_dim_tiles.push_back(v.get<std::int64_t>());
    }
  }
  if (auto others = f.object_if("other_head_dims")) {
    if (t.head_dim == 0) f.fail("other_head_dims", "needs \"head_dim\": the head dimension of the decode grid above");
    for (const auto& [key, value] : others->json().items()) {
      std::int64_t d = 0;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), d);
      if (ec != std::errc() || end != key.data() + key.size() || d < 1 || d > 1024 || d == t.head_dim) {
        others->fail(key, "must be a head dimension (an integer 1-1024 other than head_dim)");
      }
      JsonReader one = others->object(key);
      JsonReader one_decode = one.object("decode");
      t.other_head_dims.push_back({d, parse_decode_grid(one_decode)});
      one.finish();
    }
    others->finish();
  }
  f.finish();
  return t;
}

// calibration.quant_kernels: {"KERNEL": {"FORMAT": {"m", "shapes", "launches", "source"}}}, the
// measured quantized GEMM kernels an engine profile can name (QuantKernel), per weight/activation
// format; or {"memory_frac_vs_dense", "source"} for a kernel timed by a published benchmark.
void parse_quant_kernel_tables(JsonReader kernels, HwProfile& hw) {
  for (const auto& [name, formats] : kernels.json().items()) {
    const auto k = parse_quant_kernel(name);
    if (!k || *k == QuantKernel::auto_) kernels.fail(name, "is not a quantized GEMM kernel servesim knows");
    JsonReader by_format = kernels.object(name);
    for (std::size_t f = 0; f < kNumQuantFormats; ++f) {
      auto t = by_format.object_if(kQuantFormatNames[f]);
      if (!t) continue;
      HwProfile::QuantKernelTable& table = hw.quant_kernel_tables[static_cast<std::size_t>(*k)][f];
      table.launches = static_cast<int>(t->integer_in_or("launches", 1, 16, 1));
      table.source = t->string_or("source", "");
      if (t->has("memory_frac_vs_dense")) {
        // A published benchmark of a kernel not measured here: one rate, no table.
        table.memory_frac_vs_dense = t->number_in("memory_frac_vs_dense", 0.01, 1.0);
        t->finish();
      } else {
        table.frac = parse_gemm_columns(*t);
      }
    }
    by_format.finish();
  }
  kernels.finish();
}

// calibration.attention_decode_kv: {"kernel": "standard", "time_over_bf16": {"fp8", "int8", "int4"},
// "points", "source"}, written by `servesim calibrate kv-decode`.
void parse_kv_decode_ratios(JsonReader kv, HwProfile& hw) {
  if (kv.string_or("kernel", "standard") != "standard") kv.fail("kernel", "must be \"standard\" (the CUDA-core paged kernel measured)");
  JsonReader by_format = kv.object("time_over_bf16");
  HwProfile::KvDecodeRatios& k = hw.kv_decode_time_over_bf16;
  for (const auto& [key, value] : {std::pair<const char*, double*>{"fp8", &k.fp8}, {"int8", &k.int8}, {"int4", &k.int4}}) {
    if (by_format.has(key)) *value = by_format.number_in(key, 0.1, 10.0);
  }
  by_format.finish();
  kv.accept("points");
  k.source = kv.string_or("source", "");
  kv.finish();
}

// calibration.attention_decode_per_query_head: {"form", "kv_heads", "time_over_grouped": {"bf16"|"fp8":
// {"GROUP": {"batch": [...], "context": [...], "ratio": [[one per context] per batch]}}}, "points",
// "gpu", "date", "file", "command", "fitted_by", "source"}, written by `servesim calibrate
// decode-per-query-head`: the per-query-head kernel's time over the grouped kernel's.
void parse_decode_per_query_head(JsonReader t, HwProfile& hw) {
  HwProfile::DecodePerQueryHead& d = hw.decode_per_query_head;
  d.kv_heads = static_cast<double>(t.integer_in("kv_heads", 1, 1024));
  JsonReader by_format = t.object("time_over_grouped");
  for (const auto& [format, grids] : by_format.json().items()) {
    const std::string name = format;  // a copy: clang 14 does not capture structured bindings
    if (name != "bf16" && name != "fp8") by_format.fail(name, "must be a KV cache format: bf16 (16-bit) or fp8");
    JsonReader by_group = by_format.object(name);
    std::vector<HwProfile::DecodePerQueryHead::Grid>& out = d.by_format[name == "bf16" ? 0 : 1];
    for (const auto& [key, grid] : by_group.json().items()) {
      int group = 0;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), group);
      if (ec != std::errc() || end != key.data() + key.size() || group < 2 || group > 128) {
        by_group.fail(key, "must be a group size: query heads per KV head, an integer 2-128");
      }
      JsonReader g = by_group.object(key);
      out.push_back({group, parse_log_grid(g, "batch", "context", "ratio", 0.1, false, 20.0, "[0.1, 20]")});
    }
    by_group.finish();
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.group < b.group; });
  }
  by_format.finish();
  if (d.empty()) t.fail("time_over_grouped", "has no group of either format");
  d.source = t.string_or("source", "");
  for (const char* key : {"form", "points", "gpu", "date", "file", "command", "fitted_by"}) t.accept(key);
  t.finish();
}

// "calibration.grouped_gemm": the measured grouped (MoE) GEMM kernels against their dense
// equivalents (`servesim calibrate grouped-gemm`, with --fp8 for the fp8 kernel's own table).
void parse_grouped_gemm(JsonReader g, HwProfile& hw) {
  // Relative to the dense-equivalent model, so values above 1 are allowed (up to 4). Either
  // table may be absent, not both: fp8_frac_by_tokens_per_expert is the fp8 kernel's alone.
  const auto table = [&g](const char* key) {
    const auto& j = g.raw(key);
    if (!j.is_array() || j.empty()) g.fail(key, "must be a non-empty array of [tokens, frac] pairs");
    std::vector<std::pair<double, double>> points;
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
      if (!j[i].is_array() || j[i].size() != 2 || !j[i][0].is_number() || !j[i][1].is_number()) {
        g.fail(where, "must be a [tokens, frac] pair of numbers");
      }
      const double x = j[i][0].get<double>(), y = j[i][1].get<double>();
      if (!(x > 0.0) || !std::isfinite(x)) g.fail(where, "tokens must be finite and > 0");
      if (!(y > 0.0 && y <= 4.0)) g.fail(where, "frac must be in (0, 4]");
      if (!points.empty() && x <= points.back().first) g.fail(where, "tokens must increase");
      points.emplace_back(x, y);
    }
    return EfficiencyTable(std::move(points));
  };
  if (!g.has("frac_by_tokens_per_expert") && !g.has("fp8_frac_by_tokens_per_expert")) {
    g.fail("frac_by_tokens_per_expert", "must be a non-empty array of [tokens, frac] pairs");
  }
  if (g.has("frac_by_tokens_per_expert")) hw.grouped_gemm_frac_by_tokens_per_expert = table("frac_by_tokens_per_expert");
  if (g.has("fp8_frac_by_tokens_per_expert")) hw.grouped_gemm_fp8_frac_by_tokens_per_expert = table("fp8_frac_by_tokens_per_expert");
  // The kernel's fixed time per launch, measured with its table (up to 1 ms: a launch's setup,
  // not a GEMM).
  const auto fixed = [&g](const char* key, const char* table_key) {
    if (!g.has(key)) return 0.0;
    if (!g.has(table_key)) g.fail(key, std::string("needs ") + table_key + " (it was fitted with that table)");
    return g.number_in(key, 0.0, 1e-3);
  };
  hw.grouped_gemm_fixed_s = fixed("fixed_s", "frac_by_tokens_per_expert");
  hw.grouped_gemm_fp8_fixed_s = fixed("fp8_fixed_s", "fp8_frac_by_tokens_per_expert");
  g.accept("kernel");
  g.accept("fitted_on");
  g.accept("held_out");
  g.accept("command");
  g.accept("fp8_kernel");
  g.accept("fp8_fitted_on");
  g.accept("fp8_skipped_tokens");
  g.accept("fp8_command");
  g.accept("fixed_fitted_on");
  g.accept("fp8_fixed_fitted_on");
  g.finish();
}

// "calibration": measured tables written by `servesim calibrate fit|vidur|independent` (all optional).
void parse_calibration(JsonReader r, HwProfile& hw) {
  if (auto gemm = r.object_if("gemm")) {
    // A dtype's table, or the name of the dtype whose table it shares ("bf16": "fp16": vidur
    // measured fp16 only, and the kernels are the same).
    std::vector<std::pair<Dtype, std::string>> aliases;
    for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8}) {
      const std::string key = dtype_name(d);
      if (!gemm->has(key)) {
        gemm->accept(key);
      } else if (gemm->raw(key).is_string()) {
        aliases.emplace_back(d, gemm->raw(key).get<std::string>());
      } else {
        hw.gemm_tables[static_cast<std::size_t>(d)] = parse_gemm_columns(gemm->object(key));
      }
    }
    for (const auto& [d, target] : aliases) {
      const auto t = parse_dtype(target);
      if (!t || !gemm->has(target) || !gemm->raw(target).is_object()) {
        gemm->fail(dtype_name(d), "names '" + target + "', which has no table of its own here");
      }
      hw.gemm_tables[static_cast<std::size_t>(d)] = hw.gemm_tables[static_cast<std::size_t>(*t)];
    }
    gemm->finish();
  }
  if (auto quant = r.object_if("quant_gemm")) {
    for (const auto& [key, bits] : {std::pair<const char*, int>{"w4a16", 4}, {"w8a16", 8}}) {
      auto scheme = quant->object_if(key);
      if (!scheme) continue;
      HwProfile::WeightOnlyTables& t = hw.weight_only_tables[bits <= 4 ? 0 : 1];
      if (auto fused = scheme->object_if("fused")) {
        t.fused = parse_gemm_columns(*fused);
        for (const auto& c : t.fused.shapes()) t.fused_max_m = std::max(t.fused_max_m, c.frac_by_m.points().back().first);
      }
      if (auto dq = scheme->object_if("dequant_gemm")) t.dequant_gemm = parse_gemm_columns(*dq);
      scheme->finish();
    }
    quant->finish();
  }
  if (auto kernels = r.object_if("quant_kernels")) parse_quant_kernel_tables(std::move(*kernels), hw);
  if (auto attn = r.object_if("attention_decode")) hw.attention_decode_frac = parse_decode_grid(*attn);
  if (auto kv = r.object_if("attention_decode_kv")) parse_kv_decode_ratios(std::move(*kv), hw);
  if (auto pqh = r.object_if("attention_decode_per_query_head")) parse_decode_per_query_head(std::move(*pqh), hw);
  if (auto families = r.object_if("attention_kernels")) {
    for (std::size_t i = 1; i < kAttentionKernels; ++i) {
      const char* name = attention_kernel_name(static_cast<AttentionKernel>(i));
      auto f = families->object_if(name);
      if (!f) continue;
      hw.attention_kernel_tables[i] = parse_attention_tables(*f);
    }
    families->finish();
  }
  if (auto g = r.object_if("grouped_gemm")) parse_grouped_gemm(std::move(*g), hw);
  if (auto c = r.object_if("contention")) {
    hw.contention_copy_copy_slowdown = c->number_in("copy_copy_slowdown", 1.0, 100.0);
    hw.contention_gemm_copy_slowdown = c->number_in("gemm_copy_slowdown", 1.0, 100.0);
    c->finish();
  }
  r.finish();
}

// Defaults when a profile has no "interconnect" object (or leaves out a key). NVLink: the vidur
// DGX fits (tests/validation/test_interconnect.cpp) reached a bus bandwidth of 0.61x (H100) and
// 0.45x (A100) the datasheet per-GPU NVLink bandwidth and send/recv 0.76x (H100) and 0.93x (A100),
// with 14-22 us all-reduce and 7-12 us send/recv latency; the defaults take the H100 fractions.
// PCIe collectives run at about the profile's effective host-link bandwidth (vidur's bridged-pair
// A100s, 4-GPU all-reduce: 23.5 GB/s over a 25 GB/s link). Node to node: one 200 Gb/s InfiniBand
// HDR port per GPU at 80% (20 GB/s). gpus_per_node defaults to 8, nvlink_domain_gpus to
// gpus_per_node with an "nvlink" link and 1 (no NVLink) without.
constexpr double kNvlinkBusFrac = 0.6, kNvlinkP2pFrac = 0.76, kNvlinkLatencyS = 2e-5, kNvlinkP2pLatencyS = 1e-5;
constexpr double kPcieLatencyS = 3e-5, kPcieP2pLatencyS = 1.5e-5;
constexpr double kInterNodeBytesPerS = 20e9, kInterNodeLatencyS = 5e-5;

LinkModel parse_link(JsonReader r, LinkModel d) {
  d.name = r.string_or("name", d.name);
  d.bus_bandwidth_bytes_per_s = r.number_in_or("bus_bandwidth_bytes_per_s", kMinLinkBytesPerS, kMaxLinkBytesPerS, d.bus_bandwidth_bytes_per_s);
  d.latency_s = r.number_in_or("latency_s", 0.0, kMaxLinkLatencyS, d.latency_s);
  d.p2p_bandwidth_bytes_per_s = r.number_in_or("p2p_bandwidth_bytes_per_s", kMinLinkBytesPerS, kMaxLinkBytesPerS, d.p2p_bandwidth_bytes_per_s);
  d.p2p_latency_s = r.number_in_or("p2p_latency_s", 0.0, kMaxLinkLatencyS, d.p2p_latency_s);
  r.finish();
  return d;
}

MeasuredCollective parse_measured(const nlohmann::json& j, const std::string& file, const std::string& path) {
  JsonReader r(j, file, path);
  MeasuredCollective m;
  const std::string c = r.string("collective");
  if (c == "all_reduce") m.collective = Collective::all_reduce;
  else if (c == "all_gather") m.collective = Collective::all_gather;
  else if (c == "send_recv") m.collective = Collective::send_recv;
  else if (c == "all_to_all") m.collective = Collective::all_to_all;
  else r.fail("collective", "must be all_reduce, all_gather, send_recv or all_to_all, got '" + c + "'");
  m.gpus = static_cast<int>(r.positive_integer("gpus"));
  if (m.gpus < 2 || m.gpus > 4096) r.fail("gpus", "must be in [2, 4096]");
  const std::string scope = r.string("scope");
  if (scope == "nvlink") m.scope = LinkScope::nvlink;
  else if (scope == "pcie") m.scope = LinkScope::pcie;
  else if (scope == "inter_node") m.scope = LinkScope::inter_node;
  else r.fail("scope", "must be nvlink, pcie or inter_node, got '" + scope + "'");
  const std::string algorithm = r.string_or("algorithm", "nccl");
  if (algorithm == "custom") m.custom = true;
  else if (algorithm != "nccl") r.fail("algorithm", "must be nccl or custom, got '" + algorithm + "'");
  const auto& pts = r.raw("bytes_seconds");
  if (!pts.is_array() || pts.empty()) r.fail("bytes_seconds", "must be a non-empty array of [bytes, seconds] pairs");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    const std::string where = "bytes_seconds[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) r.fail(where, "must be a [bytes, seconds] pair of numbers");
    const double b = p[0].get<double>(), t = p[1].get<double>();
    if (!(b > 0.0) || !std::isfinite(b)) r.fail(where, "bytes must be > 0");
    if (!(t > 0.0) || !std::isfinite(t)) r.fail(where, "seconds must be > 0");
    if (!m.bytes_seconds.empty() && b <= m.bytes_seconds.back().first) r.fail(where, "sizes must increase");
    m.bytes_seconds.emplace_back(b, t);
  }
  r.accept("notes");
  r.finish();
  return m;
}

Interconnect parse_interconnect(JsonReader* r, const HwProfile& hw, const std::string& nvlink_name,
                                const std::string& host_link_name) {
  Interconnect ic;
  const bool has_nvlink = hw.nvlink_bytes_per_s > 0.0;
  ic.nvlink = {nvlink_name, kNvlinkBusFrac * hw.nvlink_bytes_per_s, kNvlinkLatencyS,
               kNvlinkP2pFrac * hw.nvlink_bytes_per_s, kNvlinkP2pLatencyS};
  ic.pcie = {host_link_name, hw.host_link_bytes_per_s, kPcieLatencyS, hw.host_link_bytes_per_s, kPcieP2pLatencyS};
  ic.inter_node = {"200 Gb/s per GPU (default)", kInterNodeBytesPerS, kInterNodeLatencyS, kInterNodeBytesPerS, kInterNodeLatencyS};
  ic.provenance = "defaults derived from the datasheet links (sim/io/hw_io.cpp)";
  if (r == nullptr) {
    ic.nvlink_domain_gpus = has_nvlink ? ic.gpus_per_node : 1;
    return ic;
  }
  ic.gpus_per_node = static_cast<int>(r->positive_integer_or("gpus_per_node", ic.gpus_per_node));
  ic.nvlink_domain_gpus = static_cast<int>(r->positive_integer_or("nvlink_domain_gpus", has_nvlink ? ic.gpus_per_node : 1));
  if (ic.nvlink_domain_gpus > 1 && !has_nvlink) r->fail("nvlink_domain_gpus", "needs an \"nvlink\" link in the profile");
  if (ic.nvlink_domain_gpus > ic.gpus_per_node) r->fail("nvlink_domain_gpus", "must be <= gpus_per_node");
  if (auto l = r->object_if("nvlink")) ic.nvlink = parse_link(*l, ic.nvlink);
  if (auto l = r->object_if("pcie")) ic.pcie = parse_link(*l, ic.pcie);
  if (auto l = r->object_if("inter_node")) ic.inter_node = parse_link(*l, ic.inter_node);
  if (r->has("measured")) {
    const auto& arr = r->raw("measured");
    if (!arr.is_array()) r->fail("measured", "must be an array of measured collectives");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      ic.measured.push_back(parse_measured(arr[i], r->file(), r->path_of("measured") + "[" + std::to_string(i) + "]"));
    }
  }
  ic.provenance = r->string_or("provenance", ic.provenance);
  r->finish();
  return ic;
}

Provenance parse_provenance(JsonReader r) {
  Provenance p;
  p.kind = r.string("kind");
  if (p.kind != "derived" && p.kind != "measured") r.fail("kind", "must be \"derived\" or \"measured\"");
  p.method = r.string("method");
  const auto& sources = r.raw("sources");
  if (!sources.is_array()) r.fail("sources", "must be an array of strings");
  for (const auto& s : sources) {
    if (!s.is_string()) r.fail("sources", "must be an array of strings");
    p.sources.push_back(s.get<std::string>());
  }
  p.gpu = r.string_or("gpu", "");
  p.driver = r.string_or("driver", "");
  p.cuda = r.string_or("cuda", "");
  p.date = r.string_or("date", "");
  p.command = r.string_or("command", "");
  r.finish();
  return p;
}

// Peak rates: the fp32 vector rate and each dtype's tensor-core rate (0: no such units).
void parse_peaks(JsonReader& r, HwProfile& hw) {
  JsonReader peaks = r.object("peak_flops_per_s");
  hw.vector_fp32_flops_per_s = peaks.number_in("fp32_vector", kMinFlopsPerS, kMaxFlopsPerS);
  for (Dtype d : {Dtype::fp32, Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8, Dtype::fp4}) {
    const std::string key = dtype_name(d);
    hw.peak_flops_per_s[static_cast<std::size_t>(d)] = peaks.number_in_or(key, kMinFlopsPerS, kMaxFlopsPerS, 0.0);
  }
  peaks.finish();
  if (!hw.supports(Dtype::fp16) && !hw.supports(Dtype::bf16)) r.fail("peak_flops_per_s", "needs fp16 or bf16");
}

// The host link, NVLink when present, and the interconnect built from them (or given).
void parse_links(JsonReader& r, HwProfile& hw) {
  std::string host_link_name, nvlink_name;
  {
    JsonReader link = r.object("host_link");
    host_link_name = link.string_or("name", "PCIe");
    hw.host_link_bytes_per_s = link.number_in("bandwidth_bytes_per_s", kMinLinkBytesPerS, kMaxLinkBytesPerS);
    link.finish();
  }
  if (auto nvlink = r.object_if("nvlink")) {
    nvlink_name = nvlink->string_or("name", "NVLink");
    hw.nvlink_bytes_per_s = nvlink->number_in("bandwidth_bytes_per_s", kMinLinkBytesPerS, kMaxLinkBytesPerS);
    nvlink->finish();
  }
  if (auto ic = r.object_if("interconnect")) {
    hw.interconnect = parse_interconnect(&*ic, hw, nvlink_name, host_link_name);
  } else {
    hw.interconnect = parse_interconnect(nullptr, hw, nvlink_name, host_link_name);
  }
}

void parse_launch(JsonReader& r, HwProfile& hw) {
  JsonReader launch = r.object("launch");
  hw.kernel_launch_s = launch.number_in("kernel_launch_s", kMinLaunchS, kMaxLaunchS);
  hw.graph_launch_s = launch.number_in("graph_launch_s", kMinLaunchS, kMaxLaunchS);
  hw.kernel_overhead_s = launch.number_in("kernel_overhead_s", kMinLaunchS, kMaxLaunchS);
  hw.dependent_kernel_gap_s = launch.number_in_or("dependent_kernel_gap_s", 0.0, 1e-4, 0.0);
  launch.finish();
}

// Measured tables: inline ("tables": {...}) or in the file "tables" names, relative to this one.
// `tables_doc` holds a file's JSON for as long as the reader `tables` reads it.
void open_tables(JsonReader& r, const std::string& file, nlohmann::json& tables_doc, std::optional<JsonReader>& tables) {
  if (!r.has("tables")) return;
  const auto& t = r.raw("tables");
  if (t.is_string()) {
    const std::string tables_file = hw_tables_path(t.get<std::string>(), file);
    tables_doc = load_json_file(tables_file);
    tables.emplace(tables_doc, tables_file, "");
    if (tables->string("schema") != kTablesSchema) tables->fail("schema", std::string("must be \"") + kTablesSchema + "\"");
    tables->accept("notes");
  } else if (t.is_object()) {
    tables.emplace(t, file, "tables");
  } else {
    r.fail("tables", "must name the tables file (relative to this profile) or be an object");
  }
}

// The efficiency curves. Each is in the profile's "efficiency" or, when measured, its tables'
// (not both).
void parse_efficiency_curves(JsonReader& r, std::optional<JsonReader>& tables, HwProfile& hw) {
  std::optional<JsonReader> eff = r.object_if("efficiency");
  std::optional<JsonReader> measured = tables ? tables->object_if("efficiency") : std::nullopt;
  const auto curve = [&](const std::string& key) {
    const bool here = eff && eff->has(key), there = measured && measured->has(key);
    if (here && there) eff->fail(key, "is also in the profile's tables: keep one");
    if (here) return parse_table(*eff, key);
    if (there) return parse_table(*measured, key);
    r.fail("efficiency." + key, "missing (in the profile or its tables)");
  };
  hw.gemm_compute_frac_by_m = curve("gemm_compute_frac_by_m");
  hw.memory_bw_frac_by_bytes = curve("memory_bw_frac_by_bytes");
  hw.attention_decode_bw_frac_by_bytes = curve("attention_decode_bw_frac_by_bytes");
  hw.attention_prefill_compute_frac_by_tokens = curve("attention_prefill_compute_frac_by_kv_tokens");
  // Optional FP4 curve (profile only): a GPU without FP4 tensor cores never runs at that rate.
  if (eff && eff->has("gemm_compute_frac_by_m_fp4")) {
    if (!hw.supports(Dtype::fp4)) eff->fail("gemm_compute_frac_by_m_fp4", "set, but peak_flops_per_s has no fp4 rate");
    hw.gemm_compute_frac_by_m_fp4 = parse_table(*eff, "gemm_compute_frac_by_m_fp4");
  }
  if (eff) eff->finish();
  if (measured) measured->finish();
}

}  // namespace

HwProfile parse_hw_profile(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file, "");
  HwProfile hw;
  r.accept("schema");
  r.accept("notes");
  r.accept("fit_report");  // written by `servesim calibrate fit`, for people
  hw.name = r.string("name");
  hw.display_name = r.string("display_name");
  hw.architecture = r.string("architecture");
  r.accept("compute_capability");
  hw.sm_count = static_cast<int>(r.integer_in("sm_count", 1, 1 << 20));
  // 10 TB at most: far above any GPU, and keeps the KV block count (and the allocator's tables) bounded.
  hw.memory_bytes = r.number_in("memory_bytes", 1e8, 1e13);
  hw.hbm_bandwidth_bytes_per_s = r.number_in("hbm_bandwidth_bytes_per_s", 1e10, 1e15);
  hw.l2_bytes = r.number_in("l2_bytes", 1e4, 1e10);
  parse_peaks(r, hw);
  parse_links(r, hw);
  parse_launch(r, hw);
  nlohmann::json tables_doc;
  std::optional<JsonReader> tables;
  open_tables(r, file, tables_doc, tables);
  if (r.has("calibration")) r.fail("calibration", "belongs under \"tables\" (see docs/hardware-profiles.md)");
  parse_efficiency_curves(r, tables, hw);
  if (tables) {
    if (auto calibration = tables->object_if("calibration")) parse_calibration(*calibration, hw);
    tables->finish();
  }
  if (auto qz = r.object_if("quantized")) {
    hw.dequant_int4_weights_per_s = qz->number_in_or("dequant_int4_weights_per_s", kMinFlopsPerS, kMaxFlopsPerS, 0.0);
    hw.dequant_int8_weights_per_s = qz->number_in_or("dequant_int8_weights_per_s", kMinFlopsPerS, kMaxFlopsPerS, 0.0);
    qz->finish();
  }
  hw.provenance = parse_provenance(r.object("provenance"));
  r.finish();
  return hw;
}

namespace {
// The bytes of a regular file; nullopt for anything else (a FIFO, a missing file), which the
// cache below leaves to the loader and its errors.
std::optional<std::string> regular_file_bytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  if (!(in && bytes << in.rdbuf())) return std::nullopt;
  return std::move(bytes).str();
}

// A profile parsed once per process: plan and saturate build a scenario per probe and
// replication, and parsing a measured profile's tables (125-240 KB of JSON) was half of a plan's
// CPU time. An entry is reused only while the profile's and its tables file's bytes are the ones
// it was parsed from, so an edited file is read again.
struct ParsedProfile {
  std::string bytes, tables_path, tables_bytes;
  HwProfile hw;
};
std::mutex parsed_profiles_mutex;
std::map<std::string, ParsedProfile>& parsed_profiles() {
  static std::map<std::string, ParsedProfile> cache;
  return cache;
}
}  // namespace

HwProfile load_hw_profile(const std::string& path) {
  const std::optional<std::string> bytes = regular_file_bytes(path);
  if (bytes) {
    std::lock_guard<std::mutex> lock(parsed_profiles_mutex);
    const auto it = parsed_profiles().find(path);
    if (it != parsed_profiles().end() && it->second.bytes == *bytes &&
        (it->second.tables_path.empty() || regular_file_bytes(it->second.tables_path) == it->second.tables_bytes)) {
      return it->second.hw;
    }
  }
  const nlohmann::json doc = load_json_file(path);
  HwProfile hw = parse_hw_profile(doc, path);
  if (!bytes) return hw;
  ParsedProfile entry{*bytes, "", "", hw};
  if (const auto t = doc.find("tables"); t != doc.end() && t->is_string()) {
    entry.tables_path = hw_tables_path(t->get<std::string>(), path);
    const std::optional<std::string> tables = regular_file_bytes(entry.tables_path);
    if (!tables) return hw;
    entry.tables_bytes = *tables;
  }
  std::lock_guard<std::mutex> lock(parsed_profiles_mutex);
  parsed_profiles()[path] = std::move(entry);
  return hw;
}

HwProfile::AttentionKernelTables parse_attention_kernel_tables(const nlohmann::json& doc, const std::string& file,
                                                               const std::string& path) {
  JsonReader r(doc, file, path);
  return parse_attention_tables(r);
}

nlohmann::json field_origins_json(const HwProfile& hw) {
  nlohmann::json out = nlohmann::json::array();
  for (const FieldOrigin& f : field_origins(hw)) out.push_back({{"field", f.field}, {"origin", f.origin}, {"detail", f.detail}});
  return out;
}

std::vector<FieldOrigin> field_origins_from_json(const nlohmann::json& origins) {
  std::vector<FieldOrigin> out;
  for (const auto& f : origins) out.push_back({f.value("field", ""), f.value("origin", ""), f.value("detail", "")});
  return out;
}

nlohmann::json provenance_to_json(const Provenance& p) {
  nlohmann::json j = {{"kind", p.kind}, {"method", p.method}, {"sources", p.sources}};
  if (p.kind == "measured") {
    j["gpu"] = p.gpu;
    j["driver"] = p.driver;
    j["cuda"] = p.cuda;
    j["date"] = p.date;
    j["command"] = p.command;
  }
  return j;
}

}  // namespace servesim
