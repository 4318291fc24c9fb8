// `servesim validate [--suite S] [--data FILE,...] [--cases CASES.json] [--json]`: servesim's error
// on measurements its fits did not see. Suites: kernels and steps (the independent H200 set,
// leave-one-out fits, calibrate/results/h200/independent), public (published cases), published
// (published engine tables as whole runs, tests/validation/published_engines.json). Exit 3 when
// a stated bound is crossed. `validate --against FILE [--scenario S] [--set k=v]`: a user's own
// benchmark result (vllm bench serve, inference-perf, GenAI-Perf) against servesim's replay of it.
#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "sim/analysis/public_cases.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/calib/fit.hpp"
#include "sim/core/median.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/table_io.hpp"
#include "sim/validate/independent_set.hpp"
#include "sim/analysis/work_estimate.hpp"
#include "sim/validate/against.hpp"
#include "sim/validate/bounds.hpp"
#include "sim/validate/published_set.hpp"
#include "sim/validate/quant_set.hpp"
#include "sim/validate/vllm_runs.hpp"

namespace servesim::cli {

namespace {

constexpr int kExitBoundCrossed = 3;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

nlohmann::json row_json(const ValidationRow& r) {
  return {{"group", r.group}, {"engine", r.engine}, {"phase", r.phase}, {"model", r.model}, {"point", r.point},
          {"measured_s", r.measured}, {"predicted_s", r.predicted}, {"error_frac", r.error()}};
}

// Prints the per-(group, engine, phase) table; returns how many bounds are crossed.
int print_independent(const ValidationResult& res, bool verbose, const std::string& hw) {
  const auto bounds = validation_bounds(hw);
  const auto summary = summarize(res.rows, bounds);
  int crossed = 0;
  std::printf("%-7s %-18s %-14s %5s %8s %8s  %-17s %s\n", "group", "engine", "phase", "n", "median", "worst", "bound (med/worst)",
              "worst rows");
  for (const auto& s : summary) {
    char bound[32] = "none";
    if (s.bound) std::snprintf(bound, sizeof bound, "%.0f%% / %.0f%%", 100 * s.bound->median, 100 * s.bound->worst);
    if (!s.holds()) ++crossed;
    std::string worst;
    for (const auto& w : s.worst_rows) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s%s %+.1f%%", w.model.c_str(), w.model.empty() ? "" : " ", w.point.c_str(), 100 * w.error());
      worst += (worst.empty() ? "" : "; ") + std::string(buf);
    }
    std::printf("%-7s %-18s %-14s %5zu %7.1f%% %7.1f%%  %-13s %-3s %s\n", s.group.c_str(), s.engine.c_str(), s.phase.c_str(), s.n,
                100 * s.median_abs, 100 * s.worst_abs, bound, s.holds() ? "ok" : "OUT", worst.c_str());
  }
  if (verbose) {
    for (const auto& f : res.folds) std::printf("  fit without %s (%s): %s\n", f.held_out.c_str(), f.group.c_str(), f.text.c_str());
  }
  return crossed;
}

int run_public(const std::string& file, bool json) {
  const auto results = run_public_cases(load_json_file(file), file);
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json row = {{"id", r.id}, {"model", r.model}, {"hw", r.hw}, {"metric", r.metric}, {"note", r.note}, {"skipped", r.skipped}};
      if (!r.skipped) {
        row["published"] = r.published;
        row["predicted"] = r.predicted;
        row["error_frac"] = r.error();
      }
      out.push_back(row);
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%-6s %-12s %-15s %-22s %10s %10s %8s  %s\n", "case", "model", "hw", "metric", "published", "predicted", "error", "note");
  for (const auto& r : results) {
    if (r.skipped) {
      std::printf("%-6s %-12s %-15s %-22s %10s %10s %8s  skipped: %s\n", r.id.c_str(), r.model.c_str(), r.hw.c_str(),
                  r.metric.c_str(), "", "", "", r.note.c_str());
    } else {
      std::printf("%-6s %-12s %-15s %-22s %10.4g %10.4g %+7.1f%%  %s\n", r.id.c_str(), r.model.c_str(), r.hw.c_str(),
                  r.metric.c_str(), r.published, r.predicted, 100 * r.error(), r.note.c_str());
    }
  }
  return kExitOk;
}

// The published suite's error tables: per engine and GPU with the engine over all its rows (the
// bounded line), then per engine and weight precision, then per engine and model; skipped rows
// with their reasons. Returns how many bounds are crossed.
int print_published(const std::vector<PublishedRow>& rows, bool every_row) {
  if (every_row) {
    for (const auto& r : rows) {
      if (!r.skip.empty()) continue;
      std::printf("%-48s %-20s %-9s published %10.4g predicted %10.4g %+7.1f%%  %s\n", r.id.c_str(), r.engine.c_str(), r.gpu.c_str(),
                  r.published, r.predicted, 100 * r.error(), r.assumptions.c_str());
    }
    std::printf("\n");
  }
  int crossed = 0;
  for (PublishedSlice by : {PublishedSlice::gpu, PublishedSlice::precision, PublishedSlice::model}) {
    std::vector<ValidationRow> table = published_validation_rows(rows, by);
    if (by == PublishedSlice::gpu) {
      const auto all = published_validation_rows(rows, PublishedSlice::all);
      table.insert(table.end(), all.begin(), all.end());
    }
    std::stable_sort(table.begin(), table.end(), [](const ValidationRow& a, const ValidationRow& b) { return a.engine < b.engine; });
    std::printf("%-20s %-26s %4s %8s %8s  %-17s %s\n", "engine", slice_name(by), "n", "median", "worst", "bound (med/worst)",
                "worst row");
    for (const auto& s : summarize(table, published_bounds())) {
      char bound[32] = "";
      if (s.bound) std::snprintf(bound, sizeof bound, "%.0f%% / %.0f%% %s", 100 * s.bound->median, 100 * s.bound->worst, s.holds() ? "ok" : "OUT");
      crossed += s.holds() ? 0 : 1;
      const ValidationRow* w = s.worst_rows.empty() ? nullptr : &s.worst_rows.front();
      std::printf("%-20s %-26s %4zu %7.1f%% %7.1f%%  %-17s %s %+.1f%%\n", s.engine.c_str(), s.phase.c_str(), s.n, 100 * s.median_abs,
                  100 * s.worst_abs, bound, w ? w->point.c_str() : "", w ? 100 * w->error() : 0.0);
    }
    std::printf("\n");
  }
  std::map<std::string, int> reasons;
  std::size_t skipped = 0;
  for (const auto& r : rows) {
    if (r.skip.empty()) continue;
    reasons[r.skip] += 1;
    ++skipped;
  }
  std::printf("not simulated: %zu of %zu rows\n", skipped, rows.size());
  for (const auto& [why, n] : reasons) std::printf("  %3d  %s\n", n, why.c_str());
  return crossed;
}

// --print-scenario: the scenario file of the one published row --only selects (an id equal to it,
// else the one id containing it), so that `servesim run FILE` shows that row's run in full (batch,
// step time by op, KV use) where the suite prints one number.
int print_published_scenario(const std::string& file, PublishedOptions options) {
  if (options.only.empty()) throw InputError("servesim validate", "--print-scenario", "needs --only ID naming one published row");
  options.simulate = false;
  const auto rows = validate_published(load_json_file(file), file, options);
  const PublishedRow* exact = nullptr;
  std::vector<const PublishedRow*> matched;
  for (const PublishedRow& r : rows) {
    if (r.id == options.only) exact = &r;
    matched.push_back(&r);
  }
  if (!exact && matched.size() != 1) {
    std::string ids;
    for (std::size_t i = 0; i < matched.size() && i < 5; ++i) ids += (i ? ", " : "") + matched[i]->id;
    throw InputError("servesim validate", "--only",
                     matched.empty() ? "no row of " + file + " has an id containing '" + options.only + "'"
                                     : std::to_string(matched.size()) + " rows match '" + options.only + "' (" + ids +
                                           (matched.size() > 5 ? ", ..." : "") + "): --print-scenario needs one");
  }
  const PublishedRow& row = exact ? *exact : *matched.front();
  if (!row.skip.empty()) throw InputError("servesim validate", "--only", "row " + row.id + " is not simulated: " + row.skip);
  std::cout << row.scenario.dump(2) << "\n";
  return kExitOk;
}

// The published suite (published_set.hpp): every row run as a scenario; tables or JSON, or the
// scenario file of one row (print_scenario).
int run_published(const std::string& file, const PublishedOptions& options, bool json, bool every_row, bool print_scenario) {
  if (print_scenario) return print_published_scenario(file, options);
  const auto rows = validate_published(load_json_file(file), file, options);
  std::vector<double> errors;
  for (const auto& r : rows) {
    if (r.skip.empty()) errors.push_back(std::abs(r.error()));
  }
  const double overall = errors.empty() ? 0.0 : median(errors);
  if (!json) {
    const int crossed = print_published(rows, every_row);
    // "ok" / "FAIL" is the bounds' verdict; the suite's median target is reported on its own, met or not.
    std::printf("%s: median |error| %.1f%% over %zu rows (target %.0f%%: %s); %d of the stated bounds crossed\n", crossed ? "FAIL" : "ok",
                100 * overall, errors.size(), 100 * kPublishedMedianTarget, overall <= kPublishedMedianTarget ? "met" : "not met", crossed);
    return crossed > 0 ? kExitBoundCrossed : kExitOk;
  }
  nlohmann::json out = {{"file", file}, {"rows", nlohmann::json::array()}, {"summary", nlohmann::json::array()},
                        {"median_abs_error", overall}, {"median_target", kPublishedMedianTarget}};
  std::size_t skipped = 0;
  for (const auto& r : rows) {
    nlohmann::json j = {{"id", r.id}, {"engine", r.engine}, {"gpu", r.gpu}, {"precision", r.precision}, {"model", r.model},
                        {"metric", r.metric}, {"profile", r.profile}, {"published", r.published}};
    if (r.skip.empty()) {
      j["predicted"] = r.predicted;
      j["error_frac"] = r.error();
      j["requests"] = r.requests;
      j["assumptions"] = r.assumptions;
    } else {
      j["skipped"] = r.skip;
      ++skipped;
    }
    out["rows"].push_back(j);
  }
  out["skipped"] = skipped;
  int crossed = 0;
  for (PublishedSlice by : {PublishedSlice::gpu, PublishedSlice::precision, PublishedSlice::model, PublishedSlice::all}) {
    for (const auto& s : summarize(published_validation_rows(rows, by), published_bounds())) {
      nlohmann::json j = {{"engine", s.engine}, {"slice", slice_name(by)}, {"value", s.phase}, {"n", s.n},
                          {"median_abs_error", s.median_abs}, {"worst_abs_error", s.worst_abs}, {"holds", s.holds()}};
      if (s.bound) j["bound"] = {{"median", s.bound->median}, {"worst", s.bound->worst}};
      crossed += s.holds() ? 0 : 1;
      out["summary"].push_back(j);
    }
  }
  std::cout << out.dump(2) << "\n";
  return crossed > 0 ? kExitBoundCrossed : kExitOk;
}

// The independent suites (kernels, steps, engines) measured on `hw`, in that order.
ValidationResult independent_result(const IndependentSet& set, const HwProfile& hw, const std::string& suite) {
  ValidationResult res;
  for (const char* s : {"kernels", "steps", "engines"}) {
    if (suite != "independent" && suite != s) continue;
    const std::string name = s;
    ValidationResult part = name == "kernels" ? validate_kernels(set, hw) : name == "steps" ? validate_steps(set, hw) : validate_engines(set, hw);
    res.rows.insert(res.rows.end(), part.rows.begin(), part.rows.end());
    res.folds.insert(res.folds.end(), part.folds.begin(), part.folds.end());
  }
  return res;
}

// --bands: the independent set's bands (kernels to engines on its GPU), then the published
// tables' whole-engine throughput bands, so plan can speak for the engines people deploy.
void write_bands(const std::string& path, const ValidationResult& res, const HwProfile& hw) {
  std::vector<ErrorBand> bands = error_bands(res, hw.name);
  const std::string published = default_published_file();
  const std::vector<ErrorBand> engine_bands = published_error_bands(validate_published(load_json_file(published), published, {}));
  bands.insert(bands.end(), engine_bands.begin(), engine_bands.end());
  const VllmRunsOptions v1;
  const std::string runs = default_vllm_runs_file();
  const auto lomo = leave_one_model_out(validate_vllm_runs(load_json_file(runs), runs, v1), used_frontend_latency(v1));
  const std::vector<ErrorBand> v1_bands = vllm_runs_error_bands(lomo, v1.profile);
  bands.insert(bands.end(), v1_bands.begin(), v1_bands.end());
  write_file(path, error_bands_to_json(bands, "servesim validate --bands " + portable_path(path)).dump(2) + "\n");
}

// --json: every row, the summaries against their bounds, the folds. Returns the bounds crossed.
int print_independent_json(const ValidationResult& res, const std::vector<std::string>& files, const std::string& hw) {
  nlohmann::json out = {{"files", files}, {"rows", nlohmann::json::array()}, {"summary", nlohmann::json::array()}};
  for (const auto& r : res.rows) out["rows"].push_back(row_json(r));
  const auto bounds = validation_bounds(hw);
  int crossed = 0;
  for (const auto& s : summarize(res.rows, bounds)) {
    nlohmann::json j = {{"group", s.group}, {"engine", s.engine}, {"phase", s.phase}, {"n", s.n},
                        {"median_abs_error", s.median_abs}, {"worst_abs_error", s.worst_abs}, {"holds", s.holds()}};
    if (s.bound) j["bound"] = {{"median", s.bound->median}, {"worst", s.bound->worst}};
    crossed += s.holds() ? 0 : 1;
    out["summary"].push_back(j);
  }
  for (const auto& f : res.folds) out["folds"].push_back({{"group", f.group}, {"held_out", f.held_out}, {"fit", f.text}});
  std::cout << out.dump(2) << "\n";
  return crossed;
}

// The bound of a quantization table line (a scheme over all its rows), or null.
const ValidationBound* quant_bound(const std::vector<ValidationBound>& bounds, const QuantGroupError& g) {
  for (const ValidationBound& b : bounds) {
    if (b.engine == g.scheme && b.phase == g.regime) return &b;
  }
  return nullptr;
}

// The quantization table (quant_set.hpp, development rows): every row with --rows, then per scheme
// over all its rows (the bounded line, data/validation/bounds.json table "quant") and per batch
// regime. Returns how many bounds are crossed.
int print_quant(const std::vector<QuantRowResult>& rows, bool every_row) {
  if (every_row) {
    for (const auto& r : rows) {
      std::printf("%-36s %-16s %-14s %-11s batch %-4lld ratio published %5.2f predicted %5.2f %+7.1f%%  %s\n", r.id.c_str(),
                  r.engine.c_str(), r.gpu.c_str(), r.scheme.c_str(), static_cast<long long>(r.batch), r.published_ratio,
                  r.predicted_ratio, 100 * r.error, r.note.c_str());
    }
    std::printf("\n");
  }
  const std::vector<ValidationBound> bounds = bound_table("quant");
  std::printf("quantized / 16-bit ratio (development data, data/validation/quant_published.json)\n");
  std::printf("%-12s %-7s %4s %8s %8s  %s\n", "scheme", "batch", "n", "median", "worst", "bound (med/worst)");
  int crossed = 0;
  for (const QuantGroupError& g : quant_group_errors(rows)) {
    char bound[40] = "";
    if (const ValidationBound* b = quant_bound(bounds, g)) {
      const bool holds = g.median <= b->median && g.worst <= b->worst;
      crossed += holds ? 0 : 1;
      std::snprintf(bound, sizeof bound, "%.0f%% / %.0f%% %s", 100 * b->median, 100 * b->worst, holds ? "ok" : "OUT");
    }
    std::printf("%-12s %-7s %4zu %7.1f%% %7.1f%%  %s\n", g.scheme.c_str(), g.regime.c_str(), g.n, 100 * g.median, 100 * g.worst, bound);
  }
  return crossed;
}

int run_quant(const std::string& file, bool json, bool every_row) {
  const auto rows = run_quant_rows(load_json_file(file), file);
  if (!json) {
    const int crossed = print_quant(rows, every_row);
    std::printf("%s: %zu rows, %d of the stated bounds crossed\n", crossed ? "FAIL" : "ok", rows.size(), crossed);
    return crossed > 0 ? kExitBoundCrossed : kExitOk;
  }
  nlohmann::json out = {{"file", file}, {"rows", nlohmann::json::array()}, {"summary", nlohmann::json::array()}};
  for (const auto& r : rows) {
    out["rows"].push_back({{"id", r.id}, {"source", r.source}, {"engine", r.engine}, {"model", r.model}, {"gpu", r.gpu},
                           {"scheme", r.scheme}, {"metric", r.metric}, {"batch", r.batch}, {"regime", r.regime},
                           {"published_ratio", r.published_ratio}, {"predicted_ratio", r.predicted_ratio}, {"error_frac", r.error}});
  }
  const std::vector<ValidationBound> bounds = bound_table("quant");
  int crossed = 0;
  for (const QuantGroupError& g : quant_group_errors(rows)) {
    nlohmann::json j = {{"scheme", g.scheme}, {"regime", g.regime}, {"n", g.n}, {"median_abs_error", g.median}, {"worst_abs_error", g.worst}};
    if (const ValidationBound* b = quant_bound(bounds, g)) {
      j["bound"] = {{"median", b->median}, {"worst", b->worst}};
      j["holds"] = g.median <= b->median && g.worst <= b->worst;
      crossed += j["holds"].get<bool>() ? 0 : 1;
    }
    out["summary"].push_back(j);
  }
  std::cout << out.dump(2) << "\n";
  return crossed > 0 ? kExitBoundCrossed : kExitOk;
}

// The independent H200 set: kernels, steps, engines or all three.
int run_independent(const cxxopts::ParseResult& p, const std::string& suite) {
  const std::vector<std::string> files =
      p.count("data") ? split_list(p["data"].as<std::string>()) : independent_files_for(p["hw"].as<std::string>());
  const IndependentSet set = load_independent_set(files);
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", p["hw"].as<std::string>(), "servesim validate", "--hw"));
  const ValidationResult res = independent_result(set, hw, suite);
  if (p.count("bands")) {
    if (suite != "independent") throw InputError("servesim validate", "--bands", "needs the whole independent suite (--suite independent)");
    write_bands(p["bands"].as<std::string>(), res, hw);
  }
  if (p.count("json")) return print_independent_json(res, files, hw.name) > 0 ? kExitBoundCrossed : kExitOk;
  if (p.count("rows")) {
    for (const auto& r : res.rows) {
      std::printf("%-7s %-18s %-14s %-12s %-26s measured %10.4g s  predicted %10.4g s  %+6.1f%%\n", r.group.c_str(), r.engine.c_str(),
                  r.phase.c_str(), r.model.c_str(), r.point.c_str(), r.measured, r.predicted, 100 * r.error());
    }
  }
  int crossed = print_independent(res, true, hw.name);
  if (suite == "independent") {
    // The whole default run also prints the quantization table (--suite quant alone).
    std::printf("\n");
    crossed += print_quant(run_quant_rows(load_json_file(default_quant_rows_file()), default_quant_rows_file()), false);
  }
  std::printf("%s: %d of the stated bounds crossed (measurements: %zu files, %zu rows)\n", crossed ? "FAIL" : "ok", crossed,
              files.size(), res.rows.size());
  return crossed > 0 ? kExitBoundCrossed : kExitOk;
}

// The vLLM runs (vllm_runs.hpp): one line per stage with each percentile's error, then the median
// |error| per metric over the stages compared and the stages servesim saw saturate.
int run_vllm_runs(const std::string& file, const VllmRunsOptions& options, bool json) {
  const auto stages = validate_vllm_runs(load_json_file(file), file, options);
  std::map<std::string, std::vector<double>> errors;
  nlohmann::json out = {{"file", file}, {"profile", options.profile}, {"stages", nlohmann::json::array()}};
  int false_saturated = 0, compared = 0;
  if (!json) {
    std::printf("vLLM runs on engine profile %s (%s)\n", options.profile.c_str(), file.c_str());
    std::printf("%-48s %2s %5s", "run / stage", "tp", "req/s");
    for (const char* m : {"ttft_p50", "ttft_p90", "tpot_p50", "tpot_p90", "e2e_p50", "e2e_p90"}) std::printf(" %20s", m);
    std::printf("  queue\n");
  }
  for (const VllmRunStage& s : stages) {
    nlohmann::json j = {{"run", s.run_id}, {"stage", s.stage}, {"model", s.model}, {"tp", s.tp}, {"rate_per_s", s.rate_per_s}};
    if (!s.skip.empty()) {
      j["skipped"] = s.skip;
      if (!json) std::printf("%-48s %2lld %5.1f  skipped: %s\n", (s.run_id + " / " + s.stage).c_str(), static_cast<long long>(s.tp), s.rate_per_s, s.skip.c_str());
      out["stages"].push_back(j);
      continue;
    }
    ++compared;
    if (s.predicted_saturated && !s.measured_saturated) ++false_saturated;
    if (!json) std::printf("%-48s %2lld %5.1f", (s.run_id + " / " + s.stage).c_str(), static_cast<long long>(s.tp), s.rate_per_s);
    for (const auto& pr : s.pairs) {
      errors[pr.metric].push_back(std::abs(pr.error()));
      j[pr.metric] = {{"measured_s", pr.measured}, {"predicted_s", pr.predicted}, {"error_frac", pr.error()}};
      if (!json) std::printf(" %7.4g/%-7.4g %+5.0f%%", pr.measured, pr.predicted, 100 * pr.error());
    }
    j["predicted_saturated"] = s.predicted_saturated;
    j["measured_saturated"] = s.measured_saturated;
    j["drain_s"] = s.drain_s;
    if (!json) std::printf("  %s%s\n", s.predicted_saturated ? "grows" : "ok", s.measured_saturated ? " (vLLM's grew)" : "");
    out["stages"].push_back(j);
  }
  out["median_abs_error"] = nlohmann::json::object();
  for (auto& [metric, e] : errors) out["median_abs_error"][metric] = median(e);
  out["stages_compared"] = compared;
  out["saturated_where_vllm_kept_up"] = false_saturated;
  if (json) {
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  const double used = used_frontend_latency(options);
  std::printf("median |error| over %d stages (the profile as shipped%s):", compared,
              used > 0.0 ? "; its frontend_latency_s was fitted to these stages, so in-sample" : "");
  for (auto& [metric, e] : errors) std::printf(" %s %.1f%%", metric.c_str(), 100 * median(e));
  std::printf("\nstages servesim saturates where vLLM kept up: %d\n", false_saturated);
  if (used <= 0.0) return kExitOk;
  std::map<std::string, std::vector<double>> lomo;
  for (const VllmRunStage& s : leave_one_model_out(stages, used)) {
    if (!s.skip.empty()) continue;
    for (const auto& pr : s.pairs) lomo[pr.metric].push_back(std::abs(pr.error()));
  }
  std::printf("leave-one-model-out (each model's front-end latency fitted to the other models; development data):");
  for (auto& [metric, e] : lomo) std::printf(" %s %.1f%%", metric.c_str(), 100 * median(e));
  std::printf("\nfront-end latency fitted to every stage: %.2f ms (the profile has %.2f ms)\n", 1e3 * fit_frontend_latency(stages, used), 1e3 * used);
  return kExitOk;
}

// --against: the file's scenario simulated, its figures beside servesim's with the signed error.
int run_against(const std::string& file, const AgainstOptions& options, bool json, bool work_limit) {
  const AgainstCase c = against_case(file, options);
  if (work_limit) {
    check_work(c.scenario, 1, WorkBudget{}, file, "the file's request count, or --set workload.num_requests=N", "--no-work-limit");
  }
  const SimResult res = simulate(c.scenario);
  const std::vector<AgainstRow> rows = compare_against(c.bench, res);
  const RunMetrics& m = res.metrics;
  if (json) {
    nlohmann::json out = {{"file", file}, {"format", bench_format_name(c.bench.format)}, {"scenario", c.scenario_doc},
                          {"assumptions", c.assumptions}, {"notes", c.bench.notes}, {"rows", nlohmann::json::array()},
                          {"servesim", {{"arrived", m.arrived}, {"completed", m.completed}, {"rejected", m.rejected}, {"duration_s", ns_to_seconds(m.end_ns)}}},
                          {"measured", {{"completed", c.bench.completed}, {"failed", c.bench.failed}}}};
    for (const AgainstRow& r : rows) {
      out["rows"].push_back({{"metric", r.metric}, {"statistic", r.statistic}, {"measured", r.measured}, {"predicted", r.predicted},
                             {"error_frac", r.error()}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%s (%s) against servesim\n", file.c_str(), bench_format_name(c.bench.format));
  for (const std::string& a : c.assumptions) std::printf("  %s\n", a.c_str());
  for (const std::string& n : c.bench.notes) std::printf("  note: %s\n", n.c_str());
  std::printf("  requests: measured %lld completed, %lld failed; servesim %lld completed, %lld rejected\n\n",
              static_cast<long long>(c.bench.completed), static_cast<long long>(c.bench.failed), static_cast<long long>(m.completed),
              static_cast<long long>(m.rejected));
  std::printf("%-10s %-20s %12s %12s %8s\n", "metric", "statistic", "measured", "servesim", "error");
  for (const AgainstRow& r : rows) {
    const bool latency = r.metric != "throughput";
    const double scale = latency ? 1e3 : 1.0;
    std::printf("%-10s %-20s %9.4g%s %9.4g%s %+7.1f%%\n", r.metric.c_str(), r.statistic.c_str(), scale * r.measured, latency ? " ms" : "   ",
                scale * r.predicted, latency ? " ms" : "   ", 100 * r.error());
  }
  std::printf("\nerror = (servesim - measured) / measured; throughput per second. One file is one comparison: "
              "docs/validation.md (\"Against your own server\") says what is compared and how.\n");
  return kExitOk;
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim validate",
                        "servesim's error on measurements its fits did not see; exit 3 when a stated bound is crossed");
  opts.add_options()("suite", "kernels, steps, engines, independent (all three, then the quantization table), public, published, vllm-runs or quant", cxxopts::value<std::string>()->default_value("independent"))(
      "data", "independent run files, comma-separated (default: calibrate/results/h200/independent/run_*.json)",
      cxxopts::value<std::string>())("hw", "hardware profile the independent set was measured on",
                                      cxxopts::value<std::string>()->default_value("h200-sxm"))(
      "cases", "published cases file for --suite public (default: the bundled data/validation/public_cases.json)",
      cxxopts::value<std::string>())(
      "bands", "also write the error bands plan shows (data/validation/error_bands.json) to this path: the independent suite's and the published tables' (runs those too)",
      cxxopts::value<std::string>())(
      "published", "published engine rows for --suite published (default: tests/validation/published_engines.json)",
      cxxopts::value<std::string>())(
      "only", "--suite published / vllm-runs: only rows (runs) whose id contains this", cxxopts::value<std::string>()->default_value(""))(
      "quant-rows", "published quantized-vs-16-bit rows for --suite quant (default: data/validation/quant_published.json)",
      cxxopts::value<std::string>())(
      "runs", "real vLLM runs for --suite vllm-runs (default: data/validation/vllm_v1_runs.json)", cxxopts::value<std::string>())(
      "profile", "--suite vllm-runs: the engine profile to replay the runs on", cxxopts::value<std::string>()->default_value("vllm"))(
      "rows", "print every row, not only the summary")("json", "print JSON")(
      "against", "a benchmark result of your own server (vllm bench serve --save-result JSON, inference-perf "
                 "*_lifecycle_metrics.json, GenAI-Perf profile_export_genai_perf.json) to replay and compare",
      cxxopts::value<std::string>())(
      "scenario", "--against: a scenario giving what the file does not (hardware, engine, ...)", cxxopts::value<std::string>())(
      "set", "--against: override a scenario key: key.path=value (repeatable; wins over the file)",
      cxxopts::value<std::vector<std::string>>())(
      "format", "--against: vllm-bench, inference-perf or genai-perf (default: from the file's keys)", cxxopts::value<std::string>())(
      "no-work-limit", kNoWorkLimitHelp)("print-scenario", "--suite published --only ID: print that row's scenario file (servesim run FILE runs it)")("h,help", "show help");
  const IntegerFlag events_per_token{"events-per-token", "--against, inference-perf: stream events its client stamped per token "
                                     "(0: from the file; 2: inference-perf before v0.3 against vLLM)", {0, 2}, "0"};
  events_per_token.add(opts);
  const IntegerFlag max_requests{"max-requests", "--suite published: at most this many requests per run (0: the published count)",
                                 {0, 1e9}, "0"};
  max_requests.add(opts);
  opts.parse_positional({"cases"});
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  const std::string suite = p.count("cases") && !p["suite"].count() ? "public" : p["suite"].as<std::string>();
  if (p.count("print-scenario") && (p.count("against") || suite != "published")) {
    throw InputError("servesim validate", "--print-scenario", "only read with --suite published");
  }
  if (p.count("against")) {
    AgainstOptions options;
    if (p.count("scenario")) options.scenario_path = p["scenario"].as<std::string>();
    if (p.count("set")) options.overrides = p["set"].as<std::vector<std::string>>();
    if (p.count("format")) options.read.format = parse_bench_format(p["format"].as<std::string>(), "--format");
    options.read.events_per_token = static_cast<int>(events_per_token.read(p, "servesim validate"));
    return run_against(p["against"].as<std::string>(), options, p.count("json") > 0, p.count("no-work-limit") == 0);
  }
  for (const char* flag : {"scenario", "set", "format"}) {
    if (p.count(flag)) throw InputError("servesim validate", std::string("--") + flag, "only read with --against FILE");
  }
  if (suite == "public") {
    return run_public(p.count("cases") ? p["cases"].as<std::string>() : data_dir() + "/data/validation/public_cases.json",
                      p.count("json") > 0);
  }
  if (suite == "vllm-runs") {
    VllmRunsOptions options;
    options.profile = p["profile"].as<std::string>();
    options.only = p["only"].as<std::string>();
    return run_vllm_runs(p.count("runs") ? p["runs"].as<std::string>() : default_vllm_runs_file(), options, p.count("json") > 0);
  }
  if (suite == "quant") {
    return run_quant(p.count("quant-rows") ? p["quant-rows"].as<std::string>() : default_quant_rows_file(), p.count("json") > 0,
                     p.count("rows") > 0);
  }
  if (suite == "published") {
    PublishedOptions options;
    options.max_requests = max_requests.read(p, "servesim validate");
    options.only = p["only"].as<std::string>();
    return run_published(p.count("published") ? p["published"].as<std::string>() : default_published_file(), options,
                         p.count("json") > 0, p.count("rows") > 0, p.count("print-scenario") > 0);
  }
  if (suite != "kernels" && suite != "steps" && suite != "engines" && suite != "independent") {
    throw InputError("servesim validate", "--suite", "must be kernels, steps, engines, independent, public, published, vllm-runs or quant, got '" + suite + "'");
  }
  return run_independent(p, suite);
}

}  // namespace servesim::cli
