// Leave-one-out validation against the independent H200 set; see independent_set.hpp.
#include "sim/validate/independent_set.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "sim/analysis/step_query.hpp"
#include "sim/calib/fit.hpp"
#include "sim/calib/independent.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"

namespace servesim {

namespace {

// The dense models the set times end to end (sections model_<name>, eager_<name>).
const std::vector<std::string>& dense_models() {
  static const std::vector<std::string> names = {"llama-3-8b", "qwen2-7b", "phi-3-mini", "llama-2-13b", "mistral-7b"};
  return names;
}

double positive(const nlohmann::json& row, const char* key, const std::string& file, const std::string& where) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_number() || !(it->get<double>() > 0.0) || !std::isfinite(it->get<double>())) {
    throw InputError(file, where + "." + key, "missing or not a positive number");
  }
  return it->get<double>();
}

const nlohmann::json& array_of(const nlohmann::json& section, const char* key, const std::string& file, const std::string& where) {
  const auto it = section.find(key);
  if (it == section.end() || !it->is_array()) throw InputError(file, where + "." + key, "missing or not an array");
  return *it;
}

std::string point_label(const char* a, double x, const char* b, double y) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s=%.0f %s=%.0f", a, x, b, y);
  return buf;
}

StepQuery query_for(const std::string& model, const HwProfile& hw, const char* engine) {
  StepQuery q;
  q.model = load_model(resolve_data_ref("models", model, "servesim validate", "model"));
  q.hw = hw;
  q.precision = Precision{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  if (engine) q.engine = load_engine_profile(engine, "servesim validate", "engine");
  return q;
}

HeadLayout layout_of(const ModelSpec& m) { return {m.num_attention_heads, m.num_kv_heads, m.head_dim}; }

// `hw` with SDPA tables fitted to every head layout but `held_out`.
HwProfile with_sdpa_fit(const IndependentSet& set, const HwProfile& hw, const HeadLayout& held_out) {
  HwProfile h = hw;
  const std::string& file = set.file_of.at("attention");
  const nlohmann::json tables = fit_sdpa_attention(set.section("attention"), file, hw, {held_out});
  h.attention_kernel_tables[static_cast<std::size_t>(AttentionKernel::sdpa)] =
      parse_attention_kernel_tables(tables, file, "attention (fit)");
  return h;
}

double median_of(std::vector<double> v) { return median(std::move(v)); }

bool is_streaming(OpKind k) {
  return k == OpKind::embedding || k == OpKind::norm || k == OpKind::rope || k == OpKind::kv_write ||
         k == OpKind::elementwise || k == OpKind::sampler;
}

// GPU time of a torch-profiler kernel list (a `profiles` entry) spent outside GEMMs and attention:
// what the engine's streaming ops take. Kernels are told apart by name (cuBLAS nvjet/gemm/splitK,
// cuDNN/flash SDPA); the list holds the largest kernels and `gpu_s` all of them, so the rest is
// counted as streaming.
double profiled_streaming_s(const nlohmann::json& profile, const std::string& file, const std::string& where) {
  double other = 0.0, listed = 0.0;
  for (const auto& k : array_of(profile, "top", file, where)) {
    std::string name = k.value("kernel", "");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const double t = positive(k, "time_s", file, where);
    listed += t;
    for (const char* tag : {"nvjet", "gemm", "cutlass", "splitk", "xmma", "sdpa", "flash", "fmha", "lean_reduction"}) {
      if (name.find(tag) != std::string::npos) {
        other += t;
        break;
      }
    }
  }
  return positive(profile, "gpu_s", file, where) - other;
}

// The engine bandwidth fraction at which the streaming ops of `ops` take `target` seconds
// (bisection: their time falls as the fraction grows); 1 when even full bandwidth is slower.
double streaming_fraction_for(const std::vector<Op>& ops, const HwProfile& hw, double target) {
  const auto time_at = [&](double eff) {
    double t = 0.0;
    for (Op op : ops) {
      if (!is_streaming(op.kind)) continue;
      op.stream_efficiency = eff;
      t += static_cast<double>(op.count) * estimate(op, hw, Dtype::bf16).time_s;
    }
    return t;
  };
  if (time_at(1.0) >= target) return 1.0;
  double lo = 0.05, hi = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (time_at(mid) > target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

const nlohmann::json& IndependentSet::section(const std::string& name) const {
  const auto it = sections.find(name);
  if (it == sections.end()) {
    std::string files;
    for (const auto& [s, f] : file_of) {
      if (files.find(f) == std::string::npos) files += (files.empty() ? "" : ", ") + f;
    }
    throw InputError(files.empty() ? "servesim validate" : files, "sections." + name, "missing from the independent set");
  }
  return it->second;
}

IndependentSet load_independent_set(const std::vector<std::string>& files) {
  IndependentSet set;
  for (const std::string& f : files) {
    const nlohmann::json run = load_json_file(f);
    if (!run.is_object() || run.value("schema", "") != "servesim-independent/1") {
      throw InputError(f, "schema", "expected \"servesim-independent/1\"");
    }
    const auto s = run.find("sections");
    if (s == run.end() || !s->is_object()) throw InputError(f, "sections", "missing or not an object");
    for (const auto& [name, section] : s->items()) {
      if (!section.is_object()) throw InputError(f, "sections." + name, "must be an object");
      set.sections[name] = section;
      set.file_of[name] = f;
    }
  }
  return set;
}

std::vector<std::string> default_independent_files() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(data_dir()) / "calibrate" / "results" / "h200" / "independent";
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("run_", 0) == 0 && e.path().extension() == ".json") files.push_back(e.path().string());
  }
  if (files.empty()) {
    throw InputError(dir.string(), "run_*.json", "no independent measurements here; pass the files with --data");
  }
  std::sort(files.begin(), files.end());
  return files;
}

ValidationResult validate_kernels(const IndependentSet& set, const HwProfile& hw) {
  ValidationResult out;
  // GEMMs: the profile's tables come from our calibrator (cuBLASLt), these rows from torch.
  const nlohmann::json& gemm = set.section("gemm");
  const std::string& gfile = set.file_of.at("gemm");
  for (const char* dtype : {"bf16", "fp8"}) {
    const nlohmann::json& rows = array_of(gemm, dtype, gfile, "gemm");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::string where = std::string("gemm.") + dtype + "[" + std::to_string(i) + "]";
      const double m = positive(rows[i], "m", gfile, where), n = positive(rows[i], "n", gfile, where);
      const double k = positive(rows[i], "k", gfile, where);
      // fp8 rows ran at m_run (torch._scaled_mm pads small M to 16 where it must).
      const double m_run = rows[i].contains("m_run") ? positive(rows[i], "m_run", gfile, where) : m;
      const GemmQuery g = time_gemm(hw, dtype, static_cast<std::int64_t>(m_run), static_cast<std::int64_t>(n),
                                    static_cast<std::int64_t>(k), 128, "servesim validate");
      char pt[96];
      std::snprintf(pt, sizeof pt, "M=%.0f N=%.0f K=%.0f", m, n, k);
      out.rows.push_back({"kernel", "torch", std::string("gemm-") + dtype, "", pt, positive(rows[i], "time_s", gfile, where),
                          g.time.time_s});
    }
  }
  // SDPA attention, leave one head layout out.
  const nlohmann::json& attn = set.section("attention");
  const std::string& afile = set.file_of.at("attention");
  std::set<HeadLayout> layouts;
  for (const char* phase : {"decode", "prefill"}) {
    for (const auto& r : array_of(attn, phase, afile, "attention")) {
      layouts.insert({r.value("hq", std::int64_t{0}), r.value("hkv", std::int64_t{0}), r.value("head_dim", std::int64_t{0})});
    }
  }
  for (const HeadLayout& l : layouts) {
    const HwProfile h = with_sdpa_fit(set, hw, l);
    char label[48];
    std::snprintf(label, sizeof label, "%lld/%lld/%lld", static_cast<long long>(l.q_heads), static_cast<long long>(l.kv_heads),
                  static_cast<long long>(l.head_dim));
    out.folds.push_back({"kernel", label, "SDPA tables fitted to the other layouts"});
    ModelSpec m;
    m.num_attention_heads = l.q_heads;
    m.num_kv_heads = l.kv_heads;
    m.head_dim = l.head_dim;
    m.num_layers = 1;
    KernelPlan plan;
    plan.attention_kernel = AttentionKernel::sdpa;
    const Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
    for (const char* phase : {"decode", "prefill"}) {
      const nlohmann::json& rows = array_of(attn, phase, afile, "attention");
      const bool decode = std::string(phase) == "decode";
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string where = std::string("attention.") + phase + "[" + std::to_string(i) + "]";
        if (!(HeadLayout{rows[i].value("hq", std::int64_t{0}), rows[i].value("hkv", std::int64_t{0}),
                         rows[i].value("head_dim", std::int64_t{0})} == l)) {
          continue;
        }
        const double b = positive(rows[i], "batch", afile, where);
        const double len = positive(rows[i], decode ? "context" : "prompt", afile, where);
        BatchShape shape;
        for (int s = 0; s < static_cast<int>(b); ++s) {
          // A decode row attends over `context` tokens: add_decode(c) counts c + 1.
          if (decode) shape.add_decode(static_cast<std::int64_t>(len) - 1);
          else shape.add_prefill(static_cast<std::int64_t>(len), 0, false);
        }
        Op op{phase, decode ? OpKind::attention_decode : OpKind::attention_prefill};
        std::vector<Op> ops;
        m.hidden_size = l.q_heads * l.head_dim;
        build_iteration_ops(m, shape, p, ops, plan);
        for (const Op& o : ops) {
          if (o.kind == op.kind) op = o;
        }
        out.rows.push_back({"kernel", "torch", std::string("sdpa-") + phase, label, point_label("B", b, decode ? "C" : "S", len),
                            positive(rows[i], "time_s", afile, where), estimate(op, h, Dtype::bf16).time_s});
      }
    }
  }
  return out;
}

ValidationResult validate_steps(const IndependentSet& set, const HwProfile& hw) {
  ValidationResult out;
  for (const std::string& held : dense_models()) {
    StepQuery base = query_for(held, hw, "torch-cudagraph");
    HwProfile h = with_sdpa_fit(set, hw, layout_of(base.model));
    h.dependent_kernel_gap_s = 0.0;
    // Bandwidth of torch's elementwise kernels: the other models' profiled 2048-token prefills,
    // where the streaming ops are bandwidth-bound.
    std::vector<double> effs;
    for (const std::string& other : dense_models()) {
      if (other == held) continue;
      const std::string& file = set.file_of.at("model_" + other);
      const auto& profiles = set.section("model_" + other).value("profiles", nlohmann::json::object());
      if (!profiles.contains("prefill_b1_s2048")) continue;
      const TimedStep t = time_prefill(query_for(other, h, "torch-eager"), 1, 2048, 0);
      effs.push_back(streaming_fraction_for(t.ops, h, profiled_streaming_s(profiles["prefill_b1_s2048"], file, "profiles.prefill_b1_s2048")));
    }
    const double eff = effs.empty() ? 1.0 : median_of(effs);
    // The dependent-kernel gap: the median per-kernel residual of the other models' small-batch
    // graph steps (batch <= 8, where fixed per-kernel costs dominate).
    std::vector<double> gaps, dispatch;
    for (const std::string& other : dense_models()) {
      if (other == held) continue;
      StepQuery q = query_for(other, h, "torch-cudagraph");
      q.engine->kernels.elementwise_bw_frac = eff;
      const nlohmann::json& sec = set.section("model_" + other);
      const std::string& file = set.file_of.at("model_" + other);
      for (const auto& r : array_of(sec, "decode", file, "model_" + other)) {
        const double b = positive(r, "batch", file, "decode"), c = positive(r, "context", file, "decode");
        if (b > 8) continue;
        const TimedStep t = time_decode(q, static_cast<std::int64_t>(b), static_cast<std::int64_t>(c), false);
        gaps.push_back((positive(r, "graph_s", file, "decode") - t.step.time_s) / static_cast<double>(t.step.kernels));
      }
    }
    h.dependent_kernel_gap_s = std::max(0.0, median_of(gaps));
    // Host cost per eager kernel (torch-eager): the other models' eager decode steps of run c,
    // where the host issues every kernel (batch <= 64: the GPU finishes first).
    for (const std::string& other : dense_models()) {
      if (other == held || !set.has("eager_" + other)) continue;
      StepQuery q = query_for(other, h, "torch-eager");
      q.engine->kernels.elementwise_bw_frac = eff;
      const std::string& file = set.file_of.at("eager_" + other);
      for (const auto& r : array_of(set.section("eager_" + other), "decode", file, "eager_" + other)) {
        const double b = positive(r, "batch", file, "decode"), c = positive(r, "context", file, "decode");
        if (b > 64) continue;
        const TimedStep t = time_decode(q, static_cast<std::int64_t>(b), static_cast<std::int64_t>(c), true);
        dispatch.push_back(positive(r, "eager_s", file, "decode") / static_cast<double>(t.step.kernels));
      }
    }
    const double dispatch_s = dispatch.empty() ? 0.0 : median_of(dispatch);
    char note[200];
    std::snprintf(note, sizeof note,
                  "dependent-kernel gap %.2f us, eager host cost %.2f us per kernel, elementwise bandwidth %.2f of streaming "
                  "(fitted to the other four)",
                  h.dependent_kernel_gap_s * 1e6, dispatch_s * 1e6, eff);
    out.folds.push_back({"step", held, note});

    StepQuery graph = query_for(held, h, "torch-cudagraph");
    StepQuery eager = query_for(held, h, "torch-eager");
    graph.engine->kernels.elementwise_bw_frac = eff;
    eager.engine->kernels.elementwise_bw_frac = eff;
    if (dispatch_s > 0.0) eager.engine->launch.dispatch_s_per_kernel = dispatch_s;
    const nlohmann::json& sec = set.section("model_" + held);
    const std::string& file = set.file_of.at("model_" + held);
    for (const auto& r : array_of(sec, "decode", file, "model_" + held)) {
      const double b = positive(r, "batch", file, "decode"), c = positive(r, "context", file, "decode");
      const TimedStep t = time_decode(graph, static_cast<std::int64_t>(b), static_cast<std::int64_t>(c), false);
      out.rows.push_back({"step", "torch-cudagraph", "decode", held, point_label("B", b, "C", c), positive(r, "graph_s", file, "decode"),
                          t.step.time_s});
    }
    for (const auto& r : array_of(sec, "prefill", file, "model_" + held)) {
      const double b = positive(r, "batch", file, "prefill"), s = positive(r, "prompt", file, "prefill");
      const TimedStep t = time_prefill(graph, static_cast<std::int64_t>(b), static_cast<std::int64_t>(s), 0);
      out.rows.push_back({"step", "torch (GPU time)", "prefill", held, point_label("B", b, "S", s),
                          positive(r, "graph_s", file, "prefill"), t.step.gpu_s});
    }
    if (set.has("eager_" + held)) {
      const std::string& efile = set.file_of.at("eager_" + held);
      const nlohmann::json& esec = set.section("eager_" + held);
      for (const auto& r : array_of(esec, "decode", efile, "eager_" + held)) {
        const double b = positive(r, "batch", efile, "decode"), c = positive(r, "context", efile, "decode");
        const TimedStep t = time_decode(eager, static_cast<std::int64_t>(b), static_cast<std::int64_t>(c), true);
        out.rows.push_back({"step", "torch-eager", "decode", held, point_label("B", b, "C", c), positive(r, "eager_s", efile, "decode"),
                            t.step.time_s});
      }
      for (const auto& r : array_of(esec, "prefill", efile, "eager_" + held)) {
        const double b = positive(r, "batch", efile, "prefill"), s = positive(r, "prompt", efile, "prefill");
        const TimedStep t = time_prefill(eager, static_cast<std::int64_t>(b), static_cast<std::int64_t>(s), 0);
        out.rows.push_back({"step", "torch-eager", "prefill", held, point_label("B", b, "S", s),
                            positive(r, "eager_s", efile, "prefill"), t.step.time_s});
      }
    }
  }
  return out;
}

std::vector<ValidationBound> validation_bounds() {
  return {
      {"kernel", "torch", "gemm-bf16", 0.04, 0.35},
      {"kernel", "torch", "gemm-fp8", 0.06, 0.40},
      {"kernel", "torch", "sdpa-decode", 0.05, 0.25},
      {"kernel", "torch", "sdpa-prefill", 0.07, 0.30},
      {"step", "torch-cudagraph", "decode", 0.05, 0.12},
      {"step", "torch (GPU time)", "prefill", 0.07, 0.15},
      {"step", "torch-eager", "decode", 0.15, 0.35},
      {"step", "torch-eager", "prefill", 0.15, 0.40},
  };
}

std::vector<ValidationSummary> summarize(const std::vector<ValidationRow>& rows, const std::vector<ValidationBound>& bounds) {
  std::vector<ValidationSummary> out;
  std::vector<std::vector<ValidationRow>> groups;
  for (const ValidationRow& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ValidationSummary& s) {
      return s.group == r.group && s.engine == r.engine && s.phase == r.phase;
    });
    if (it == out.end()) {
      out.push_back(ValidationSummary{r.group, r.engine, r.phase, 0, 0.0, 0.0, nullptr, {}});
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
      if (b.group == out[i].group && b.engine == out[i].engine && b.phase == out[i].phase) out[i].bound = &b;
    }
  }
  return out;
}

}  // namespace servesim
