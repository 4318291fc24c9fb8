// Calibration fit. Every measured table stores the fraction of the roofline the kernel reached,
// frac = roofline / (t - kernel_overhead), so the cost model reproduces each calibrated point
// exactly and interpolates between them (see sim/hw/measured_tables.hpp).
#include "sim/calib/fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include <Eigen/Dense>

#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

constexpr double kMinFrac = 1e-3;

double clamp_frac(double f) { return std::clamp(f, kMinFrac, 1.0); }

// Reads a numeric field of a raw record with a path-naming error.
double field(const nlohmann::json& rec, const char* key, const std::string& file, const std::string& where) {
  const auto it = rec.find(key);
  if (it == rec.end() || !it->is_number()) throw InputError(file, where + "." + key, "missing or not a number");
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw InputError(file, where + "." + key, "must be finite");
  return v;
}

const nlohmann::json& section(const nlohmann::json& raw, const char* key, const std::string& file) {
  const auto it = raw.find(key);
  if (it == raw.end() || !it->is_array() || it->empty()) throw InputError(file, key, "missing or empty section");
  return *it;
}

// Points (x, y) -> an increasing-x table: medians of y within log-spaced bins (bins_per_decade).
nlohmann::json binned_table(std::vector<std::pair<double, double>> pts, int bins_per_decade) {
  std::map<long, std::vector<std::pair<double, double>>> bins;
  for (const auto& p : pts) bins[std::lround(std::floor(std::log10(p.first) * bins_per_decade))].push_back(p);
  nlohmann::json table = nlohmann::json::array();
  for (auto& [bin, v] : bins) {
    std::vector<double> xs, ys;
    for (const auto& p : v) {
      xs.push_back(p.first);
      ys.push_back(p.second);
    }
    const double x = median(xs);
    if (!table.empty() && x <= table.back()[0].get<double>()) continue;
    table.push_back({x, clamp_frac(median(ys))});
  }
  return table;
}

// Least-squares line t = a + b x (Eigen), for per-node graph cost and similar.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& t) {
  Eigen::MatrixXd a(static_cast<Eigen::Index>(x.size()), 2);
  Eigen::VectorXd y(static_cast<Eigen::Index>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    a(static_cast<Eigen::Index>(i), 0) = 1.0;
    a(static_cast<Eigen::Index>(i), 1) = x[i];
    y(static_cast<Eigen::Index>(i)) = t[i];
  }
  const Eigen::Vector2d c = a.colPivHouseholderQr().solve(y);
  return {c(0), c(1)};
}

// The scheme a raw.json weight-only record is timed as: 4-bit as GPTQ (its fused-kernel limit,
// M <= 50, is the tighter one), 8-bit as W8A16; group size 128 as calibrated; bf16 activations.
Precision quant_precision(const std::string& dtype) {
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  p.quant = dtype == "w4a16" ? QuantScheme::w4a16_gptq : QuantScheme::w8a16;
  p.group_size = 128;
  return p;
}

struct Peaks {
  double bw;
  std::map<std::string, double> flops;
};

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json decode_attention_json(const std::map<double, std::map<double, std::vector<double>>>& by_context_units) {
  std::vector<std::pair<double, std::vector<std::pair<double, double>>>> by_context;
  for (const auto& [context, by_units] : by_context_units) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& [units, fracs] : by_units) pts.emplace_back(units, clamp_frac(median(fracs)));
    by_context.emplace_back(context, std::move(pts));
  }
  const LogGrid2D grid = decode_grid_by_work(by_context);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < grid.xs().size(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t j = 0; j < grid.ys().size(); ++j) row.push_back(grid.value(i, j));
    rows.push_back(row);
  }
  return {{"kv_head_tokens", grid.xs()}, {"context_tokens", grid.ys()}, {"frac", rows}};
}

FitSummary fit_profile(const nlohmann::json& raw, const std::string& raw_file, const nlohmann::json& base,
                       const std::string& base_file, const FitOptions& opt) {
  if (raw.value("schema", "") != "servesim-calibration-raw/1") {
    throw InputError(raw_file, "schema", "expected \"servesim-calibration-raw/1\"");
  }
  const HwProfile base_hw = parse_hw_profile(base, base_file);  // validates the base
  Peaks peaks{base_hw.hbm_bandwidth_bytes_per_s, {}};
  for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8}) peaks.flops[dtype_name(d)] = base_hw.peak_flops(d);

  nlohmann::json profile = base;
  inline_hw_tables(profile, base_file);
  profile["name"] = opt.name;
  const auto& gpu = raw.at("gpu");
  profile["sm_count"] = gpu.at("sm_count");
  profile["l2_bytes"] = gpu.at("l2_bytes");
  profile["memory_bytes"] = gpu.at("memory_bytes");

  // Launch costs: host cost per eager launch and per graph launch; GPU-side cost per kernel
  // inside a graph, which is how decode steps run.
  const auto& launch = raw.at("launch");
  const double kernel_overhead_s = field(launch, "graph_node_s", raw_file, "launch");
  profile["launch"] = {{"kernel_launch_s", field(launch, "eager_launch_s", raw_file, "launch")},
                       {"graph_launch_s", field(launch, "graph_launch_s", raw_file, "launch")},
                       {"kernel_overhead_s", kernel_overhead_s}};
  // Fitted to whole-model steps, not to the calibrators (`calibrate independent`): kept on a refit.
  if (base.contains("launch") && base["launch"].contains("dependent_kernel_gap_s")) {
    profile["launch"]["dependent_kernel_gap_s"] = base["launch"]["dependent_kernel_gap_s"];
  }

  // Streaming kernels (norm, add, SiLU*mul, RoPE): bandwidth fraction against bytes per kernel.
  std::vector<std::pair<double, double>> bw_pts;
  const auto& elementwise = section(raw, "elementwise", raw_file);
  for (std::size_t i = 0; i < elementwise.size(); ++i) {
    const std::string where = "elementwise[" + std::to_string(i) + "]";
    const double bytes = field(elementwise[i], "bytes", raw_file, where);
    const double t = field(elementwise[i], "time_s", raw_file, where) - kernel_overhead_s;
    if (t > 0.0) bw_pts.emplace_back(bytes, bytes / (peaks.bw * t));
  }
  set_fitted_curve(profile, "memory_bw_frac_by_bytes", binned_table(bw_pts, 4));

  // GEMMs: one roofline-fraction curve over M per (dtype, n, k); every holdout_every-th M is
  // kept out to measure the fit on points it has not seen.
  std::map<std::tuple<std::string, double, double>, std::vector<std::pair<double, double>>> curves;  // (m, t)
  const auto& gemms = section(raw, "gemm", raw_file);
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const std::string where = "gemm[" + std::to_string(i) + "]";
    const std::string dtype = gemms[i].at("dtype").get<std::string>();
    curves[{dtype, field(gemms[i], "n", raw_file, where), field(gemms[i], "k", raw_file, where)}].emplace_back(
        field(gemms[i], "m", raw_file, where), field(gemms[i], "time_s", raw_file, where));
  }
  std::map<std::string, GemmCurves> gemm_curves;  // by dtype
  struct Held {
    std::string dtype;
    double m, n, k, t;
  };
  std::vector<Held> held;
  std::vector<double> fallback_frac_m, fallback_frac;  // bf16 compute fraction, for the generic curve
  for (auto& [key, pts] : curves) {
    const auto& [dtype, n, k] = key;
    const auto d = parse_dtype(dtype);
    if (!d || peaks.flops[dtype] <= 0.0) continue;  // the base has no such unit: nothing to predict
    std::sort(pts.begin(), pts.end());
    const Precision p{*d, *d, *d};
    auto& table = gemm_curves[dtype][{n, k}];
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const auto [m, t] = pts[i];
      if (opt.holdout_every > 0 && i % opt.holdout_every == 1 && i + 1 < pts.size()) {
        held.push_back({dtype, m, n, k, t});
        continue;
      }
      const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(m), static_cast<std::int64_t>(n),
                                 static_cast<std::int64_t>(k), p);
      const double roofline = std::max(op.flops / peaks.flops[dtype], op.bytes / peaks.bw);
      const double busy = t - kernel_overhead_s;
      table.emplace_back(m, clamp_frac(busy > 0.0 ? roofline / busy : 1.0));
      if (dtype == "bf16") {
        fallback_frac_m.push_back(m);
        fallback_frac.push_back(op.flops / (peaks.flops[dtype] * t));
      }
    }
  }
  nlohmann::json gemm_tables = nlohmann::json::object();
  for (const auto& [dtype, c] : gemm_curves) gemm_tables[dtype] = gemm_columns_json(c);
  // Generic curve for kernels without a table (e.g. a dtype not measured): bf16 compute fraction.
  {
    std::map<double, std::vector<double>> by_m;
    for (std::size_t i = 0; i < fallback_frac_m.size(); ++i) by_m[fallback_frac_m[i]].push_back(fallback_frac[i]);
    nlohmann::json table = nlohmann::json::array();
    for (auto& [m, v] : by_m) table.push_back({m, clamp_frac(median(v))});
    if (!table.empty()) set_fitted_curve(profile, "gemm_compute_frac_by_m", table);
  }

  // Weight-only GEMMs (optional section): roofline fraction of the quantized op (its packed
  // weight bytes, bf16 peak) per (scheme, path, n, k) over M, against t minus one fixed overhead
  // per kernel (dequant_gemm is two). Held-out points as for the dense GEMMs.
  struct QuantHeld {
    std::string dtype, path;
    double m, n, k, t;
  };
  std::vector<QuantHeld> quant_held;
  std::map<std::string, std::map<std::string, GemmCurves>> quant_curves;  // scheme -> kernel path -> curves
  if (raw.contains("quant_gemm")) {
    std::map<std::tuple<std::string, std::string, double, double>, std::vector<std::pair<double, double>>> qcurves;
    const auto& quant = section(raw, "quant_gemm", raw_file);
    for (std::size_t i = 0; i < quant.size(); ++i) {
      const std::string where = "quant_gemm[" + std::to_string(i) + "]";
      const std::string dtype = quant[i].at("dtype").get<std::string>(), path = quant[i].at("path").get<std::string>();
      if ((dtype != "w4a16" && dtype != "w8a16") || (path != "gemv" && path != "dequant_gemm")) {
        throw InputError(raw_file, where, "dtype must be w4a16 or w8a16 and path gemv or dequant_gemm");
      }
      qcurves[{dtype, path, field(quant[i], "n", raw_file, where), field(quant[i], "k", raw_file, where)}].emplace_back(
          field(quant[i], "m", raw_file, where), field(quant[i], "time_s", raw_file, where));
    }
    for (auto& [key, pts] : qcurves) {
      const auto& [dtype, path, n, k] = key;
      std::sort(pts.begin(), pts.end());
      const int launches = path == "gemv" ? 1 : 2;
      auto& table = quant_curves[dtype][path == "gemv" ? "fused" : "dequant_gemm"][{n, k}];
      for (std::size_t i = 0; i < pts.size(); ++i) {
        const auto [m, t] = pts[i];
        if (opt.holdout_every > 0 && i % opt.holdout_every == 1 && i + 1 < pts.size()) {
          quant_held.push_back({dtype, path, m, n, k, t});
          continue;
        }
        const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(m), static_cast<std::int64_t>(n), static_cast<std::int64_t>(k),
                                   quant_precision(dtype));
        const double roofline = std::max(op.flops / peaks.flops["bf16"], op.bytes / peaks.bw);
        const double busy = t - launches * kernel_overhead_s;
        table.emplace_back(m, clamp_frac(busy > 0.0 ? roofline / busy : 1.0));
      }
    }
  }
  nlohmann::json quant_tables = nlohmann::json::object();
  for (const auto& [scheme, paths] : quant_curves) {
    for (const auto& [kernel, c] : paths) quant_tables[scheme][kernel] = gemm_columns_json(c);
  }

  // Decode attention over a paged cache: roofline fraction per (context, sequences x KV heads)
  // at the smallest block size measured (vLLM's default 16 when present).
  const auto& dec = section(raw, "attention_decode", raw_file);
  double block = 1e30;
  for (const auto& r : dec) block = std::min(block, r.at("block_size").get<double>());
  std::map<double, std::map<double, std::vector<double>>> decode;  // context -> units -> fracs
  std::vector<std::pair<double, double>> dec_bw_pts;
  for (std::size_t i = 0; i < dec.size(); ++i) {
    const auto& r = dec[i];
    if (r.at("block_size").get<double>() != block) continue;
    const std::string where = "attention_decode[" + std::to_string(i) + "]";
    const double b = field(r, "batch", raw_file, where), c = field(r, "context", raw_file, where);
    const double units = b * field(r, "num_kv_heads", raw_file, where);
    const double q_w = field(r, "num_q_heads", raw_file, where) * field(r, "head_dim", raw_file, where);
    const double bytes = field(r, "kv_bytes", raw_file, where) + 2.0 * b * q_w * 2.0;
    const double flops = 4.0 * q_w * b * c;
    const double roofline = std::max(flops / peaks.flops["bf16"], bytes / peaks.bw);
    const double busy = field(r, "time_s", raw_file, where) - kernel_overhead_s;
    decode[c][units].push_back(clamp_frac(busy > 0.0 ? roofline / busy : 1.0));
    if (busy > 0.0) dec_bw_pts.emplace_back(bytes, bytes / (peaks.bw * busy));
  }
  set_fitted_curve(profile, "attention_decode_bw_frac_by_bytes", binned_table(dec_bw_pts, 2));

  // Prefill attention (flash-style, causal): compute fraction against KV tokens per launch.
  std::vector<std::pair<double, double>> pre_pts;
  const auto& pre = section(raw, "attention_prefill", raw_file);
  for (std::size_t i = 0; i < pre.size(); ++i) {
    const std::string where = "attention_prefill[" + std::to_string(i) + "]";
    const double tokens = field(pre[i], "batch", raw_file, where) * field(pre[i], "seq_len", raw_file, where);
    const double busy = field(pre[i], "time_s", raw_file, where) - kernel_overhead_s;
    if (busy > 0.0) pre_pts.emplace_back(tokens, field(pre[i], "flops", raw_file, where) / (peaks.flops["bf16"] * busy));
  }
  set_fitted_curve(profile, "attention_prefill_compute_frac_by_kv_tokens", binned_table(pre_pts, 3));

  // Host link: best pinned host-to-device bandwidth (cold start, KV swap).
  double h2d = 0.0;
  for (const auto& r : section(raw, "host_copy", raw_file)) {
    if (r.value("direction", "") == "h2d" && r.value("pinned", false)) h2d = std::max(h2d, r.at("bytes").get<double>() / r.at("time_s").get<double>());
  }
  if (h2d > 0.0) profile["host_link"]["bandwidth_bytes_per_s"] = h2d;

  // Contention: mean slowdown of the two kernels running together against each alone.
  nlohmann::json contention = {{"copy_copy_slowdown", 1.0}, {"gemm_copy_slowdown", 1.0}};
  for (const auto& r : section(raw, "contention", raw_file)) {
    const auto& alone = r.at("alone_s");
    const auto& together = r.at("together_s");
    double s = 0.0;
    for (std::size_t i = 0; i < alone.size(); ++i) s += together[i].get<double>() / alone[i].get<double>();
    contention[r.at("case").get<std::string>() + "_slowdown"] = std::max(1.0, s / static_cast<double>(alone.size()));
  }

  // A straight line t = a + bytes / bw through all streaming kernels: the fixed cost of a small
  // kernel and the asymptotic bandwidth, reported to compare against the copy benchmark.
  std::vector<double> ew_bytes, ew_t;
  for (const auto& r : elementwise) {
    ew_bytes.push_back(r.at("bytes").get<double>());
    ew_t.push_back(r.at("time_s").get<double>());
  }
  const auto [ew_fixed_s, ew_s_per_byte] = fit_line(ew_bytes, ew_t);
  double copy_bw = 0.0;
  if (raw.contains("bandwidth")) {
    for (const auto& r : raw["bandwidth"]) {
      if (r.value("op", "") == "copy") copy_bw = std::max(copy_bw, r.at("bytes_per_s").get<double>());
    }
  }

  // Tables of other attention kernel families come from other measurements (`calibrate
  // independent`): a refit of the calibrator's tables keeps them.
  nlohmann::json other_attention;
  if (profile.contains("tables") && profile["tables"].is_object() && profile["tables"].contains("calibration") &&
      profile["tables"]["calibration"].contains("attention_kernels")) {
    other_attention = profile["tables"]["calibration"]["attention_kernels"];
  }
  auto& calibration = profile["tables"]["calibration"];
  calibration = {{"gemm", gemm_tables}, {"attention_decode", decode_attention_json(decode)}, {"contention", contention}};
  if (!quant_tables.empty()) calibration["quant_gemm"] = quant_tables;
  if (!other_attention.is_null()) calibration["attention_kernels"] = other_attention;
  profile["provenance"] = {{"kind", "measured"},
                           {"method", "servesim calibrate fit over calibrate/run_all.sh results: GEMM and decode-attention "
                                      "roofline fractions per calibrated shape, bandwidth fraction of streaming kernels "
                                      "vs bytes, flash prefill compute fraction vs tokens, launch costs, contention; "
                                      "datasheet peaks and interconnect from the base profile"},
                           {"sources", nlohmann::json::array({portable_path(raw_file), portable_path(base_file)})},
                           {"gpu", gpu.at("name")},
                           {"driver", gpu.at("driver")},
                           {"cuda", gpu.at("cuda_runtime")},
                           {"date", raw.at("date")},
                           {"command", opt.command}};

  // Check the profile through the real parser and cost model on the held-out GEMM points.
  FitSummary summary;
  const HwProfile fitted = parse_hw_profile(profile, opt.name + " (fitted)");
  std::vector<double> errors;
  for (const Held& h : held) {
    const Dtype d = *parse_dtype(h.dtype);
    const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(h.m), static_cast<std::int64_t>(h.n),
                               static_cast<std::int64_t>(h.k), Precision{d, d, d});
    errors.push_back(std::fabs(estimate(op, fitted, d).time_s - h.t) / h.t);
  }
  // Weight-only held-out points, where the cost model runs the measured path at that M.
  std::vector<double> quant_errors;
  for (const QuantHeld& h : quant_held) {
    const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(h.m), static_cast<std::int64_t>(h.n),
                               static_cast<std::int64_t>(h.k), quant_precision(h.dtype));
    const GemmKernel want = h.path == "gemv" ? GemmKernel::weight_only_fused : GemmKernel::dequant_gemm;
    if (choose_gemm_kernel(op, fitted) != want) continue;
    const double predicted = estimate(op, fitted, Dtype::bf16).time_s;
    summary.quant_holdout.push_back({h.dtype, h.path, h.m, h.n, h.k, h.t, predicted});
    quant_errors.push_back(std::fabs(predicted - h.t) / h.t);
  }
  summary.gemm_holdout_points = static_cast<int>(errors.size());
  summary.gemm_holdout_median_abs_err = median(errors);
  summary.gemm_holdout_worst_abs_err = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
  profile["fit_report"] = {{"streaming_kernel_fixed_s", ew_fixed_s},
                           {"streaming_kernel_bytes_per_s", ew_s_per_byte > 0.0 ? 1.0 / ew_s_per_byte : 0.0},
                           {"copy_peak_bytes_per_s", copy_bw},
                           {"gemm_holdout_points", summary.gemm_holdout_points},
                           {"gemm_holdout_median_abs_err", summary.gemm_holdout_median_abs_err},
                           {"gemm_holdout_worst_abs_err", summary.gemm_holdout_worst_abs_err}};
  if (!quant_errors.empty()) {
    profile["fit_report"]["quant_gemm_holdout_points"] = quant_errors.size();
    profile["fit_report"]["quant_gemm_holdout_median_abs_err"] = median(quant_errors);
    profile["fit_report"]["quant_gemm_holdout_worst_abs_err"] = *std::max_element(quant_errors.begin(), quant_errors.end());
  }
  summary.profile = profile;
  return summary;
}

}  // namespace servesim
