// `servesim calibrate fit RAW.json --name NAME -o hwprofiles/NAME.json [--base PROFILE]`:
// turns calibrate/run_all.sh results into a measured hardware profile; `calibrate vidur` fits one
// to vidur's operator timings; `calibrate rewrite` lays a profile out as the fitters write it.
// Each writes the profile and its measured tables (hwprofiles/tables/NAME.json); `calibrate
// quant-kernels` adds measured quantized GEMM kernel tables to a profile, `calibrate kv-decode` the
// measured decode-attention time of quantized KV caches over bf16, `calibrate decode-per-query-head`
// that of a one-program-per-query-head decode kernel over the grouped one. `calibrate
// engine FILE... -o PROFILE.json [--base ENGINE]` fits an engine profile's host terms to a user's
// own benchmark runs (validate/engine_fit.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "sim/analysis/work_estimate.hpp"
#include "sim/calib/decode_per_query_head_fit.hpp"
#include "sim/calib/fit.hpp"
#include "sim/calib/grouped_gemm_fit.hpp"
#include "sim/calib/independent.hpp"
#include "sim/calib/kv_decode_fit.hpp"
#include "sim/calib/quant_kernels_fit.hpp"
#include "sim/calib/vidur.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/core/suggest.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/validate/engine_fit.hpp"

namespace servesim::cli {

namespace {

// Writes the profile and its tables; returns "OUT (+ TABLES)" for the summary line.
std::string write_profile(const std::string& out, const nlohmann::json& profile) {
  const std::string tables = write_hw_profile(profile, out);
  return out + (tables.empty() ? "" : " + " + tables);
}

// The command as provenance records it, paths made repository-relative (portable_path).
std::string command_line(const std::vector<std::string>& args) {
  std::string c = "servesim calibrate";
  for (const auto& a : args) {
    c += ' ';
    c += portable_path(a);
  }
  return c;
}

// `calibrate vidur DIR --name NAME -o OUT --base PROFILE [--holdout-model M] [--attention CSV]`
int cmd_calibrate_vidur(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim calibrate vidur", "Fit a hardware profile to vidur's measured operator timings");
  opts.add_options()("dir", "vidur compute folder for one GPU (.../vidur/compute/a100)", cxxopts::value<std::string>())(
      "name", "profile name", cxxopts::value<std::string>())("o,out", "output profile path", cxxopts::value<std::string>())(
      "base", "profile with datasheet peaks (default: the bundled profile NAME)", cxxopts::value<std::string>())(
      "holdout-model", "model folder left out of the fit to measure its error", cxxopts::value<std::string>()->default_value(""))(
      "attention", "compute-legacy attention CSV (decode and prefill)", cxxopts::value<std::string>()->default_value(""))(
      "h,help", "show help");
  opts.parse_positional({"dir"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  for (const char* key : {"dir", "name", "out"}) {
    if (!p.count(key)) throw InputError("servesim calibrate vidur", std::string("--") + key, "required");
  }
  VidurFitOptions fit;
  fit.name = p["name"].as<std::string>();
  fit.holdout_model = p["holdout-model"].as<std::string>();
  fit.attention_csv = p["attention"].as<std::string>();
  fit.command = command_line(args);
  const std::string base_path = resolve_data_ref("hwprofiles", p.count("base") ? p["base"].as<std::string>() : fit.name,
                                                 "servesim calibrate vidur", "--base");
  const VidurFitSummary s = fit_vidur_profile(p["dir"].as<std::string>(), load_json_file(base_path), base_path, fit);
  const std::string wrote = write_profile(p["out"].as<std::string>(), s.profile);
  std::printf("wrote %s: held-out %s, %d op timings: median |error| %.1f%% (GEMMs %.1f%%), worst %.1f%%\n",
              wrote.c_str(), fit.holdout_model.c_str(), s.holdout_points,
              100 * s.holdout_median_abs_err, 100 * s.holdout_gemm_median_abs_err, 100 * s.holdout_worst_abs_err);
  return kExitOk;
}

// `calibrate rewrite PROFILE -o OUT`: the same profile in the fitters' layout (after a hand edit,
// or to move measured tables into their own file). Values are kept (6 significant digits in the
// profile, 5 in its tables).
int cmd_calibrate_rewrite(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim calibrate rewrite", "Lay out a hardware profile and its tables as the fitters write them");
  opts.add_options()("profile", "profile name or path", cxxopts::value<std::string>())(
      "o,out", "output profile path", cxxopts::value<std::string>())("h,help", "show help");
  opts.parse_positional({"profile"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  for (const char* key : {"profile", "out"}) {
    if (!p.count(key)) throw InputError("servesim calibrate rewrite", std::string("--") + key, "required");
  }
  const std::string in = resolve_data_ref("hwprofiles", p["profile"].as<std::string>(), "servesim calibrate rewrite", "PROFILE");
  nlohmann::json doc = load_json_file(in);
  load_hw_profile(in);  // valid before rewriting
  inline_hw_tables(doc, in);
  std::printf("wrote %s\n", write_profile(p["out"].as<std::string>(), doc).c_str());
  return kExitOk;
}

// `calibrate independent [--data FILES] --hw PROFILE -o OUT`: what the independent H200 set
// fits, on every row (validate refits the same without the rows it predicts): the PyTorch SDPA
// attention tables and the dependent-kernel gap go into the profile; the torch engines'
// elementwise bandwidth and eager host cost are printed for scenarios/engines/torch-*.json, the
// transformers engines' host costs for scenarios/engines/hf-transformers*.json.
int cmd_calibrate_independent(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim calibrate independent",
                        "Fit SDPA attention tables, the dependent-kernel gap and the torch engines' parameters from the "
                        "independent measurements");
  opts.add_options()("data", "independent run files, comma-separated (default: calibrate/results/h200/independent/run_*.json)",
                     cxxopts::value<std::string>())("hw", "hardware profile name or path the set was measured on",
                                                    cxxopts::value<std::string>())(
      "o,out", "output profile path", cxxopts::value<std::string>())("h,help", "show help");
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  for (const char* key : {"hw", "out"}) {
    if (!p.count(key)) throw InputError("servesim calibrate independent", std::string("--") + key, "required");
  }
  std::vector<std::string> files;
  if (p.count("data")) {
    std::stringstream ss(p["data"].as<std::string>());
    for (std::string f; std::getline(ss, f, ',');) {
      if (!f.empty()) files.push_back(f);
    }
  } else {
    files = independent_files_for(p["hw"].as<std::string>());
  }
  const IndependentSet set = load_independent_set(files);
  const std::string hw_path = resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), "servesim calibrate independent", "--hw");
  nlohmann::json profile = load_json_file(hw_path);
  const HwProfile hw = parse_hw_profile(profile, hw_path);
  nlohmann::json tables = fit_sdpa_attention(attention_sections(set), hw);
  const std::string command = command_line(args);
  tables["source"] = "PyTorch scaled_dot_product_attention measured by calibrate/independent/measure.py (attention sections), "
                     "fitted by: " + command;
  inline_hw_tables(profile, hw_path);
  profile["tables"]["calibration"]["attention_kernels"]["sdpa"] = tables;
  const TorchEngineFit fit = fit_torch_engines(set, with_sdpa_fit(set, hw));
  profile["launch"]["dependent_kernel_gap_s"] = fit.kernel_gap_s;
  const std::string out = p["out"].as<std::string>();
  const std::string wrote = write_profile(out, profile);
  std::printf("wrote %s: sdpa decode grid %zu x %zu, prefill table %zu points (head_dim %d, %zu other head dims); "
              "dependent_kernel_gap_s %.4g\n", wrote.c_str(), tables["decode"]["kv_head_tokens"].size(),
              tables["decode"]["context_tokens"].size(), tables["prefill_compute_frac_by_flops"].size(),
              tables["head_dim"].get<int>(), tables.value("other_head_dims", nlohmann::json::object()).size(), fit.kernel_gap_s);
  std::printf("torch engines (scenarios/engines/torch-*.json): elementwise_bw_frac %.3f, dispatch_s_per_kernel %.4g\n",
              fit.elementwise_bw_frac, fit.dispatch_s_per_kernel);
  // The transformers engines' host costs, fitted on top of the torch parameters (as validate
  // does per fold, here on every model).
  HwProfile fitted = with_sdpa_fit(set, hw);
  fitted.dependent_kernel_gap_s = fit.kernel_gap_s;
  const HfCbFit cb = fit_hf_cb(set, fitted, fit);
  std::printf("hf-transformers (generate()): host.overhead_per_decode_step_s %.4g\n", fit_hf_decode_step_s(set, fitted, fit));
  std::printf("hf-transformers-cb (generate_batch()): host.overhead_per_step_s %.4g, host.overhead_per_seq_s %.4g, "
              "kernels_per_layer.packed_attention_compute_frac %.3g\n",
              cb.per_step_s, cb.per_seq_s, cb.packed_attention_compute_frac);
  return kExitOk;
}

// --skip-tokens of calibrate grouped-gemm: positive integers, comma-separated.
std::set<std::int64_t> skip_token_counts(const std::string& cmd, const std::string& list) {
  std::set<std::int64_t> out;
  for (const std::string& t : split_commas(list)) {
    char* end = nullptr;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < 1) throw InputError(cmd, "--skip-tokens", "expected positive integers, comma-separated");
    out.insert(v);
  }
  return out;
}

// `calibrate grouped-gemm RUN.json [RUN.json ...] --hw PROFILE --fit-models a,b [--fp8]
// [--skip-tokens 256] [--fixed-from RUN.json,... --fixed-models c,d]`: fits the profile's
// grouped-GEMM table (with --fp8 the fp8 kernel's own table, on the runs' fp8 rows) on some expert
// shapes of measure.py runs and prints it with every point's error (the other shapes' points, the
// other format's and the skipped counts are held out). With --fixed-models the kernel's fixed
// time per launch is fitted too, on those shapes' rows of the --fixed-from runs (the same expert
// widths at other expert counts) beside the table's rows; their other rows are printed, held out.
int cmd_calibrate_grouped(const std::vector<std::string>& args) {
  const std::string cmd = "servesim calibrate grouped-gemm";
  cxxopts::Options opts(cmd, "Fit the grouped (MoE) GEMM efficiency table of a hardware profile");
  opts.add_options()("runs", "calibrate/independent/measure.py outputs with a moe section",
                     cxxopts::value<std::vector<std::string>>())("hw", "hardware profile the runs were measured on",
                                                                  cxxopts::value<std::string>())(
      "fit-models", "expert shapes the table is fitted on (the others are held out)", cxxopts::value<std::string>())(
      "fp8", "fit the fp8 kernel's table (fp8_frac_by_tokens_per_expert) on the fp8 rows instead of the bf16 rows")(
      "skip-tokens", "tokens-per-expert counts left out of the fit, comma-separated", cxxopts::value<std::string>())(
      "fixed-from", "runs holding the --fixed-models rows, comma-separated", cxxopts::value<std::string>())(
      "fixed-models", "expert shapes (of --fixed-from) that fit the kernel's fixed time per launch (fixed_s / fp8_fixed_s)",
      cxxopts::value<std::string>())("h,help", "show help");
  opts.parse_positional({"runs"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  for (const char* key : {"runs", "hw", "fit-models"}) {
    if (!p.count(key)) throw InputError(cmd, key == std::string("runs") ? "RUN.json" : std::string("--") + key, "required");
  }
  if (p.count("fixed-from") != p.count("fixed-models")) {
    throw InputError(cmd, p.count("fixed-from") ? "--fixed-models" : "--fixed-from", "--fixed-from and --fixed-models go together");
  }
  const auto read_points = [](const std::vector<std::string>& files) {
    std::vector<GroupedGemmPoint> out;
    for (const std::string& run : files) {
      const auto more = grouped_gemm_points(moe_section(load_json_file(run), run), run);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  };
  const auto runs = p["runs"].as<std::vector<std::string>>();
  const std::vector<GroupedGemmPoint> points = read_points(runs);
  HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), cmd, "--hw"));
  const std::vector<std::string> models = split_commas(p["fit-models"].as<std::string>());
  const std::set<std::string> fit_models(models.begin(), models.end());
  const QuantScheme quant = p.count("fp8") ? QuantScheme::fp8 : QuantScheme::none;
  const std::set<std::int64_t> skip = p.count("skip-tokens") ? skip_token_counts(cmd, p["skip-tokens"].as<std::string>())
                                                              : std::set<std::int64_t>{};
  // The fixed-time shapes' rows; the --fixed-from runs' other rows are only printed.
  std::vector<GroupedGemmPoint> fixed_points, fixed_others;
  std::set<std::string> fixed_models;
  if (p.count("fixed-models")) {
    const std::vector<std::string> names = split_commas(p["fixed-models"].as<std::string>());
    fixed_models.insert(names.begin(), names.end());
    for (const GroupedGemmPoint& g : read_points(split_commas(p["fixed-from"].as<std::string>()))) {
      (fixed_models.count(g.model) ? fixed_points : fixed_others).push_back(g);
    }
    if (fixed_points.empty()) throw InputError(cmd, "--fixed-models", "no grouped rows of these models in --fixed-from");
  }
  const double fixed_s = fixed_models.empty() ? 0.0 : fit_grouped_gemm_fixed_s(points, fit_models, fixed_points, hw, quant, skip);
  const auto table = fit_grouped_gemm_frac(points, fit_models, hw, quant, skip, fixed_s);
  if (table.empty()) throw InputError(cmd, "--fit-models", "no grouped rows of these models in " + join_names(runs));
  const bool fp8 = quant == QuantScheme::fp8;
  std::cout << "\"" << (fp8 ? "fp8_frac_by_tokens_per_expert" : "frac_by_tokens_per_expert") << "\": " << nlohmann::json(table).dump() << "\n";
  if (!fixed_models.empty()) std::printf("\"%s\": %.4g\n", fp8 ? "fp8_fixed_s" : "fixed_s", fixed_s);
  (fp8 ? hw.grouped_gemm_fp8_frac_by_tokens_per_expert : hw.grouped_gemm_frac_by_tokens_per_expert) = EfficiencyTable(table);
  (fp8 ? hw.grouped_gemm_fp8_fixed_s : hw.grouped_gemm_fixed_s) = fixed_s;
  std::printf("%-20s %-8s %8s %10s %10s %8s %s\n", "model", "proj", "tokens/e", "measured", "model", "error", "set");
  const auto print = [&](const std::vector<GroupedGemmPoint>& rows, bool fixed_rows) {
    for (const GroupedGemmPoint& g : rows) {
      const double m = grouped_gemm_model_s(g, hw);
      const bool in_format = g.quant == quant && !skip.count(g.tokens_per_expert);
      const bool fitted = in_format && (fixed_rows ? fixed_models.count(g.model) : fit_models.count(g.model)) != 0;
      std::printf("%-20s %-8s %8lld %9.4fms %9.4fms %+7.1f%% %s%s\n", g.model.c_str(), g.proj.c_str(),
                  static_cast<long long>(g.tokens_per_expert), 1e3 * g.measured_s, 1e3 * m, 100.0 * (m / g.measured_s - 1.0),
                  fitted ? (fixed_rows ? "fit (fixed time)" : "fit") : "held out", g.quant != QuantScheme::none ? " (fp8)" : "");
    }
  };
  print(points, false);
  print(fixed_points, true);
  print(fixed_others, true);
  return kExitOk;
}

// Today in UTC, YYYY-MM-DD (a fitted profile's provenance).
std::string today_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// `calibrate engine FILE... -o PROFILE.json [--base ENGINE] [--scenario S] [--set k=v]`: the host
// terms of --base fitted to the runs, the profile written, and each file's TTFT / TPOT error at
// the base, in the fit, and left out of the fit.
int cmd_calibrate_engine(const std::vector<std::string>& args) {
  const std::string cmd = "servesim calibrate engine";
  cxxopts::Options opts(cmd, "Fit an engine profile's host terms (per step, per sequence, decode step, front-end latency) to "
                             "your own benchmark runs");
  opts.add_options()("files", "benchmark results (vllm bench serve, inference-perf, GenAI-Perf), as validate --against reads them",
                     cxxopts::value<std::vector<std::string>>())("o,out", "the fitted engine profile to write", cxxopts::value<std::string>())(
      "base", "the engine profile fitted (name or path); its other settings are kept", cxxopts::value<std::string>()->default_value("vllm"))(
      "name", "the fitted profile's name (default: the base's name + -fitted)", cxxopts::value<std::string>()->default_value(""))(
      "scenario", "a scenario giving what the files do not (hardware, ...)", cxxopts::value<std::string>())(
      "set", "override a scenario key of every file's scenario: key.path=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "format", "vllm-bench, inference-perf or genai-perf (default: from each file's keys)", cxxopts::value<std::string>())(
      "date", "the date the provenance records, YYYY-MM-DD (default: today, UTC)", cxxopts::value<std::string>())(
      "no-work-limit", kNoWorkLimitHelp)("h,help", "show help");
  opts.parse_positional({"files"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("files")) throw InputError(cmd, "FILE", "required: one or more benchmark result files");
  if (!p.count("out")) throw InputError(cmd, "--out", "required");
  EngineFitOptions o;
  o.base = p["base"].as<std::string>();
  o.name = p["name"].as<std::string>();
  o.command = command_line(args);
  o.date = p.count("date") ? p["date"].as<std::string>() : today_utc();
  const bool iso_date = o.date.size() == 10 && o.date[4] == '-' && o.date[7] == '-' &&
                        std::all_of(o.date.begin(), o.date.end(), [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
  if (!iso_date) throw InputError(cmd, "--date", "must be YYYY-MM-DD, got '" + o.date + "'");
  o.work_limit = p.count("no-work-limit") == 0;
  if (p.count("scenario")) o.against.scenario_path = p["scenario"].as<std::string>();
  if (p.count("set")) o.against.overrides = p["set"].as<std::vector<std::string>>();
  if (p.count("format")) o.against.read.format = parse_bench_format(p["format"].as<std::string>(), "--format");
  const std::vector<std::string> files = p["files"].as<std::vector<std::string>>();
  const EngineFitResult r = fit_engine_profile(files, o);
  const std::string out = p["out"].as<std::string>();
  write_file(out, r.profile.dump(2) + "\n");
  std::printf("%-34s %12s %12s  %s\n", "term (host.*)", "base", "fitted", "");
  for (std::size_t j = 0; j < kHostTermKeys.size(); ++j) {
    const double unit = j == 1 ? 1e-6 : 1e-3;
    std::printf("%-34s %9.4g %s %9.4g %s  %s\n", kHostTermKeys[j], r.base[j] / unit, j == 1 ? "us" : "ms", r.fitted[j] / unit,
                j == 1 ? "us" : "ms", r.moved[j] ? "" : "(the runs do not move it: kept)");
  }
  std::printf("\n%-40s %-36s %-36s\n", "file", "TTFT error: base / fit / left out", "TPOT error: base / fit / left out");
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto cell = [&](double EngineFitScore::*err, const std::string& stat) {
      if (stat.empty()) return std::string("-");
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s %+.1f%% / %+.1f%% / ", stat.c_str(), 100 * (r.at_base[i].*err), 100 * (r.in_sample[i].*err));
      std::string s = buf;
      if (r.left_out.empty()) return s + "n/a";
      std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (r.left_out[i].*err));
      return s + buf;
    };
    std::printf("%-40s %-36s %-36s\n", files[i].c_str(), cell(&EngineFitScore::ttft_error, r.in_sample[i].ttft_statistic).c_str(),
                cell(&EngineFitScore::tpot_error, r.in_sample[i].tpot_statistic).c_str());
  }
  if (r.left_out.empty()) std::printf("(one file: no file to leave out of the fit)\n");
  std::printf("\nwrote %s (engine profile %s; --set engine.profile=%s to use it)\n", out.c_str(), r.profile["name"].get<std::string>().c_str(),
              out.c_str());
  return kExitOk;
}

// The DATA file, --hw profile (its file, read) of a subcommand that adds measured tables to a
// profile (quant-kernels, kv-decode); InputError naming what is missing.
struct ProfileUpdate {
  std::string data, hw_path;
  nlohmann::json profile;
};
ProfileUpdate read_profile_update(const cxxopts::ParseResult& p, const std::string& cmd, const char* data_name) {
  for (const char* key : {"data", "hw", "out"}) {
    if (!p.count(key)) throw InputError(cmd, key == std::string("data") ? data_name : std::string("--") + key, "required");
  }
  ProfileUpdate u;
  u.data = p["data"].as<std::string>();
  u.hw_path = resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), cmd, "--hw");
  u.profile = load_json_file(u.hw_path);
  return u;
}

// `calibrate quant-kernels QUANT.json --hw PROFILE -o OUT`: the quantized GEMM kernels measured by
// calibrate/quant/measure_quant.py (torch._scaled_mm, torch._int_mm, tinygemm) become the
// profile's calibration.quant_kernels tables, which engine profiles name (`quant_kernels`); the
// rest of the profile is kept. Prints each kernel's held-out error.
int cmd_calibrate_quant_kernels(const std::vector<std::string>& args) {
  const std::string cmd = "servesim calibrate quant-kernels";
  cxxopts::Options opts(cmd, "Fit the quantized GEMM kernel tables of a hardware profile from measure_quant.py results");
  opts.add_options()("data", "quant_kernels.json from calibrate/quant/measure_quant.py", cxxopts::value<std::string>())(
      "hw", "hardware profile name or path the kernels were measured on", cxxopts::value<std::string>())(
      "o,out", "output profile path", cxxopts::value<std::string>())("h,help", "show help");
  const IntegerFlag holdout_every{"holdout-every", "hold out every Nth M point per shape to report the fit error (0 = none)", {0, 1000}, "3"};
  holdout_every.add(opts);
  opts.parse_positional({"data"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  auto [data, hw_path, profile] = read_profile_update(p, cmd, "QUANT.json");
  const HwProfile hw = parse_hw_profile(profile, hw_path);
  const QuantKernelFit fit = fit_quant_kernels(load_json_file(data), data, hw, command_line(args),
                                               static_cast<int>(holdout_every.read(p, cmd)));
  inline_hw_tables(profile, hw_path);
  // Kernel by kernel: entries this file does not measure (published benchmarks, e.g. Marlin's) stay.
  for (const auto& [kernel, formats] : fit.tables.items()) profile["tables"]["calibration"]["quant_kernels"][kernel] = formats;
  nlohmann::json& sources = profile["provenance"]["sources"];
  const std::string source = portable_path(data);
  if (std::find(sources.begin(), sources.end(), source) == sources.end()) sources.push_back(source);
  std::map<std::string, std::vector<double>> errors;  // by kernel
  std::vector<double> all;
  for (const QuantKernelHoldout& h : fit.held) {
    const double e = std::abs(h.predicted_s / h.measured_s - 1.0);
    errors[h.kernel + " " + h.format].push_back(e);
    all.push_back(e);
  }
  if (!all.empty()) {
    profile["fit_report"]["quant_kernels_holdout_points"] = all.size();
    profile["fit_report"]["quant_kernels_holdout_median_abs_err"] = median(all);
    profile["fit_report"]["quant_kernels_holdout_worst_abs_err"] = *std::max_element(all.begin(), all.end());
  }
  const std::string wrote = write_profile(p["out"].as<std::string>(), profile);
  std::printf("wrote %s: %zu kernel tables measured on %s (%s)\n", wrote.c_str(), errors.size(), fit.gpu.c_str(), fit.date.c_str());
  std::printf("  %-30s %6s %8s %8s\n", "held-out points", "n", "median", "worst");
  for (const auto& [kernel, e] : errors) {
    std::printf("  %-30s %6zu %7.1f%% %7.1f%%\n", kernel.c_str(), e.size(), 100 * median(e), 100 * *std::max_element(e.begin(), e.end()));
  }
  return kExitOk;
}

// `calibrate kv-decode KV.json --hw PROFILE -o OUT`: the calibrator's attention_decode_kv section
// (paged decode attention over fp8/int8/int4 KV caches) becomes the profile's
// calibration.attention_decode_kv, the median time over bf16 per cache format; the rest of the
// profile is kept. Prints each format's median and spread.
int cmd_calibrate_kv_decode(const std::vector<std::string>& args) {
  const std::string cmd = "servesim calibrate kv-decode";
  cxxopts::Options opts(cmd, "Fit a hardware profile's quantized-KV decode attention ratios from the calibrator's attention_decode_kv section");
  opts.add_options()("data", "attention_decode_kv.json (or a raw.json with the section) from calibrate/run_all.sh",
                     cxxopts::value<std::string>())("hw", "hardware profile name or path the kernel was measured on",
                                                    cxxopts::value<std::string>())(
      "o,out", "output profile path", cxxopts::value<std::string>())("h,help", "show help");
  opts.parse_positional({"data"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  auto [data, hw_path, profile] = read_profile_update(p, cmd, "KV.json");
  parse_hw_profile(profile, hw_path);  // valid before rewriting
  const KvDecodeFit fit = fit_kv_decode(load_json_file(data), data, command_line(args));
  inline_hw_tables(profile, hw_path);
  // The file and the command are recorded in the table's source, not in provenance.sources, which
  // every report echoes: reports of runs that use no quantized KV cache stay byte-identical.
  profile["tables"]["calibration"]["attention_decode_kv"] = fit.table;
  const std::string wrote = write_profile(p["out"].as<std::string>(), profile);
  std::printf("wrote %s: decode attention time over bf16 measured on %s (%s), the standard kernel family\n", wrote.c_str(),
              fit.gpu.c_str(), fit.date.c_str());
  std::printf("  %-6s %6s %8s %8s %8s %14s\n", "format", "points", "median", "min", "max", "median b>=64");
  for (const KvDecodeFormatFit& f : fit.formats) {
    std::vector<double> large;
    for (std::size_t i = 0; i < f.ratios.size(); ++i) {
      if (f.batches[i] >= 64) large.push_back(f.ratios[i]);
    }
    std::printf("  %-6s %6zu %8.3f %8.3f %8.3f %14.3f\n", f.format.c_str(), f.ratios.size(), f.median,
                *std::min_element(f.ratios.begin(), f.ratios.end()), *std::max_element(f.ratios.begin(), f.ratios.end()),
                large.empty() ? 0.0 : median(large));
  }
  return kExitOk;
}

// `calibrate decode-per-query-head MMHA.json --hw PROFILE -o OUT [--form per_head] [--date D]
// [--measured-by CMD]`: the calibrator's attention_decode_mmha section (our paged decode kernel
// with one program per query head against the grouped form) becomes the profile's
// calibration.attention_decode_per_query_head, the time ratio per KV format, group, batch and
// context; the rest of the profile is kept. Prints each grid's range.
int cmd_calibrate_decode_per_query_head(const std::vector<std::string>& args) {
  const std::string cmd = "servesim calibrate decode-per-query-head";
  cxxopts::Options opts(cmd, "Fit a hardware profile's per-query-head decode attention ratios from the calibrator's attention_decode_mmha section");
  opts.add_options()("data", "attention_decode_mmha.json from calibrate/mmha_batch.sh", cxxopts::value<std::string>())(
      "hw", "hardware profile name or path the kernel was measured on", cxxopts::value<std::string>())(
      "o,out", "output profile path", cxxopts::value<std::string>())(
      "form", "the section's per-query-head form to take: per_head (the group's programs side by side, as MMHA's grid) or per_head_far (no L2 reuse)",
      cxxopts::value<std::string>()->default_value("per_head"))(
      "date", "when it was measured (recorded where the file has no date)", cxxopts::value<std::string>()->default_value(""))(
      "measured-by", "the command that measured it (recorded in the table)", cxxopts::value<std::string>()->default_value(""))(
      "h,help", "show help");
  opts.parse_positional({"data"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  auto [data, hw_path, profile] = read_profile_update(p, cmd, "MMHA.json");
  const std::string form = p["form"].as<std::string>();
  if (form == "grouped") throw InputError(cmd, "--form", "must be a per-query-head form (per_head, per_head_far), not the reference");
  parse_hw_profile(profile, hw_path);  // valid before rewriting
  const DecodePerQueryHeadFit fit = fit_decode_per_query_head(load_json_file(data), data, form, p["date"].as<std::string>(),
                                                              p["measured-by"].as<std::string>(), command_line(args));
  inline_hw_tables(profile, hw_path);
  // Recorded in the table, not in provenance.sources (which every report echoes): reports of
  // runs without a per-query-head layer stay byte-identical.
  profile["tables"]["calibration"]["attention_decode_per_query_head"] = fit.table;
  const std::string wrote = write_profile(p["out"].as<std::string>(), profile);
  std::printf("wrote %s: decode attention, %s over grouped, measured on %s (%s)\n", wrote.c_str(), form.c_str(), fit.gpu.c_str(),
              fit.table["date"].get<std::string>().c_str());
  std::printf("  %-6s %5s %7s %8s %8s %8s  %s\n", "format", "group", "points", "min", "max", "b>=256", "batches left out (a skipped point)");
  for (const DecodePerQueryHeadGridFit& g : fit.grids) {
    std::vector<double> large;
    for (std::size_t i = 0; i < g.batches.size(); ++i) {
      for (std::size_t j = 0; j < g.contexts.size(); ++j) {
        if (g.batches[i] >= 256) large.push_back(g.ratios[i * g.contexts.size() + j]);
      }
    }
    std::string dropped;
    for (long long b : g.dropped_batches) dropped += (dropped.empty() ? "" : ", ") + std::to_string(b);
    if (g.ratios.empty()) {
      std::printf("  %-6s %5d %7d %8s %8s %8s  %s (not written)\n", g.format.c_str(), g.group, 0, "-", "-", "-", dropped.c_str());
      continue;
    }
    std::printf("  %-6s %5d %7zu %8.3f %8.3f %8s  %s\n", g.format.c_str(), g.group, g.ratios.size(),
                *std::min_element(g.ratios.begin(), g.ratios.end()), *std::max_element(g.ratios.begin(), g.ratios.end()),
                large.empty() ? "-" : std::to_string(median(large)).substr(0, 5).c_str(), dropped.empty() ? "none" : dropped.c_str());
  }
  return kExitOk;
}

}  // namespace

int cmd_calibrate(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "engine") return cmd_calibrate_engine(args);
  if (!args.empty() && args[0] == "vidur") return cmd_calibrate_vidur(args);
  if (!args.empty() && args[0] == "rewrite") return cmd_calibrate_rewrite(args);
  if (!args.empty() && args[0] == "grouped-gemm") return cmd_calibrate_grouped(args);
  if (!args.empty() && args[0] == "independent") return cmd_calibrate_independent(args);
  if (!args.empty() && args[0] == "quant-kernels") return cmd_calibrate_quant_kernels(args);
  if (!args.empty() && args[0] == "kv-decode") return cmd_calibrate_kv_decode(args);
  if (!args.empty() && args[0] == "decode-per-query-head") return cmd_calibrate_decode_per_query_head(args);
  if (args.empty() || args[0] != "fit") {
    throw InputError("servesim calibrate", "",
                     "expected: calibrate fit RAW.json --name NAME -o OUT.json (or calibrate vidur ..., rewrite ..., independent ..., grouped-gemm ..., engine ..., quant-kernels ..., kv-decode ..., decode-per-query-head ...)");
  }
  cxxopts::Options opts("servesim calibrate fit", "Fit a measured hardware profile from calibrator results");
  opts.add_options()("raw", "raw.json from calibrate/run_all.sh", cxxopts::value<std::string>())(
      "name", "profile name", cxxopts::value<std::string>())("o,out", "output profile path", cxxopts::value<std::string>())(
      "base", "profile with datasheet peaks and interconnect (default: the bundled profile NAME)", cxxopts::value<std::string>())(
      "h,help", "show help");
  const IntegerFlag holdout_every{"holdout-every", "hold out every Nth GEMM point per shape to report the fit error (0 = none)", {0, 1000}, "3"};
  holdout_every.add(opts);
  opts.parse_positional({"raw"});
  const auto p = parse_args(opts, std::vector<std::string>(args.begin() + 1, args.end()));
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  for (const char* key : {"raw", "name", "out"}) {
    if (!p.count(key)) throw InputError("servesim calibrate fit", std::string("--") + key, "required");
  }
  FitOptions fit;
  fit.name = p["name"].as<std::string>();
  fit.holdout_every = static_cast<int>(holdout_every.read(p, "servesim calibrate fit"));
  fit.command = command_line(args);

  const std::string raw_path = p["raw"].as<std::string>();
  const std::string base_path = resolve_data_ref("hwprofiles", p.count("base") ? p["base"].as<std::string>() : fit.name,
                                                 "servesim calibrate fit", "--base");
  const FitSummary s = fit_profile(load_json_file(raw_path), raw_path, load_json_file(base_path), base_path, fit);
  const std::string wrote = write_profile(p["out"].as<std::string>(), s.profile);
  std::printf("wrote %s: GEMM held-out points %d, median |error| %.1f%%, worst %.1f%%\n", wrote.c_str(),
              s.gemm_holdout_points, 100 * s.gemm_holdout_median_abs_err, 100 * s.gemm_holdout_worst_abs_err);
  if (const auto& r = s.profile.at("fit_report"); r.contains("quant_gemm_holdout_points")) {
    std::printf("  weight-only GEMM held-out points %d, median |error| %.1f%%, worst %.1f%%\n",
                r["quant_gemm_holdout_points"].get<int>(), 100 * r["quant_gemm_holdout_median_abs_err"].get<double>(),
                100 * r["quant_gemm_holdout_worst_abs_err"].get<double>());
  }
  return kExitOk;
}

}  // namespace servesim::cli
