// Leave-one-out validation against the independent H200 set; see independent_set.hpp.
#include "sim/validate/independent_set.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "sim/calib/fit.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/model_io.hpp"

namespace servesim {

namespace {

std::string point_label(const char* a, double x, const char* b, double y) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s=%.0f %s=%.0f", a, x, b, y);
  return buf;
}

}  // namespace

ValidationResult validate_kernels(const IndependentSet& set, const HwProfile& hw) {
  ValidationResult out;
  // GEMMs: the profile's tables come from our calibrator (cuBLASLt), these rows from torch; a
  // row's shape, and every other shape of the models it belongs to, leave the tables first.

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
  // SDPA attention, leave one head layout out.
  const nlohmann::json& attn = set.section("attention");
  const std::string& afile = set.file("attention");
  std::set<HeadLayout> layouts;
  for (const char* phase : {"decode", "prefill"}) {
    for (const auto& r : row_array(attn, phase, afile, "attention")) {
      layouts.insert({r.value("hq", std::int64_t{0}), r.value("hkv", std::int64_t{0}), r.value("head_dim", std::int64_t{0})});
    }
  }
  for (const HeadLayout& l : layouts) {
    const HwProfile h = with_sdpa_fit(set, hw, {l});
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
      const nlohmann::json& rows = row_array(attn, phase, afile, "attention");
      const bool decode = std::string(phase) == "decode";
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string where = std::string("attention.") + phase + "[" + std::to_string(i) + "]";
        if (!(HeadLayout{rows[i].value("hq", std::int64_t{0}), rows[i].value("hkv", std::int64_t{0}),
                         rows[i].value("head_dim", std::int64_t{0})} == l)) {
          continue;
        }
        const double b = row_positive(rows[i], "batch", afile, where);
        const double len = row_positive(rows[i], decode ? "context" : "prompt", afile, where);
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
                            row_positive(rows[i], "time_s", afile, where), estimate(op, h, Dtype::bf16).time_s});
      }
    }
  }
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

std::vector<ValidationBound> validation_bounds() {
  // Where the fidelity issue set a target, the bound is that target, except the one this data
  // misses (decode worst: phi-3-mini, head dim 96, at batch >= 128 and context 128, where SDPA runs
  // no faster than at head dim 128 and no other layout in the set shows it: 14%); worst-case
  // bounds of host-bound rows cover the device host's own spread (a tiny-op probe between points
  // moved 5.9-9.7 us).
  return {
      {"kernel", "torch", "gemm-bf16", 0.04, 0.35},
      {"kernel", "torch", "gemm-fp8", 0.06, 0.40},
      {"kernel", "torch", "gemm-fp8-torch", 0.08, 0.40},
      {"kernel", "torch", "sdpa-decode", 0.05, 0.40},
      {"kernel", "torch", "sdpa-prefill", 0.07, 0.30},
      {"step", "torch-cudagraph", "decode", 0.05, 0.15},
      {"step", "torch (GPU time)", "prefill", 0.07, 0.15},
      {"step", "torch-eager", "decode", 0.15, 0.35},
      {"step", "torch-eager", "prefill", 0.15, 0.50},
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
