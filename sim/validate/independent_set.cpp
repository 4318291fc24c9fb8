// Leave-one-out validation against the independent H200 set; see independent_set.hpp.
#include "sim/validate/independent_set.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "sim/calib/fit.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/simulation.hpp"

#include <unistd.h>

namespace servesim {

namespace {

std::string point_label(const char* a, double x, const char* b, double y) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s=%.0f %s=%.0f", a, x, b, y);
  return buf;
}

// GEMM rows: the profile's tables come from our calibrator (cuBLASLt), these rows from torch; a
// row's shape, and every other shape of the models it belongs to, leave the tables first.
void add_gemm_rows(const IndependentSet& set, const HwProfile& hw, ValidationResult& out) {
  std::map<std::string, std::set<GemmShape>> model_shapes;
  for (const std::string& name : independent_dense_models()) {
    model_shapes[name] = gemm_shapes_of(load_model(resolve_data_ref("models", name, "servesim validate", "model")));
  }
  std::map<std::set<GemmShape>, HwProfile> folds;
  // (section, dtype, phase): torch's fp8 default accumulates in full precision; the calibrator and
  // the serving engines' fp8 kernels use fast accumulation (gemm_fp8_fast, run d).
  const std::tuple<const char*, const char*, const char*> sets[] = {
      {"gemm", "bf16", "gemm-bf16"}, {"gemm_fp8_fast", "fp8", "gemm-fp8"}, {"gemm", "fp8", "gemm-fp8-torch"}};
  for (const auto& [section, dtype, phase] : sets) {
    if (!set.has(section)) continue;
    const nlohmann::json& gemm = set.section(section);
    const std::string& gfile = set.file(section);
    const nlohmann::json& rows = row_array(gemm, dtype, gfile, section);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string where = std::string(section) + "." + dtype + "[" + std::to_string(i) + "]";
      std::set<GemmShape> held;
      for (const auto& role : rows[i].value("roles", nlohmann::json::array())) {
        const std::string model = role.get<std::string>().substr(0, role.get<std::string>().find(':'));
        if (model_shapes.count(model)) held.insert(model_shapes[model].begin(), model_shapes[model].end());
      }
      held.insert({static_cast<std::int64_t>(row_positive(rows[i], "n", gfile, where)), static_cast<std::int64_t>(row_positive(rows[i], "k", gfile, where))});
      auto fold = folds.find(held);
      if (fold == folds.end()) fold = folds.emplace(held, without_gemm_shapes(hw, held)).first;
      const HwProfile& h = fold->second;
      const double m = row_positive(rows[i], "m", gfile, where), n = row_positive(rows[i], "n", gfile, where);
      const double k = row_positive(rows[i], "k", gfile, where);
      // fp8 rows ran at m_run (torch._scaled_mm pads small M to 16 where it must).
      const double m_run = rows[i].contains("m_run") ? row_positive(rows[i], "m_run", gfile, where) : m;
      const GemmQuery g = time_gemm(h, dtype, static_cast<std::int64_t>(m_run), static_cast<std::int64_t>(n),
                                    static_cast<std::int64_t>(k), 128, "servesim validate");
      char pt[96];
      std::snprintf(pt, sizeof pt, "M=%.0f N=%.0f K=%.0f", m, n, k);
      out.rows.push_back({"kernel", "torch", phase, "", pt, row_positive(rows[i], "time_s", gfile, where),
                          g.time.time_s});
    }
  }
}

// The rows of layout `l` in one attention section, timed with `h`.
void add_sdpa_layout_rows(const AttentionSection& sec, const HeadLayout& l, const std::string& label, const HwProfile& h,
                          const std::string& phase_suffix, ValidationResult& out) {
  ModelSpec m;
  m.num_attention_heads = l.q_heads;
  m.num_kv_heads = l.kv_heads;
  m.head_dim = l.head_dim;
  m.num_layers = 1;
  m.hidden_size = l.q_heads * l.head_dim;
  KernelPlan plan;
  plan.attention_kernel = AttentionKernel::sdpa;
  const Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  for (const char* phase : {"decode", "prefill"}) {
    const nlohmann::json& rows = row_array(*sec.rows, phase, sec.file, sec.name);
    const bool decode = std::string(phase) == "decode";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string where = sec.name + "." + phase + "[" + std::to_string(i) + "]";
      if (!(HeadLayout{rows[i].value("hq", std::int64_t{0}), rows[i].value("hkv", std::int64_t{0}),
                       rows[i].value("head_dim", std::int64_t{0})} == l)) {
        continue;
      }
      const double b = row_positive(rows[i], "batch", sec.file, where);
      const double len = row_positive(rows[i], decode ? "context" : "prompt", sec.file, where);
      BatchShape shape;
      for (int s = 0; s < static_cast<int>(b); ++s) {
        // A decode row attends over `context` tokens: add_decode(c) counts c + 1.
        if (decode) shape.add_decode(static_cast<std::int64_t>(len) - 1);
        else shape.add_prefill(static_cast<std::int64_t>(len), 0, false);
      }
      Op op{phase, decode ? OpKind::attention_decode : OpKind::attention_prefill};
      std::vector<Op> ops;
      build_iteration_ops(m, shape, p, ops, plan);
      for (const Op& o : ops) {
        if (o.kind == op.kind) op = o;
      }
      out.rows.push_back({"kernel", "torch", std::string("sdpa-") + phase + phase_suffix, label, point_label("B", b, decode ? "C" : "S", len),
                          row_positive(rows[i], "time_s", sec.file, where), estimate(op, h, Dtype::bf16).time_s});
    }
  }
}

// SDPA attention rows, leave one head layout out: each model layout's rows timed with the SDPA
// tables fitted to the other layouts (of every attention section: a layout measured twice is left
// out whole; the calibrator's sweep is always in the fit).
void add_sdpa_rows(const IndependentSet& set, const HwProfile& hw, ValidationResult& out) {
  const std::vector<AttentionSection> sections = attention_sections(set);
  std::set<HeadLayout> layouts;
  for (const AttentionSection& sec : sections) {
    if (sec.sweep()) continue;
    for (const char* phase : {"decode", "prefill"}) {
      for (const auto& r : row_array(*sec.rows, phase, sec.file, sec.name)) {
        layouts.insert({r.value("hq", std::int64_t{0}), r.value("hkv", std::int64_t{0}), r.value("head_dim", std::int64_t{0})});
      }
    }
  }
  // The validation models' layouts (section `attention`) are reported apart from the other head
  // dimensions (run f), whose prefill the pooled table does not describe (head_dim 64 and 256
  // run kernels of their own) and whose decode grids are then fitted to a sweep alone.
  std::set<HeadLayout> model_layouts;
  for (const AttentionSection& sec : sections) {
    if (sec.name != "attention") continue;
    for (const auto& r : row_array(*sec.rows, "decode", sec.file, sec.name)) {
      model_layouts.insert({r.value("hq", std::int64_t{0}), r.value("hkv", std::int64_t{0}), r.value("head_dim", std::int64_t{0})});
    }
  }
  for (const HeadLayout& l : layouts) {
    const HwProfile h = with_sdpa_fit(set, hw, {l});
    const std::string suffix = model_layouts.count(l) ? "" : " (other head dims)";
    char label[48];
    std::snprintf(label, sizeof label, "%lld/%lld/%lld", static_cast<long long>(l.q_heads), static_cast<long long>(l.kv_heads),
                  static_cast<long long>(l.head_dim));
    out.folds.push_back({"kernel", label, "SDPA tables fitted to the other layouts"});
    for (const AttentionSection& sec : sections) {
      if (!sec.sweep()) add_sdpa_layout_rows(sec, l, label, h, suffix, out);
    }
  }
}
}  // namespace

ValidationResult validate_kernels(const IndependentSet& set, const HwProfile& hw) {
  ValidationResult out;
  add_gemm_rows(set, hw, out);
  add_sdpa_rows(set, hw, out);
  return out;
}

ValidationResult validate_steps(const IndependentSet& set, const HwProfile& hw) {
  ValidationResult out;
  for (const std::string& held : independent_dense_models()) {
    const ModelSpec model = independent_query(held, hw, nullptr).model;
    // The held-out model's attention layout and GEMM shapes leave the tables, and the engine
    // parameters are fitted to the other models.
    const HwProfile h = with_sdpa_fit(set, without_gemm_shapes(hw, gemm_shapes_of(model)), {layout_of(model)});
    const TorchEngineFit fit = fit_torch_engines(set, h, {held});
    out.folds.push_back({"step", held, fit.describe() + " (fitted to the other four)"});
    StepQuery graph = independent_query(held, h, "torch-cudagraph");
    StepQuery eager = independent_query(held, h, "torch-eager");
    apply_torch_fit(graph, fit);
    apply_torch_fit(eager, fit);

    const std::string sec = "model_" + held;
    const std::string& file = set.file(sec);
    for (const auto& r : row_array(set.section(sec), "decode", file, sec)) {
      const double b = row_positive(r, "batch", file, sec + ".decode"), c = row_positive(r, "context", file, sec + ".decode");
      const TimedStep t = time_decode(graph, static_cast<std::int64_t>(b), static_cast<std::int64_t>(c), false);
      out.rows.push_back({"step", "torch-cudagraph", "decode", held, point_label("B", b, "C", c),
                          row_positive(r, "graph_s", file, sec + ".decode"), t.step.time_s});
    }
    for (const auto& r : row_array(set.section(sec), "prefill", file, sec)) {
      const double b = row_positive(r, "batch", file, sec + ".prefill"), s = row_positive(r, "prompt", file, sec + ".prefill");
      const TimedStep t = time_prefill(graph, static_cast<std::int64_t>(b), static_cast<std::int64_t>(s), 0);
      out.rows.push_back({"step", "torch (GPU time)", "prefill", held, point_label("B", b, "S", s),
                          row_positive(r, "graph_s", file, sec + ".prefill"), t.step.gpu_s});
    }
    const std::string esec = "eager_" + held;
    if (!set.has(esec)) continue;
    const std::string& efile = set.file(esec);
    for (const char* phase : {"decode", "prefill"}) {
      const bool decode = std::string(phase) == "decode";
      for (const auto& r : row_array(set.section(esec), phase, efile, esec)) {
        const std::string where = esec + "." + phase;
        const double b = row_positive(r, "batch", efile, where), x = row_positive(r, decode ? "context" : "prompt", efile, where);
        const TimedStep t = decode ? time_decode(eager, static_cast<std::int64_t>(b), static_cast<std::int64_t>(x), true)
                                   : time_prefill(eager, static_cast<std::int64_t>(b), static_cast<std::int64_t>(x), 0);
        out.rows.push_back({"step", "torch-eager", phase, held, point_label("B", b, decode ? "C" : "S", x),
                            row_positive(r, "eager_s", efile, where), t.step.time_s});
      }
    }
  }
  return out;
}

namespace {

// p50 TTFT, TPOT and end-to-end latency of a generate_batch run, each request from its creation.
// The mean TTFT too: all requests arrive at once, so first tokens come in a few prefill groups and
// the p50 of an even request count can fall on the edge between two groups (which requests the
// scheduler took first decides it: see simulated_cb_latency); the mean weighs every group.
struct CbLatency {
  double ttft = 0, tpot = 0, e2e = 0, ttft_mean = 0;
};
CbLatency measured_cb_latency(const nlohmann::json& run, const std::string& file, const std::string& where) {
  std::vector<double> ttft, tpot, e2e;
  const auto& reqs = row_array(run, "per_request", file, where);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const std::string at = where + ".per_request[" + std::to_string(i) + "]";
    const auto& t = row_array(reqs[i], "token_times_s", file, at);
    const double created = reqs[i].value("created_s", 0.0);
    if (t.size() < 2) throw InputError(file, at + ".token_times_s", "needs at least two tokens");
    ttft.push_back(t.front().get<double>() - created);
    tpot.push_back((t.back().get<double>() - t.front().get<double>()) / static_cast<double>(t.size() - 1));
    e2e.push_back(row_positive(reqs[i], "end_s", file, at) - created);
  }
  const double ttft_mean = std::accumulate(ttft.begin(), ttft.end(), 0.0) / static_cast<double>(ttft.size());
  return {median(ttft), median(tpot), median(e2e), ttft_mean};
}

// The run simulated: its prompts and output lengths, arriving as the engine created them, the engine
// profile with the fold's fitted host costs, on the fold's hardware profile. generate_batch hands
// the requests to its FIFO scheduler in an order of its own (not the list's: a hash order that
// changes per process), recorded as each request's created_s within the same millisecond, and its
// first step takes them all at once. The trace lists them in that order, all at t = 0 (the
// offsets themselves would let servesim start a step before the last one arrived), so servesim's
// first prefill takes the same requests as the engine's.
CbLatency simulated_cb_latency(const nlohmann::json& run, const std::string& file, const std::string& where,
                               const std::string& model, const HwProfile& hw, const TorchEngineFit& torch, const HfCbFit& host) {
  namespace fs = std::filesystem;
  static int serial = 0;
  const fs::path trace = fs::temp_directory_path() / ("servesim-validate-cb-" + std::to_string(::getpid()) + "-" +
                                                      std::to_string(serial++) + ".jsonl");
  {
    std::ofstream out(trace);
    const double n = row_positive(run, "new_tokens", file, where);
    const auto& prompts = row_array(run, "prompts", file, where);
    const auto& reqs = row_array(run, "per_request", file, where);
    if (reqs.size() != prompts.size()) throw InputError(file, where + ".per_request", "needs one entry per prompt");
    std::vector<std::pair<double, std::size_t>> order;  // (created_s, request index), in creation order
    for (std::size_t i = 0; i < reqs.size(); ++i) order.emplace_back(reqs[i].value("created_s", 0.0), i);
    std::stable_sort(order.begin(), order.end());
    for (const auto& [created_s, i] : order) {
      out << nlohmann::json{{"arrival_s", 0.0},
                            {"prompt_tokens", prompts[i].get<std::int64_t>()},
                            {"output_tokens", static_cast<std::int64_t>(n)}}
                 .dump()
          << "\n";
    }
    if (!out) throw InputError(trace.string(), "", "cannot write the validation trace");
  }
  const nlohmann::json doc = {
      {"schema", "servesim-scenario/1"},
      {"name", "validate-hf-cb"},
      {"seed", 1},
      {"model", model},
      {"hardware", hw.name},
      {"engine", {{"profile", "hf-transformers-cb"}, {"max_num_seqs", 1024}}},
      {"workload",
       {{"trace", {{"path", trace.string()}, {"format", "jsonl"}}},
        {"arrival", {{"impl", "trace"}}},
        {"prompt_tokens", {{"impl", "trace"}}},
        {"output_tokens", {{"impl", "trace"}}}}}};
  Scenario s = parse_scenario(doc, "servesim validate");
  s.hw = hw;
  s.engine.profile.kernels.elementwise_bw_frac = torch.elementwise_bw_frac;
  s.engine.launch.dispatch_s_per_kernel = torch.dispatch_s_per_kernel;
  s.engine.launch.host_overhead_per_step_s = host.per_step_s;
  s.engine.launch.host_overhead_per_seq_s = host.per_seq_s;
  s.engine.profile.kernels.packed_attention_compute_frac = host.packed_attention_compute_frac;
  const nlohmann::json report = make_report(s, simulate(s));
  std::error_code ec;
  fs::remove(trace, ec);
  const auto& lat = report.at("latency");
  return {lat.at("ttft_s").at("p50").get<double>(), lat.at("tpot_s").at("p50").get<double>(),
          lat.at("e2e_s").at("p50").get<double>(), lat.at("ttft_s").at("mean").get<double>()};
}

// generate_batch runs of model `held` (every run, and per request count the median over its
// runs: a host event in one run, such as a 1.2 s stall before the first step, shows in the
// run's rows and is outvoted by the repeats in the median's).
// Returns the note on the model's widest run-to-run TPOT spread ("" without runs).
std::string add_cb_rows(const IndependentSet& set, const std::string& held, const HwProfile& h, const TorchEngineFit& torch,
                        const HfCbFit& cb, ValidationResult& out) {
  std::map<double, std::vector<std::pair<CbLatency, CbLatency>>> by_requests;  // requests -> (measured, predicted)
  for (const std::string& sec : engine_run_sections(set, "hf_cb")) {
    const std::string& file = set.file(sec);
    const auto& runs = row_array(set.section(sec), "runs", file, sec);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].value("model", "") != held) continue;
      const std::string where = sec + ".runs[" + std::to_string(i) + "]";
      const double r = row_positive(runs[i], "requests", file, where);
      const CbLatency m = measured_cb_latency(runs[i], file, where);
      const CbLatency p = simulated_cb_latency(runs[i], file, where, held, h, torch, cb);
      by_requests[r].emplace_back(m, p);
      char pt[64];
      const char* kind = sec == "hf_cb" ? "run" : sec == "hf_cb_repeats" ? "repeat" : sec == "hf_cb_warm" ? "warm" : "series";
      std::snprintf(pt, sizeof pt, "R=%.0f (%s %zu)", r, kind, i);
      out.rows.push_back({"engine", "hf-transformers-cb", "ttft-p50", held, pt, m.ttft, p.ttft});
      out.rows.push_back({"engine", "hf-transformers-cb", "ttft-mean", held, pt, m.ttft_mean, p.ttft_mean});
      out.rows.push_back({"engine", "hf-transformers-cb", "tpot-p50", held, pt, m.tpot, p.tpot});
      out.rows.push_back({"engine", "hf-transformers-cb", "e2e-p50", held, pt, m.e2e, p.e2e});
    }
  }
  // The run-to-run spread of the measured TPOT (the same requests, one process per model): the
  // widest count's, returned for the fold's note, since it bounds what any single-number
  // prediction can reach on single runs.
  double widest_ratio = 0.0, widest_lo_s = 0.0, widest_hi_s = 0.0, widest_requests = 0.0;
  for (const auto& entry : by_requests) {
    const auto& pairs = entry.second;  // not a structured binding: clang 14 refuses to capture those
    const auto [lo, hi] = std::minmax_element(pairs.begin(), pairs.end(),
                                              [](const auto& a, const auto& b) { return a.first.tpot < b.first.tpot; });
    if (hi->first.tpot / lo->first.tpot > widest_ratio) {
      widest_ratio = hi->first.tpot / lo->first.tpot;
      widest_lo_s = lo->first.tpot, widest_hi_s = hi->first.tpot, widest_requests = entry.first;
    }
    char pt[64];
    std::snprintf(pt, sizeof pt, "R=%.0f (%zu runs)", entry.first, pairs.size());
    const auto med = [&](double CbLatency::*field, bool measured) {
      std::vector<double> v;
      for (const auto& [m, p] : pairs) v.push_back(measured ? m.*field : p.*field);
      return median(v);
    };
    for (const auto& [phase, field] : {std::pair<const char*, double CbLatency::*>{"ttft-p50", &CbLatency::ttft},
                                       {"tpot-p50", &CbLatency::tpot}, {"e2e-p50", &CbLatency::e2e}}) {
      out.rows.push_back({"engine", "hf-transformers-cb", std::string(phase) + " (median of runs)", held, pt, med(field, true),
                          med(field, false)});
    }
  }
  if (widest_ratio <= 0.0) return "";
  char note[160];
  std::snprintf(note, sizeof note, "; its generate_batch repeats (same requests) measure TPOT p50 %.1f-%.1f ms at R=%.0f (%.2fx)",
                widest_lo_s * 1e3, widest_hi_s * 1e3, widest_requests, widest_ratio);
  return note;
}

}  // namespace

ValidationResult validate_engines(const IndependentSet& set, const HwProfile& hw) {
  ValidationResult out;
  std::set<std::string> models;
  for (const char* sec : {"hf_generate", "hf_cb"}) {
    for (const std::string& name : engine_run_sections(set, sec)) {
      for (const auto& r : row_array(set.section(name), "runs", set.file(name), name)) models.insert(r.value("model", ""));
    }
  }
  for (const std::string& held : models) {
    const ModelSpec model = independent_query(held, hw, nullptr).model;
    HwProfile h = with_sdpa_fit(set, without_gemm_shapes(hw, gemm_shapes_of(model)), {layout_of(model)});
    const TorchEngineFit torch = fit_torch_engines(set, h, {held});
    h.dependent_kernel_gap_s = torch.kernel_gap_s;
    const double decode_step_s = fit_hf_decode_step_s(set, h, torch, {held});
    const HfCbFit cb = fit_hf_cb(set, h, torch, {held});
    if (set.has("hf_generate")) {
      const std::string& file = set.file("hf_generate");
      StepQuery q = independent_query(held, h, "hf-transformers");
      apply_torch_fit(q, torch);
      q.engine->launch.host_overhead_per_decode_step_s = decode_step_s;
      const auto& runs = row_array(set.section("hf_generate"), "runs", file, "hf_generate");
      for (std::size_t i = 0; i < runs.size(); ++i) {
        if (runs[i].value("model", "") != held) continue;
        const std::string where = "hf_generate.runs[" + std::to_string(i) + "]";
        const double b = row_positive(runs[i], "batch", file, where), p = row_positive(runs[i], "prompt", file, where);
        const double n = row_positive(runs[i], "new_tokens", file, where);
        const auto bi = static_cast<std::int64_t>(b), pi = static_cast<std::int64_t>(p);
        out.rows.push_back({"engine", "hf-transformers", "ttft", held, point_label("B", b, "P", p), row_positive(runs[i], "ttft_s", file, where),
                            time_prefill(q, bi, pi, 0).step.time_s});
        out.rows.push_back({"engine", "hf-transformers", "tpot", held, point_label("B", b, "P", p),
                            row_positive(runs[i], "tpot_median_s", file, where),
                            time_decode(q, bi, static_cast<std::int64_t>(p + n / 2.0), true).step.time_s});
      }
    }
    const std::string spread = add_cb_rows(set, held, h, torch, cb, out);
    char note[320];
    std::snprintf(note, sizeof note,
                  "generate() decode-step host %.1f ms; generate_batch host %.1f ms per step + %.3f ms per sequence, "
                  "packed attention at %.2f of the SDPA prefill rate (fitted to the other models)",
                  decode_step_s * 1e3, cb.per_step_s * 1e3, cb.per_seq_s * 1e3, cb.packed_attention_compute_frac);
    out.folds.push_back({"engine", held, note + spread});
  }
  return out;
}

std::vector<ErrorBand> error_bands(const ValidationResult& res, const std::string& hw) {
  std::vector<ErrorBand> out;
  for (const ValidationSummary& s : summarize(res.rows, validation_bounds(hw))) {
    if (s.group == "kernel" || s.engine.find(' ') != std::string::npos) continue;
    out.push_back({hw, s.engine, s.phase, s.n, s.median_abs, s.worst_abs,
                   "independent " + hw + " set (calibrate/results/h200/independent), " + s.group +
                       " rows, each predicted by a fit without its model",
                   ""});
  }
  return out;
}

// The bounds of each GPU's set are data/validation/bounds.json's table "independent/<gpu>", with
// why each is what it is (the H100 set's were set before its first run, 2026-12-06).
std::vector<ValidationBound> validation_bounds(const std::string& hw) { return bound_table("independent/" + hw); }

std::vector<ValidationSummary> summarize(const std::vector<ValidationRow>& rows, const std::vector<ValidationBound>& bounds) {
  std::vector<ValidationSummary> out;
  std::vector<std::vector<ValidationRow>> groups;
  for (const ValidationRow& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ValidationSummary& s) {
      return s.group == r.group && s.engine == r.engine && s.phase == r.phase;
    });
    if (it == out.end()) {
      out.push_back(ValidationSummary{r.group, r.engine, r.phase, 0, 0.0, 0.0, std::nullopt, {}});
      groups.emplace_back();
      it = out.end() - 1;
    }
    groups[static_cast<std::size_t>(it - out.begin())].push_back(r);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& g = groups[i];
    std::vector<double> errs;
    for (const auto& r : g) errs.push_back(std::abs(r.error()));
    out[i].n = g.size();
    out[i].median_abs = median(errs);
    out[i].worst_abs = *std::max_element(errs.begin(), errs.end());
    std::sort(g.begin(), g.end(), [](const ValidationRow& a, const ValidationRow& b) { return std::abs(a.error()) > std::abs(b.error()); });
    out[i].worst_rows.assign(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(3, g.size())));
    for (const auto& b : bounds) {
      if (b.group == out[i].group && b.engine == out[i].engine && b.phase == out[i].phase) out[i].bound = b;
    }
  }
  return out;
}

}  // namespace servesim
