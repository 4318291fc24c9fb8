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

#include "sim/calib/raw_schema.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
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

}  // namespace

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

namespace {

struct Peaks {
  double bw;
  std::map<std::string, double> flops;
};

// The base profile's datasheet peaks: HBM bandwidth and the tensor-core rate of each dtype the
// calibrators time.
Peaks datasheet_peaks(const HwProfile& base_hw) {
  Peaks peaks{base_hw.hbm_bandwidth_bytes_per_s, {}};
  for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8}) peaks.flops[dtype_name(d)] = base_hw.peak_flops(d);
  return peaks;
}

// A measured point's table value: the roofline time over the time the kernel was busy (its
// measured time less the fixed launch cost). A kernel no slower than its fixed cost reached
// the roofline as far as the fit can tell.
double roofline_frac(double roofline_s, double busy_s) { return clamp_frac(busy_s > 0.0 ? roofline_s / busy_s : 1.0); }

// Points of one curve, increasing in M: every holdout_every-th from the 2nd (never the last, so
// the curve's range stays measured) is kept out of the fit to check it.
bool held_out(std::size_t i, std::size_t points, int holdout_every) {
  return holdout_every > 0 && i % static_cast<std::size_t>(holdout_every) == 1 && i + 1 < points;
}

// Launch costs: host cost per eager launch and per graph launch; GPU-side cost per kernel
// inside a graph, which is how decode steps run. Returns that per-kernel cost, which every
// table below subtracts from its measured times.
double fit_launch_costs(const nlohmann::json& raw, const std::string& raw_file, const nlohmann::json& base,
                        nlohmann::json& profile) {
  const auto& launch = raw.at("launch");
  const double kernel_overhead_s = field(launch, "graph_node_s", raw_file, "launch");
  profile["launch"] = {{"kernel_launch_s", field(launch, "eager_launch_s", raw_file, "launch")},
                       {"graph_launch_s", field(launch, "graph_launch_s", raw_file, "launch")},
                       {"kernel_overhead_s", kernel_overhead_s}};
  // Fitted to whole-model steps, not to the calibrators (`calibrate independent`): kept on a refit.
  if (base.contains("launch") && base["launch"].contains("dependent_kernel_gap_s")) {
    profile["launch"]["dependent_kernel_gap_s"] = base["launch"]["dependent_kernel_gap_s"];
  }
  return kernel_overhead_s;
}

// Streaming kernels (norm, add, SiLU*mul, RoPE): bandwidth fraction against bytes per kernel.
nlohmann::json streaming_bw_curve(const nlohmann::json& elementwise, const std::string& raw_file, const Peaks& peaks,
                                  double kernel_overhead_s) {
  std::vector<std::pair<double, double>> bw_pts;
  for (std::size_t i = 0; i < elementwise.size(); ++i) {
    const std::string where = "elementwise[" + std::to_string(i) + "]";
    const double bytes = field(elementwise[i], "bytes", raw_file, where);
    const double t = field(elementwise[i], "time_s", raw_file, where) - kernel_overhead_s;
    if (t > 0.0) bw_pts.emplace_back(bytes, bytes / (peaks.bw * t));
  }
  return binned_table(bw_pts, 4);
}

// A GEMM point kept out of the fit.
struct HeldGemm {
  std::string dtype;
  double m, n, k, t;
};

struct GemmFit {
  nlohmann::json tables = nlohmann::json::object();  // calibration.gemm: by dtype, columns over M
  nlohmann::json generic_curve;                      // gemm_compute_frac_by_m; empty without bf16 points
  std::vector<HeldGemm> held;
};

// GEMMs: one roofline-fraction curve over M per (dtype, n, k), some points held out. The generic
// curve, for kernels without a table (e.g. a dtype not measured), is the bf16 compute fraction.
// A shape listed twice by the calibrator (two models' layers of one (n, k)) has each m twice: one
// point per m, the median of its times (`pts` sorted by m).
void collapse_repeats(std::vector<std::pair<double, double>>& pts) {
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < pts.size();) {
    std::size_t j = i;
    std::vector<double> times;
    for (; j < pts.size() && pts[j].first == pts[i].first; ++j) times.push_back(pts[j].second);
    out.emplace_back(pts[i].first, median(times));
    i = j;
  }
  pts = std::move(out);
}

GemmFit fit_gemm_tables(const nlohmann::json& raw, const std::string& raw_file, const Peaks& peaks, double kernel_overhead_s,
                        int holdout_every) {
  std::map<std::tuple<std::string, double, double>, std::vector<std::pair<double, double>>> curves;  // (m, t)
  const auto& gemms = section(raw, "gemm", raw_file);
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const std::string where = "gemm[" + std::to_string(i) + "]";
    const std::string dtype = gemms[i].at("dtype").get<std::string>();
    curves[{dtype, field(gemms[i], "n", raw_file, where), field(gemms[i], "k", raw_file, where)}].emplace_back(
        field(gemms[i], "m", raw_file, where), field(gemms[i], "time_s", raw_file, where));
  }
  GemmFit fit;
  std::map<std::string, GemmCurves> gemm_curves;  // by dtype
  std::map<double, std::vector<double>> bf16_compute_frac_by_m;
  for (auto& [key, pts] : curves) {
    const auto& [dtype, n, k] = key;
    const auto d = parse_dtype(dtype);
    const auto peak = peaks.flops.find(dtype);
    if (!d || peak == peaks.flops.end() || peak->second <= 0.0) continue;  // the base has no such unit: nothing to predict
    std::sort(pts.begin(), pts.end());
    collapse_repeats(pts);
    const Precision p{*d, *d, *d};
    auto& table = gemm_curves[dtype][{n, k}];
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const auto [m, t] = pts[i];
      if (held_out(i, pts.size(), holdout_every)) {
        fit.held.push_back({dtype, m, n, k, t});
        continue;
      }
      const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(m), static_cast<std::int64_t>(n),
                                 static_cast<std::int64_t>(k), p);
      table.emplace_back(m, roofline_frac(std::max(op.flops / peak->second, op.bytes / peaks.bw), t - kernel_overhead_s));
      if (dtype == "bf16") bf16_compute_frac_by_m[m].push_back(op.flops / (peak->second * t));
    }
  }
  for (const auto& [dtype, c] : gemm_curves) fit.tables[dtype] = gemm_columns_json(c);
  nlohmann::json generic = nlohmann::json::array();
  for (auto& [m, v] : bf16_compute_frac_by_m) generic.push_back({m, clamp_frac(median(v))});
  if (!generic.empty()) fit.generic_curve = generic;
  return fit;
}

// The scheme a raw.json weight-only record is timed as: 4-bit as GPTQ (its fused-kernel limit,
// M <= 50, is the tighter one), 8-bit as W8A16; group size 128 as calibrated; bf16 activations.
Precision quant_precision(const std::string& dtype) {
  Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  p.quant = dtype == "w4a16" ? QuantScheme::w4a16_gptq : QuantScheme::w8a16;
  p.group_size = 128;
  return p;
}

// A weight-only GEMM point kept out of the fit.
struct HeldQuantGemm {
  std::string dtype, path;
  double m, n, k, t;
};

struct QuantGemmFit {
  nlohmann::json tables = nlohmann::json::object();  // calibration.quant_gemm: scheme -> kernel -> columns
  std::vector<HeldQuantGemm> held;
};

// Weight-only GEMMs (optional section): roofline fraction of the quantized op (its packed
// weight bytes, bf16 peak) per (scheme, path, n, k) over M, against t minus one fixed overhead
// per kernel (dequant_gemm is two). Held-out points as for the dense GEMMs.
QuantGemmFit fit_quant_gemm_tables(const nlohmann::json& raw, const std::string& raw_file, const Peaks& peaks,
                                   double kernel_overhead_s, int holdout_every) {
  QuantGemmFit fit;
  if (!raw.contains("quant_gemm")) return fit;
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
  std::map<std::string, std::map<std::string, GemmCurves>> curves;  // scheme -> kernel path -> curves
  for (auto& [key, pts] : qcurves) {
    const auto& [dtype, path, n, k] = key;
    std::sort(pts.begin(), pts.end());
    const int launches = path == "gemv" ? 1 : 2;
    auto& table = curves[dtype][path == "gemv" ? "fused" : "dequant_gemm"][{n, k}];
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const auto [m, t] = pts[i];
      if (held_out(i, pts.size(), holdout_every)) {
        fit.held.push_back({dtype, path, m, n, k, t});
        continue;
      }
      const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(m), static_cast<std::int64_t>(n), static_cast<std::int64_t>(k),
                                 quant_precision(dtype));
      const double roofline = std::max(op.flops / peaks.flops.at("bf16"), op.bytes / peaks.bw);
      table.emplace_back(m, roofline_frac(roofline, t - launches * kernel_overhead_s));
    }
  }
  for (const auto& [scheme, paths] : curves) {
    for (const auto& [kernel, c] : paths) fit.tables[scheme][kernel] = gemm_columns_json(c);
  }
  return fit;
}

// Decode attention over a paged cache: roofline fraction per (context, sequences x KV heads)
// at the smallest block size measured (vLLM's default 16 when present), returned for the
// calibration.attention_decode grid; its bandwidth fraction over bytes goes into the profile as
// the curve for decode attention kernels without a grid.
using DecodeFracs = std::map<double, std::map<double, std::vector<double>>>;  // context -> units -> fracs

DecodeFracs fit_decode_attention(const nlohmann::json& raw, const std::string& raw_file, const Peaks& peaks,
                                    double kernel_overhead_s, nlohmann::json& profile) {
  const auto& dec = section(raw, "attention_decode", raw_file);
  double block = 1e30;
  for (const auto& r : dec) block = std::min(block, r.at("block_size").get<double>());
  DecodeFracs decode;
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
    const double roofline = std::max(flops / peaks.flops.at("bf16"), bytes / peaks.bw);
    const double busy = field(r, "time_s", raw_file, where) - kernel_overhead_s;
    decode[c][units].push_back(roofline_frac(roofline, busy));
    if (busy > 0.0) dec_bw_pts.emplace_back(bytes, bytes / (peaks.bw * busy));
  }
  set_fitted_curve(profile, "attention_decode_bw_frac_by_bytes", binned_table(dec_bw_pts, 2));
  return decode;
}

// Prefill attention (flash-style, causal): compute fraction against KV tokens per launch.
nlohmann::json prefill_attention_curve(const nlohmann::json& raw, const std::string& raw_file, const Peaks& peaks,
                                       double kernel_overhead_s) {
  std::vector<std::pair<double, double>> pre_pts;
  const auto& pre = section(raw, "attention_prefill", raw_file);
  for (std::size_t i = 0; i < pre.size(); ++i) {
    const std::string where = "attention_prefill[" + std::to_string(i) + "]";
    const double tokens = field(pre[i], "batch", raw_file, where) * field(pre[i], "seq_len", raw_file, where);
    const double busy = field(pre[i], "time_s", raw_file, where) - kernel_overhead_s;
    if (busy > 0.0) pre_pts.emplace_back(tokens, field(pre[i], "flops", raw_file, where) / (peaks.flops.at("bf16") * busy));
  }
  return binned_table(pre_pts, 3);
}

// Host link: best pinned host-to-device bandwidth (cold start, KV swap); 0 when none measured.
double pinned_h2d_bytes_per_s(const nlohmann::json& raw, const std::string& raw_file) {
  double h2d = 0.0;
  for (const auto& r : section(raw, "host_copy", raw_file)) {
    if (r.value("direction", "") == "h2d" && r.value("pinned", false)) h2d = std::max(h2d, r.at("bytes").get<double>() / r.at("time_s").get<double>());
  }
  return h2d;
}

// Contention: mean slowdown of the two kernels running together against each alone.
nlohmann::json contention_slowdowns(const nlohmann::json& raw, const std::string& raw_file) {
  nlohmann::json contention = {{"copy_copy_slowdown", 1.0}, {"gemm_copy_slowdown", 1.0}};
  for (const auto& r : section(raw, "contention", raw_file)) {
    const auto& alone = r.at("alone_s");
    const auto& together = r.at("together_s");
    double s = 0.0;
    for (std::size_t i = 0; i < alone.size(); ++i) s += together[i].get<double>() / alone[i].get<double>();
    contention[r.at("case").get<std::string>() + "_slowdown"] = std::max(1.0, s / static_cast<double>(alone.size()));
  }
  return contention;
}

// Figures the fit reports beside the profile to compare against the copy benchmark: a straight
// line t = fixed + bytes / bw through all streaming kernels (the fixed cost of a small kernel
// and the asymptotic bandwidth), and the best copy bandwidth measured.
struct StreamingCheck {
  double fixed_s = 0.0, s_per_byte = 0.0, copy_peak_bytes_per_s = 0.0;
};

StreamingCheck streaming_check(const nlohmann::json& raw, const nlohmann::json& elementwise) {
  std::vector<double> ew_bytes, ew_t;
  for (const auto& r : elementwise) {
    ew_bytes.push_back(r.at("bytes").get<double>());
    ew_t.push_back(r.at("time_s").get<double>());
  }
  StreamingCheck out;
  std::tie(out.fixed_s, out.s_per_byte) = fit_line(ew_bytes, ew_t);
  if (raw.contains("bandwidth")) {
    for (const auto& r : raw["bandwidth"]) {
      if (r.value("op", "") == "copy") out.copy_peak_bytes_per_s = std::max(out.copy_peak_bytes_per_s, r.at("bytes_per_s").get<double>());
    }
  }
  return out;
}

// profile.tables.calibration: the fitted tables, plus the tables of other attention kernel
// families, which come from other measurements (`calibrate independent`) and survive a refit.
void set_calibration_tables(nlohmann::json& profile, const GemmFit& gemm, const DecodeFracs& decode_attention,
                            const nlohmann::json& contention, const QuantGemmFit& quant) {
  nlohmann::json other_attention;
  if (profile.contains("tables") && profile["tables"].is_object() && profile["tables"].contains("calibration") &&
      profile["tables"]["calibration"].contains("attention_kernels")) {
    other_attention = profile["tables"]["calibration"]["attention_kernels"];
  }
  auto& calibration = profile["tables"]["calibration"];
  calibration = {{"gemm", gemm.tables}, {"attention_decode", decode_attention_json(decode_attention)}, {"contention", contention}};
  if (!quant.tables.empty()) calibration["quant_gemm"] = quant.tables;
  if (!other_attention.is_null()) calibration["attention_kernels"] = other_attention;
}

nlohmann::json provenance(const nlohmann::json& raw, const std::string& raw_file, const std::string& base_file,
                          const std::string& command) {
  const auto& gpu = raw.at("gpu");
  return {{"kind", "measured"},
          {"method", "servesim calibrate fit over calibrate/run_all.sh results: GEMM and decode-attention "
                     "roofline fractions per calibrated shape, bandwidth fraction of streaming kernels "
                     "vs bytes, flash prefill compute fraction vs tokens, launch costs, contention; "
                     "datasheet peaks and interconnect from the base profile"},
          {"sources", nlohmann::json::array({portable_path(raw_file), portable_path(base_file)})},
          {"gpu", gpu.at("name")},
          {"driver", gpu.at("driver")},
          {"cuda", gpu.at("cuda_runtime")},
          {"date", raw.at("date")},
          {"command", command}};
}

// Relative errors of the held-out GEMM points predicted through the fitted profile and the
// real cost model.
std::vector<double> gemm_holdout_errors(const std::vector<HeldGemm>& held, const HwProfile& fitted) {
  std::vector<double> errors;
  for (const HeldGemm& h : held) {
    const Dtype d = *parse_dtype(h.dtype);
    const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(h.m), static_cast<std::int64_t>(h.n),
                               static_cast<std::int64_t>(h.k), Precision{d, d, d});
    errors.push_back(std::fabs(estimate(op, fitted, d).time_s - h.t) / h.t);
  }
  return errors;
}

// Weight-only held-out points, only where the cost model runs the measured path at that M:
// each predicted point into the summary, their relative errors returned.
std::vector<double> quant_holdout_errors(const std::vector<HeldQuantGemm>& held, const HwProfile& fitted, FitSummary& summary) {
  std::vector<double> errors;
  for (const HeldQuantGemm& h : held) {
    const Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(h.m), static_cast<std::int64_t>(h.n),
                               static_cast<std::int64_t>(h.k), quant_precision(h.dtype));
    const GemmKernel want = h.path == "gemv" ? GemmKernel::weight_only_fused : GemmKernel::dequant_gemm;
    if (choose_gemm_kernel(op, fitted) != want) continue;
    const double predicted = estimate(op, fitted, Dtype::bf16).time_s;
    summary.quant_holdout.push_back({h.dtype, h.path, h.m, h.n, h.k, h.t, predicted});
    errors.push_back(std::fabs(predicted - h.t) / h.t);
  }
  return errors;
}

// The fitted profile through the real parser. Its rows were checked (raw_schema), so a table it
// refuses is a fit the measurements cannot support: said against the input file, not the derived
// table alone.
HwProfile fitted_profile(const nlohmann::json& profile, const std::string& raw_file) {
  try {
    return parse_hw_profile(profile, "the profile fitted to it");
  } catch (const InputError& e) {
    throw InputError(raw_file, "", e.what());
  }
}

double worst(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

FitSummary fit_profile(const nlohmann::json& raw, const std::string& raw_file, const nlohmann::json& base,
                       const std::string& base_file, const FitOptions& opt) {
  if (raw.value("schema", "") != "servesim-calibration-raw/1") {
    throw InputError(raw_file, "schema", "expected \"servesim-calibration-raw/1\"");
  }
  check_calibration_raw(raw, raw_file);  // every record in range: what follows reads it unchecked
  const Peaks peaks = datasheet_peaks(parse_hw_profile(base, base_file));  // validates the base

  // The base profile (datasheet peaks, interconnect) with this GPU's measured sizes.
  nlohmann::json profile = base;
  inline_hw_tables(profile, base_file);
  profile["name"] = opt.name;
  const auto& gpu = raw.at("gpu");
  profile["sm_count"] = gpu.at("sm_count");
  profile["l2_bytes"] = gpu.at("l2_bytes");
  profile["memory_bytes"] = gpu.at("memory_bytes");

  // Each kernel family's table, in the order of raw.json's sections.
  const double kernel_overhead_s = fit_launch_costs(raw, raw_file, base, profile);
  const auto& elementwise = section(raw, "elementwise", raw_file);
  set_fitted_curve(profile, "memory_bw_frac_by_bytes", streaming_bw_curve(elementwise, raw_file, peaks, kernel_overhead_s));
  const GemmFit gemm = fit_gemm_tables(raw, raw_file, peaks, kernel_overhead_s, opt.holdout_every);
  if (!gemm.generic_curve.is_null()) set_fitted_curve(profile, "gemm_compute_frac_by_m", gemm.generic_curve);
  const QuantGemmFit quant = fit_quant_gemm_tables(raw, raw_file, peaks, kernel_overhead_s, opt.holdout_every);
  const DecodeFracs decode = fit_decode_attention(raw, raw_file, peaks, kernel_overhead_s, profile);
  set_fitted_curve(profile, "attention_prefill_compute_frac_by_kv_tokens",
                   prefill_attention_curve(raw, raw_file, peaks, kernel_overhead_s));
  if (const double h2d = pinned_h2d_bytes_per_s(raw, raw_file); h2d > 0.0) profile["host_link"]["bandwidth_bytes_per_s"] = h2d;
  const nlohmann::json contention = contention_slowdowns(raw, raw_file);
  const StreamingCheck streaming = streaming_check(raw, elementwise);
  set_calibration_tables(profile, gemm, decode, contention, quant);
  profile["provenance"] = provenance(raw, raw_file, base_file, opt.command);

  // Check the profile through the real parser and cost model on the held-out points.
  FitSummary summary;
  const HwProfile fitted = fitted_profile(profile, raw_file);
  const std::vector<double> errors = gemm_holdout_errors(gemm.held, fitted);
  const std::vector<double> quant_errors = quant_holdout_errors(quant.held, fitted, summary);
  summary.gemm_holdout_points = static_cast<int>(errors.size());
  summary.gemm_holdout_median_abs_err = median(errors);
  summary.gemm_holdout_worst_abs_err = worst(errors);
  profile["fit_report"] = {{"streaming_kernel_fixed_s", streaming.fixed_s},
                           {"streaming_kernel_bytes_per_s", streaming.s_per_byte > 0.0 ? 1.0 / streaming.s_per_byte : 0.0},
                           {"copy_peak_bytes_per_s", streaming.copy_peak_bytes_per_s},
                           {"gemm_holdout_points", summary.gemm_holdout_points},
                           {"gemm_holdout_median_abs_err", summary.gemm_holdout_median_abs_err},
                           {"gemm_holdout_worst_abs_err", summary.gemm_holdout_worst_abs_err}};
  if (!quant_errors.empty()) {
    profile["fit_report"]["quant_gemm_holdout_points"] = quant_errors.size();
    profile["fit_report"]["quant_gemm_holdout_median_abs_err"] = median(quant_errors);
    profile["fit_report"]["quant_gemm_holdout_worst_abs_err"] = worst(quant_errors);
  }
  summary.profile = profile;
  return summary;
}

}  // namespace servesim
