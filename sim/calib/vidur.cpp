// vidur profile fit. GEMM shapes and streaming-op bytes are derived from each row's model
// columns exactly as sim/model/ops.cpp counts them, so the fitted fractions plug straight into
// the cost model. Times are medians in milliseconds in the source files.
#include "sim/calib/vidur.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"

namespace fs = std::filesystem;

namespace servesim {

namespace {

// A CSV file as header -> column index, rows of strings. Vidur's files have no quoted commas.
struct Csv {
  std::string path;
  std::map<std::string, std::size_t> col;
  std::vector<std::vector<std::string>> rows;

  double num(std::size_t row, const std::string& name) const {
    const auto it = col.find(name);
    if (it == col.end()) throw InputError(path, name, "missing column");
    const std::string& s = rows[row][it->second];
    try {
      std::size_t used = 0;
      const double v = std::stod(s, &used);
      if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
      return v;
    } catch (const std::exception&) {
      throw InputError(path, "row " + std::to_string(row + 2) + " column " + name, "not a number: '" + s + "'");
    }
  }
  const std::string& str(std::size_t row, const std::string& name) const { return rows[row][col.at(name)]; }
  bool empty_cell(std::size_t row, const std::string& name) const { return rows[row][col.at(name)].empty(); }
};

Csv read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open file");
  Csv csv;
  csv.path = path;
  std::string line;
  auto split = [](const std::string& l) {
    std::vector<std::string> out;
    std::stringstream ss(l);
    std::string cell;
    while (std::getline(ss, cell, ',')) out.push_back(cell);
    if (!l.empty() && l.back() == ',') out.emplace_back();
    return out;
  };
  if (!std::getline(in, line)) throw InputError(path, "", "empty file");
  const auto header = split(line);
  for (std::size_t i = 0; i < header.size(); ++i) csv.col[header[i]] = i;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto cells = split(line);
    if (cells.size() != header.size()) throw InputError(path, "row " + std::to_string(csv.rows.size() + 2), "wrong number of columns");
    csv.rows.push_back(std::move(cells));
  }
  return csv;
}

// One measured kernel: its op and the time the source measured.
struct Sample {
  Op op;
  double time_s;
  bool held_out;
};

// The ops of one mlp.csv row, built like sim/model/ops.cpp builds them for one layer.
std::vector<std::pair<std::string, Op>> row_ops(const Csv& csv, std::size_t r) {
  const double tokens = csv.num(r, "num_tokens");
  const double tp = csv.num(r, "num_tensor_parallel_workers");
  const double h = csv.num(r, "n_embd");
  const double heads = csv.num(r, "n_head");
  const double kv_heads = csv.num(r, "n_kv_head");
  const double ffn = csv.num(r, "n_expanded_embd");
  const bool gated = csv.str(r, "use_gated_mlp") == "True";
  const double hd = h / heads;
  const double q_w = heads * hd / tp;
  const double kv_w = std::max(1.0, kv_heads / tp) * hd;
  const double ffn_tp = ffn / tp;
  const auto T = static_cast<std::int64_t>(tokens);
  const Precision p{Dtype::fp16, Dtype::fp16, Dtype::fp16};
  auto stream = [](double bytes, double flops) {
    Op op{"stream", OpKind::elementwise};
    op.bytes = bytes;
    op.flops = flops;
    return op;
  };
  std::vector<std::pair<std::string, Op>> ops;
  ops.emplace_back("attn_pre_proj", make_gemm_op("qkv", 1, T, static_cast<std::int64_t>(q_w + 2 * kv_w), static_cast<std::int64_t>(h), p));
  ops.emplace_back("attn_post_proj", make_gemm_op("o", 1, T, static_cast<std::int64_t>(h), static_cast<std::int64_t>(q_w), p));
  ops.emplace_back("mlp_up_proj", make_gemm_op("up", 1, T, static_cast<std::int64_t>((gated ? 2 : 1) * ffn_tp), static_cast<std::int64_t>(h), p));
  ops.emplace_back("mlp_down_proj", make_gemm_op("down", 1, T, static_cast<std::int64_t>(h), static_cast<std::int64_t>(ffn_tp), p));
  ops.emplace_back("input_layernorm", stream(2 * tokens * h * 2 + h * 2, 4 * tokens * h));
  ops.emplace_back("post_attention_layernorm", stream(2 * tokens * h * 2 + h * 2, 4 * tokens * h));
  ops.emplace_back("attn_rope", stream(2 * tokens * (q_w + kv_w) * 2, 3 * tokens * (q_w + kv_w)));
  ops.emplace_back("mlp_act", stream(((gated ? 2 : 1) + 1) * tokens * ffn_tp * 2, 5 * tokens * ffn_tp));
  ops.emplace_back("add", stream(3 * tokens * h * 2, tokens * h));
  return ops;
}

double roofline_s(const Op& op, const HwProfile& hw) {
  return std::max(op.flops / hw.peak_flops(Dtype::fp16), op.bytes / hw.hbm_bandwidth_bytes_per_s);
}

// The median fraction at each x, clamped to [1e-3, 1].
std::vector<std::pair<double, double>> median_points(const std::map<double, std::vector<double>>& by_x) {
  std::vector<std::pair<double, double>> t;
  for (const auto& [x, v] : by_x) t.emplace_back(x, std::clamp(median(v), 1e-3, 1.0));
  return t;
}

// The model folders' mlp.csv files under compute_dir (<org>/<model>/mlp.csv), sorted so the
// fit reads them in the same order on every machine.
std::vector<std::string> mlp_csv_files(const std::string& compute_dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(compute_dir, ec)) {
    if (e.path().filename() == "mlp.csv") files.push_back(e.path().string());
  }
  if (ec || files.empty()) throw InputError(compute_dir, "", "no <org>/<model>/mlp.csv files found");
  std::sort(files.begin(), files.end());
  return files;
}

// Every measured op of every row (positive times only), marked held out when its model folder
// is `holdout_model`.
std::vector<Sample> read_samples(const std::vector<std::string>& files, const std::string& holdout_model) {
  std::vector<Sample> samples;
  for (const auto& f : files) {
    const Csv csv = read_csv(f);
    const bool held = !holdout_model.empty() && fs::path(f).parent_path().filename() == holdout_model;
    for (std::size_t r = 0; r < csv.rows.size(); ++r) {
      for (auto& [name, op] : row_ops(csv, r)) {
        // Some architectures lack an op (phi-2's parallel block has no post-attention norm).
        if (!csv.col.count("time_stats." + name + ".median")) continue;
        const double t = csv.num(r, "time_stats." + name + ".median") * 1e-3;
        if (t > 0.0) samples.push_back({op, t, held});
      }
    }
  }
  return samples;
}

struct OpTables {
  GemmCurves gemm;                 // (n, k) -> roofline fraction over m
  nlohmann::json streaming_bw;     // memory_bw_frac_by_bytes
};

// From the samples in the fit: GEMMs' roofline fraction per (n, k) over m; streaming ops'
// bandwidth fraction over bytes, medians within quarter-decade bins of bytes.
OpTables fit_op_tables(const std::vector<Sample>& samples, const HwProfile& hw) {
  std::map<std::pair<double, double>, std::map<double, std::vector<double>>> gemm;
  std::map<double, std::vector<double>> stream_by_bin;
  std::map<double, std::vector<double>> stream_x_by_bin;
  for (const Sample& s : samples) {
    if (s.held_out) continue;
    const double busy = s.time_s - hw.kernel_overhead_s;
    if (s.op.kind == OpKind::gemm) {
      gemm[{static_cast<double>(s.op.n), static_cast<double>(s.op.k)}][static_cast<double>(s.op.m)].push_back(
          busy > 0.0 ? roofline_s(s.op, hw) / busy : 1.0);
    } else if (busy > 0.0) {
      const double bin = std::floor(std::log10(s.op.bytes) * 4.0);
      stream_by_bin[bin].push_back(s.op.bytes / (hw.hbm_bandwidth_bytes_per_s * busy));
      stream_x_by_bin[bin].push_back(s.op.bytes);
    }
  }
  OpTables out;
  for (const auto& [nk, by_m] : gemm) out.gemm[nk] = median_points(by_m);
  out.streaming_bw = nlohmann::json::array();
  for (auto& [bin, fr] : stream_by_bin) out.streaming_bw.push_back({median(stream_x_by_bin[bin]), std::clamp(median(fr), 1e-3, 1.0)});
  return out;
}

// FlashAttention tables from a compute-legacy attention CSV (kernel time from Kineto: no launch
// gap, so no overhead subtracted): the decode grid into `calibration`, the prefill compute
// fraction over KV tokens into the profile's curves.
void fit_attention_tables(const std::string& attention_csv, const HwProfile& hw, nlohmann::json& calibration,
                          nlohmann::json& profile) {
  const Csv csv = read_csv(attention_csv);
  std::map<double, std::map<double, std::vector<double>>> decode;  // context -> units -> fracs
  std::map<double, std::vector<double>> prefill;                    // kv tokens -> compute frac
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    const double tp = csv.num(r, "num_tensor_parallel_workers");
    const double hd = csv.num(r, "n_embd") / csv.num(r, "n_q_head");
    const double q_heads = csv.num(r, "n_q_head") / tp;
    const double kv_w = std::max(1.0, csv.num(r, "n_kv_head") / tp) * hd;
    const double ctx = csv.num(r, "kv_cache_size");
    if (csv.str(r, "is_prefill") == "False") {
      if (csv.empty_cell(r, "time_stats.attn_decode.median")) continue;
      const double b = csv.num(r, "batch_size");
      const double t = csv.num(r, "time_stats.attn_decode.median") * 1e-3;
      const double bytes = b * ctx * 2 * kv_w * 2 + 2 * b * q_heads * hd * 2;
      const double flops = 4 * q_heads * hd * b * ctx;
      decode[ctx][b * std::max(1.0, csv.num(r, "n_kv_head") / tp)].push_back(std::max(flops / hw.peak_flops(Dtype::fp16), bytes / hw.hbm_bandwidth_bytes_per_s) / t);
    } else {
      if (csv.empty_cell(r, "time_stats.attn_prefill.median")) continue;
      const double n = csv.num(r, "prefill_chunk_size");
      const double t = csv.num(r, "time_stats.attn_prefill.median") * 1e-3;
      const double flops = 4 * q_heads * hd * (n * ctx + n * (n + 1) / 2);
      prefill[ctx + n].push_back(flops / (hw.peak_flops(Dtype::fp16) * t));
    }
  }
  calibration["attention_decode"] = decode_attention_json(decode);
  set_fitted_curve(profile, "attention_prefill_compute_frac_by_kv_tokens", median_points(prefill));
}

nlohmann::json provenance(const HwProfile& hw, const std::vector<std::string>& sources, const VidurFitOptions& opt) {
  return {
      {"kind", "measured"},
      {"method", "servesim calibrate vidur: GEMM roofline fractions per weight shape and streaming-kernel bandwidth "
                 "fractions fitted to microsoft/vidur's measured per-operator medians (vLLM-style kernels, all models "
                 "and TP degrees in the folder" + (opt.holdout_model.empty() ? std::string() : ", except " + opt.holdout_model + ", held out") +
                 ")" + (opt.attention_csv.empty() ? std::string("; attention curves from the base profile") : "; FlashAttention decode grid and prefill curve from the attention table") +
                 "; datasheet peaks, launch costs and interconnect from the base profile"},
      {"sources", sources},
      {"gpu", hw.display_name + " (vidur's profiling machine)"},
      {"driver", "not recorded by the source"},
      {"cuda", "not recorded by the source"},
      {"date", "2024-11-19 (vidur snapshot 7d47513)"},
      {"command", opt.command}};
}

// The held-out samples predicted through the fitted profile and the real cost model: relative
// errors of all of them and of the GEMMs, into the summary.
void check_holdout(const std::vector<Sample>& samples, const HwProfile& fitted, VidurFitSummary& summary) {
  std::vector<double> errors, gemm_errors;
  for (const Sample& s : samples) {
    if (!s.held_out) continue;
    const double err = std::fabs(estimate(s.op, fitted, Dtype::fp16).time_s - s.time_s) / s.time_s;
    errors.push_back(err);
    if (s.op.kind == OpKind::gemm) gemm_errors.push_back(err);
  }
  summary.holdout_points = static_cast<int>(errors.size());
  summary.holdout_median_abs_err = median(errors);
  summary.holdout_worst_abs_err = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
  summary.holdout_gemm_median_abs_err = median(gemm_errors);
}

}  // namespace

VidurFitSummary fit_vidur_profile(const std::string& compute_dir, const nlohmann::json& base, const std::string& base_file,
                                  const VidurFitOptions& opt) {
  const HwProfile hw = parse_hw_profile(base, base_file);
  const std::vector<Sample> samples = read_samples(mlp_csv_files(compute_dir), opt.holdout_model);
  const OpTables tables = fit_op_tables(samples, hw);

  nlohmann::json profile = base;
  inline_hw_tables(profile, base_file);
  profile["name"] = opt.name;
  set_fitted_curve(profile, "memory_bw_frac_by_bytes", tables.streaming_bw);
  // vidur ran fp16 only; bf16 runs the same kernels, so it names fp16's table.
  nlohmann::json calibration = {{"gemm", {{"fp16", gemm_columns_json(tables.gemm)}, {"bf16", "fp16"}}}};
  std::vector<std::string> sources = {portable_path(compute_dir)};
  if (!opt.attention_csv.empty()) {
    fit_attention_tables(opt.attention_csv, hw, calibration, profile);
    sources.push_back(portable_path(opt.attention_csv));
  }
  profile["tables"]["calibration"] = calibration;
  profile["provenance"] = provenance(hw, sources, opt);

  VidurFitSummary summary;
  check_holdout(samples, parse_hw_profile(profile, opt.name + " (fitted)"), summary);
  profile["fit_report"] = {{"holdout_model", opt.holdout_model},
                           {"holdout_points", summary.holdout_points},
                           {"holdout_median_abs_err", summary.holdout_median_abs_err},
                           {"holdout_worst_abs_err", summary.holdout_worst_abs_err},
                           {"holdout_gemm_median_abs_err", summary.holdout_gemm_median_abs_err}};
  summary.profile = profile;
  return summary;
}

}  // namespace servesim
