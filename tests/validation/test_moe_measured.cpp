// Mixture-of-experts measured on our GPUs (calibrate/independent/measure.py, section moe): grouped
// expert GEMMs (torch._grouped_mm, bf16) over 1-4096 tokens per expert for eleven expert shapes,
// and a whole MoE FFN (router, top-k, sort, gather, grouped GEMMs, SiLU x up, weighted scatter) of
// each shape over 1-8192 tokens, replayed from CUDA graphs.
// - H200 (2026-12-04, calibrate/results/h200/independent/run_b.json and run_e.json).
// - H100 (2026-12-06, calibrate/results/h100/independent/run_c.json), which also timed the same
//   grouped GEMMs in fp8 (torch._scaled_grouped_mm, row-wise scales, fast accumulation).
// The H200 profile's grouped-GEMM table is fitted on its bf16 GEMM rows (servesim calibrate
// grouped-gemm); the whole-layer block rows are held out of it, and both the GEMM rows and the block
// rows of a shape are checked against the table refitted without that shape's GEMM rows. The H100
// profile has no bf16 table (docs/validation.md says why): its bf16 rows are held out of every fit;
// its fp8 table is fitted on run c's fp8 rows (each shape checked against the refit without it), and
// run d's EP-local rows are held out of it. Target (the MoE issue): the Mixtral-shaped layer within 15% median across token counts.
// The H100 bounds were written before the H100 rows were first compared with the model.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/calib/grouped_gemm_fit.hpp"
#include "sim/core/median.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/validate/bounds.hpp"
#include "../paths.hpp"

using namespace servesim;

namespace {

// One GPU's measurements: its profile and the runs.
struct MoeRuns {
  const char* gpu;
  const char* profile;
  std::vector<std::string> runs;
};

// A median and a worst |error| bound (data/validation/bounds.json, read where the test names them).
struct Bounds {
  double median, worst;
};

std::string run_file(const char* gpu_dir, const char* run) {
  return std::string(servesim::test::test_data_dir()) + "/../calibrate/results/" + gpu_dir + "/independent/" + run;
}

// H200 run b: Mixtral-8x7B, Qwen3-30B-A3B, DeepSeek-V3; run e: eight more expert shapes and
// Mixtral-8x7B again. H100 run c: the eleven shapes once, bf16 and fp8.
const MoeRuns kH200{"H200", "h200-sxm", {run_file("h200", "run_b.json"), run_file("h200", "run_e.json")}};
const MoeRuns kH100{"H100", "h100-sxm", {run_file("h100", "run_c.json")}};

// Every balanced grouped-GEMM row of the runs in `quant` (none: bf16).
std::vector<GroupedGemmPoint> all_points(const MoeRuns& set, QuantScheme quant = QuantScheme::none) {
  std::vector<GroupedGemmPoint> out;
  for (const std::string& run : set.runs) {
    const nlohmann::json doc = load_json_file(run);
    for (const GroupedGemmPoint& p : grouped_gemm_points(doc["sections"]["moe"], run)) {
      if (p.quant == quant) out.push_back(p);
    }
  }
  return out;
}

// Every whole-block row of the runs.
std::vector<nlohmann::json> all_blocks(const MoeRuns& set) {
  std::vector<nlohmann::json> out;
  for (const std::string& run : set.runs) {
    const nlohmann::json doc = load_json_file(run);  // named: a range-for keeps only its outermost temporary alive
    for (const auto& row : doc["sections"]["moe"]["block"]) {
      out.push_back(row);
      out.back()["run"] = run.substr(run.rfind('/') + 1);
    }
  }
  return out;
}

std::set<std::string> shapes_of(const std::vector<GroupedGemmPoint>& points) {
  std::set<std::string> out;
  for (const GroupedGemmPoint& p : points) out.insert(p.model);
  return out;
}

// One MoE FFN layer of the block's shape, as servesim times it (CUDA graph: no launch gaps).
double moe_layer_s(const nlohmann::json& row, const HwProfile& hw, const KernelPlan& plan) {
  ModelSpec m;
  m.name = row["model"].get<std::string>();
  m.num_layers = 1;
  m.hidden_size = row["hidden"].get<std::int64_t>();
  m.num_attention_heads = m.num_kv_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 1000;
  m.max_context_tokens = 1 << 20;
  m.ffn_size = m.moe.expert_ffn_size = row["expert_ffn"].get<std::int64_t>();
  m.moe.num_experts = row["experts"].get<std::int64_t>();
  m.moe.experts_per_token = row["top_k"].get<std::int64_t>();
  BatchShape b;
  b.add_prefill(row["tokens"].get<std::int64_t>(), 0, false);
  std::vector<Op> ops;
  build_iteration_ops(m, b, Precision{}, ops, plan);
  double s = 0.0;
  for (const Op& op : ops) {
    const std::string name = op.name;
    if (name.rfind("moe_", 0) == 0 || name.rfind("experts_", 0) == 0) s += static_cast<double>(op.count) * estimate(op, hw, Dtype::bf16).time_s;
  }
  return s;
}

// The profile's shipped table is what the fit gives (rerunnable from the data), point for point.
void check_table_is_fit(const std::vector<std::pair<double, double>>& fitted, const EfficiencyTable& shipped) {
  REQUIRE(fitted.size() == shipped.points().size());
  for (std::size_t i = 0; i < fitted.size(); ++i) {
    CHECK(fitted[i].first == shipped.points()[i].first);
    CHECK(fitted[i].second == doctest::Approx(shipped.points()[i].second).epsilon(1e-9));
  }
}

// The profile with its grouped-GEMM table refitted on every measured shape but `held`: nothing
// measured on that expert shape reaches a prediction checked against it.
HwProfile without_shape(const HwProfile& hw, const std::vector<GroupedGemmPoint>& points, const std::string& held) {
  std::set<std::string> others = shapes_of(points);
  others.erase(held);
  HwProfile out = hw;
  out.grouped_gemm_frac_by_tokens_per_expert = EfficiencyTable(fit_grouped_gemm_frac(points, others, hw));
  return out;
}


// A profile with a grouped table (the H200's): the table is what the fit on every shape gives
// (rerunnable from the data), and each shape's rows are checked against the table refitted without
// it. A profile without one (the H100's: see docs/validation.md) times the experts as the
// dense-equivalent GEMM alone, fitted on none of these rows; that is what is bounded, the
// leave-one-shape-out table's error printed beside it.
void check_grouped_gemms(const MoeRuns& set, Bounds bound) {
  const auto points = all_points(set);
  const std::set<std::string> shapes = shapes_of(points);
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", set.profile, "", ""));
  const bool tabled = !hw.grouped_gemm_frac_by_tokens_per_expert.empty();
  if (tabled) {
    const auto fitted = fit_grouped_gemm_frac(points, shapes, hw);
    check_table_is_fit(fitted, hw.grouped_gemm_frac_by_tokens_per_expert);
  }
  HwProfile untabled = hw;
  untabled.grouped_gemm_frac_by_tokens_per_expert = EfficiencyTable();
  std::printf("grouped GEMMs on the %s (torch._grouped_mm, bf16): measured vs servesim with the table refitted\n"
              "without the row's shape (leave one shape out), and with no table (the dense-equivalent GEMM alone);\n"
              "bounded: %s\n", set.gpu, tabled ? "leave one shape out" : "no table (the profile has none)");
  std::printf("%-14s %-8s %8s %11s %11s %8s %10s\n", "shape", "proj", "tokens/e", "measured ms", "loso ms", "error", "untabled");
  for (const std::string& held : shapes) {
    const HwProfile loso = without_shape(hw, points, held);
    std::vector<double> err, raw_err;
    for (const GroupedGemmPoint& p : points) {
      if (p.model != held) continue;
      const double predicted = grouped_gemm_model_s(p, loso), raw = grouped_gemm_model_s(p, untabled);
      err.push_back(std::fabs(predicted / p.measured_s - 1.0));
      raw_err.push_back(std::fabs(raw / p.measured_s - 1.0));
      std::printf("%-14s %-8s %8lld %11.4f %11.4f %+7.1f%% %+9.1f%%\n", p.model.c_str(), p.proj.c_str(),
                  static_cast<long long>(p.tokens_per_expert), 1e3 * p.measured_s, 1e3 * predicted,
                  100 * (predicted / p.measured_s - 1.0), 100 * (raw / p.measured_s - 1.0));
    }
    const std::vector<double>& bounded = tabled ? err : raw_err;
    const double worst = *std::max_element(bounded.begin(), bounded.end());
    std::printf("%s (%zu points): leave one shape out median |error| %.1f%%, worst %.1f%%; no table median %.1f%%, worst %.1f%%\n",
                held.c_str(), err.size(), 100 * median(err), 100 * *std::max_element(err.begin(), err.end()), 100 * median(raw_err),
                100 * *std::max_element(raw_err.begin(), raw_err.end()));
    CHECK(err.size() >= 20);
    CHECK(median(bounded) <= bound.median);
    CHECK(worst <= bound.worst);
  }
}

// Each MoE FFN block timed with the grouped-GEMM table refitted without its shape's GEMM rows; the
// shipped profile's table (fitted on every shape's GEMM rows) is printed beside it.
void check_blocks(const MoeRuns& set, double mixtral_median, Bounds other) {
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", set.profile, "", ""));
  // Each block is timed with the grouped-GEMM table refitted without its shape's GEMM rows; the
  // shipped profile's table (fitted on every shape's GEMM rows) is printed beside it.
  const auto points = all_points(set);
  std::map<std::string, HwProfile> held_out_hw;
  for (const std::string& held : shapes_of(points)) held_out_hw.emplace(held, without_shape(hw, points, held));
  // The block is plain PyTorch in one CUDA graph: the torch-cudagraph engine's kernel plan.
  const KernelPlan plan = load_engine_profile("torch-cudagraph", "test", "engine").kernels;
  std::printf("MoE FFN block on the %s (plain PyTorch, CUDA graph): measured vs servesim, one layer\n", set.gpu);
  std::printf("%-14s %7s %9s %11s %11s %8s %14s\n", "shape", "tokens", "tokens/e", "measured ms", "servesim ms", "error",
              "shipped table");
  std::map<std::string, std::vector<double>> errors, shipped_errors, mixtral_by_run;
  for (const auto& row : all_blocks(set)) {
    const std::string model = row["model"].get<std::string>();
    REQUIRE(held_out_hw.count(model) == 1);
    const double measured = row["graph_s"].get<double>(), predicted = moe_layer_s(row, held_out_hw.at(model), plan);
    const double err = predicted / measured - 1.0, shipped_err = moe_layer_s(row, hw, plan) / measured - 1.0;
    errors[model].push_back(std::fabs(err));
    shipped_errors[model].push_back(std::fabs(shipped_err));
    if (model == "mixtral-8x7b") mixtral_by_run[row["run"].get<std::string>()].push_back(std::fabs(err));
    const double per_expert = row["tokens"].get<double>() * row["top_k"].get<double>() / row["experts"].get<double>();
    std::printf("%-14s %7lld %9.2f %11.4f %11.4f %+7.1f%% %+13.1f%%\n", model.c_str(), row["tokens"].get<long long>(),
                per_expert, 1e3 * measured, 1e3 * predicted, 100 * err, 100 * shipped_err);
  }
  for (const auto& [model, e] : errors) {
    std::printf("%s: %zu token counts, median |error| %.1f%%, worst %.1f%% (shipped table: median %.1f%%)\n", model.c_str(),
                e.size(), 100 * median(e), 100 * *std::max_element(e.begin(), e.end()),
                100 * median(shipped_errors[model]));
  }
  // Mixtral-8x7B was measured twice (runs b and e, random routing drawn anew: the same token count
  // moved by up to 17% between them). The target, 15% median across token counts, holds on both
  // runs together and on each alone (14.0% and 9.2% on 2026-12-04's build; with only the three
  // shapes of run b in the fit, run b's rows gave 16.4%).
  REQUIRE(errors["mixtral-8x7b"].size() == 8 * set.runs.size());
  CHECK(median(errors["mixtral-8x7b"]) <= mixtral_median);
  for (const auto& [run, e] : mixtral_by_run) {
    std::printf("mixtral-8x7b, %s alone: median |error| %.1f%%\n", run.c_str(), 100 * median(e));
    CHECK(e.size() == 8);
    CHECK(median(e) <= mixtral_median);
  }
  // The other shapes route each token to 8 small experts: the plain-PyTorch block's gather,
  // weighting, index_add and sort kernels on 8 copies per token run far below the bandwidth the
  // model gives elementwise kernels (the block minus its grouped GEMMs: 1.2 ms at 4096 tokens for
  // Qwen3-30B-A3B, 0.25 ms modelled), so servesim under-predicts them; engines fuse these steps.
  for (const auto& [model, e] : errors) {
    CHECK(median(e) <= other.median);
    CHECK(*std::max_element(e.begin(), e.end()) <= other.worst);
  }
}

// Tokens per expert left out of the fp8 table's fit (the profile's grouped_gemm.fp8_skipped_tokens):
// at 256 torch 2.11's fp8 grouped kernel takes as long as at 512 on every shape (a kernel-selection
// step of the library, absent from its bf16 kernel), which the neighbours' interpolation bridges.
const std::set<std::int64_t> kFp8SkippedTokens{256};

// The shapes of run f that fit the fp8 kernel's fixed time per launch (grouped_gemm.fp8_fixed_s)
// beside run c's rows: the Qwen3 expert widths at 16 (30B-A3B EP8) and 32 (235B-A22B EP4)
// experts per GEMM. Run f's other rows are held out of every fit.
const std::set<std::string> kFp8FixedModels{"qwen3-30b-a3b-ep8", "qwen3-235b-a22b-ep4"};

// The balanced rows of `models` in run f's moe_tokens section, in `quant`.
std::vector<GroupedGemmPoint> run_f_points(const std::set<std::string>& models, QuantScheme quant) {
  const std::string run = run_file("h100", "run_f.json");
  std::vector<GroupedGemmPoint> out;
  for (const GroupedGemmPoint& p : grouped_gemm_points(moe_section(load_json_file(run), run), run)) {
    if (p.quant == quant && models.count(p.model) != 0) out.push_back(p);
  }
  return out;
}

// The fp8 grouped GEMMs (H100): timed as the fp8 dense-equivalent GEMM (the profile's measured fp8
// GEMM table) scaled by the fp8 kernel's grouped table, plus its fixed time per launch. Where the
// profile has that table it is the fit on every shape's fp8 rows (less kFp8SkippedTokens), its
// fixed time the fit on those and run f's kFp8FixedModels rows, and each shape's rows are checked
// against the table refitted without that shape (at the profile's fixed time); the untabled model
// is printed beside it.
void check_fp8_grouped_gemms(const MoeRuns& set, Bounds bound) {
  const auto points = all_points(set, QuantScheme::fp8);
  REQUIRE(points.size() >= 100);
  const std::set<std::string> shapes = shapes_of(points);
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", set.profile, "", ""));
  const bool tabled = !hw.grouped_gemm_fp8_frac_by_tokens_per_expert.empty();
  const double fixed_s = hw.grouped_gemm_fp8_fixed_s;
  if (tabled) {
    CHECK(fixed_s == doctest::Approx(fit_grouped_gemm_fixed_s(points, shapes, run_f_points(kFp8FixedModels, QuantScheme::fp8), hw,
                                                             QuantScheme::fp8, kFp8SkippedTokens))
                         .epsilon(1e-9));
    const auto fitted = fit_grouped_gemm_frac(points, shapes, hw, QuantScheme::fp8, kFp8SkippedTokens, fixed_s);
    check_table_is_fit(fitted, hw.grouped_gemm_fp8_frac_by_tokens_per_expert);
  }
  HwProfile untabled = hw;
  untabled.grouped_gemm_fp8_frac_by_tokens_per_expert = EfficiencyTable();
  untabled.grouped_gemm_fp8_fixed_s = 0.0;
  std::printf("fp8 grouped GEMMs on the %s (torch._scaled_grouped_mm, row-wise scales): measured vs servesim with the fp8\n"
              "table refitted without the row's shape (leave one shape out), and with no fp8 table; bounded: %s\n",
              set.gpu, tabled ? "leave one shape out" : "no table (the profile has none)");
  std::printf("%-14s %-8s %8s %11s %11s %8s %10s\n", "shape", "proj", "tokens/e", "measured ms", "servesim ms", "error", "untabled");
  std::vector<double> err;
  for (const std::string& held : shapes) {
    HwProfile loso = hw;
    if (tabled) {
      std::set<std::string> others = shapes;
      others.erase(held);
      loso.grouped_gemm_fp8_frac_by_tokens_per_expert =
          EfficiencyTable(fit_grouped_gemm_frac(points, others, hw, QuantScheme::fp8, kFp8SkippedTokens, fixed_s));
    }
    std::map<std::string, std::vector<double>> signed_err, signed_raw;
    for (const GroupedGemmPoint& p : points) {
      if (p.model != held) continue;
      const double predicted = grouped_gemm_model_s(p, loso), raw = grouped_gemm_model_s(p, untabled);
      err.push_back(std::fabs(predicted / p.measured_s - 1.0));
      signed_err[p.proj].push_back(predicted / p.measured_s - 1.0);
      signed_raw[p.proj].push_back(raw / p.measured_s - 1.0);
      std::printf("%-14s %-8s %8lld %11.4f %11.4f %+7.1f%% %+9.1f%%\n", p.model.c_str(), p.proj.c_str(),
                  static_cast<long long>(p.tokens_per_expert), 1e3 * p.measured_s, 1e3 * predicted,
                  100 * (predicted / p.measured_s - 1.0), 100 * (raw / p.measured_s - 1.0));
    }
    for (const auto& [proj, e] : signed_err) {
      std::printf("%s %s: median signed error %+.1f%% (no fp8 table %+.1f%%)\n", held.c_str(), proj.c_str(), 100 * median(e),
                  100 * median(signed_raw[proj]));
    }
  }
  const double worst = *std::max_element(err.begin(), err.end());
  std::printf("fp8, each shape held out (%zu points): median |error| %.1f%%, worst %.1f%%\n", err.size(), 100 * median(err),
              100 * worst);
  CHECK(median(err) <= bound.median);
  CHECK(worst <= bound.worst);
}

// One GPU's share of the experts under expert parallelism (H100 run d, section moe_ep_local: the
// EP-local shapes of the attention-DP rows, issue 38), bf16 and fp8, every row held out: the
// shipped profile times each as its dense-equivalent GEMM, the fp8 ones scaled by the profile's fp8
// grouped table (fitted on run c's shapes only). Per shape and projection the median signed error
// is printed, to show where the model is fast or slow.
// Rows of `fitted` shapes (fitted on) are left out.
void check_ep_local(const char* run, const char* section, QuantScheme quant, Bounds bound, const std::set<std::string>& fitted = {}) {
  const nlohmann::json doc = load_json_file(run_file("h100", run));
  std::vector<GroupedGemmPoint> points;
  for (const GroupedGemmPoint& p : grouped_gemm_points(doc["sections"][section], run)) {
    if (p.quant == quant && fitted.count(p.model) == 0) points.push_back(p);
  }
  REQUIRE(points.size() >= 100);
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "", ""));
  const char* kind = quant == QuantScheme::none ? "bf16" : "fp8";
  std::printf("grouped GEMMs on the H100 (%s, %s %s): measured vs servesim (shipped profile)\n", kind, run, section);
  std::printf("%-20s %-8s %8s %11s %11s %8s\n", "shape", "proj", "tokens/e", "measured ms", "servesim ms", "error");
  std::vector<double> err;
  std::map<std::string, std::vector<double>> signed_by_shape;
  for (const GroupedGemmPoint& p : points) {
    const double predicted = grouped_gemm_model_s(p, hw), e = predicted / p.measured_s - 1.0;
    err.push_back(std::fabs(e));
    signed_by_shape[p.model + " " + p.proj].push_back(e);
    std::printf("%-20s %-8s %8lld %11.4f %11.4f %+7.1f%%\n", p.model.c_str(), p.proj.c_str(),
                static_cast<long long>(p.tokens_per_expert), 1e3 * p.measured_s, 1e3 * predicted, 100 * e);
  }
  for (const auto& [shape, e] : signed_by_shape) std::printf("%s: median signed error %+.1f%%\n", shape.c_str(), 100 * median(e));
  const double worst = *std::max_element(err.begin(), err.end());
  std::printf("%s, %s %s, every row held out (%zu points): median |error| %.1f%%, worst %.1f%%\n", kind, run, section, err.size(),
              100 * median(err), 100 * worst);
  CHECK(median(err) <= bound.median);
  CHECK(worst <= bound.worst);
}

}  // namespace

TEST_CASE("H200 grouped expert GEMMs: the profile's table is the fit; each shape held out in turn") {
  check_grouped_gemms(kH200, {validation_bound("moe-h200/grouped-gemm-median"), validation_bound("moe-h200/grouped-gemm-worst")});
}
TEST_CASE("H100 grouped expert GEMMs: the profile's table is the fit; each shape held out in turn") {
  check_grouped_gemms(kH100, {validation_bound("moe-h100/grouped-gemm-median"), validation_bound("moe-h100/grouped-gemm-worst")});
}
TEST_CASE("H100 fp8 grouped expert GEMMs: the fp8 table is the fit; each shape held out in turn") {
  check_fp8_grouped_gemms(kH100, {validation_bound("moe-h100/grouped-fp8-median"), validation_bound("moe-h100/grouped-fp8-worst")});
}
TEST_CASE("H200 MoE FFN block (router to weighted scatter) vs servesim's MoE layer, every shape held out") {
  check_blocks(kH200, validation_bound("moe-h200/mixtral-block-median"),
               {validation_bound("moe-h200/other-block-median"), validation_bound("moe-h200/other-block-worst")});
}
TEST_CASE("H100 MoE FFN block (router to weighted scatter) vs servesim's MoE layer, every shape held out") {
  check_blocks(kH100, validation_bound("moe-h100/mixtral-block-median"),
               {validation_bound("moe-h100/other-block-median"), validation_bound("moe-h100/other-block-worst")});
}
TEST_CASE("H100 EP-local grouped expert GEMMs (run d), bf16 and fp8, held out") {
  check_ep_local("run_d.json", "moe_ep_local", QuantScheme::none,
                 {validation_bound("moe-h100/ep-local-bf16-median"), validation_bound("moe-h100/ep-local-bf16-worst")});
  check_ep_local("run_d.json", "moe_ep_local", QuantScheme::fp8,
                 {validation_bound("moe-h100/ep-local-fp8-median"), validation_bound("moe-h100/ep-local-fp8-worst")});
}
// Run e (moe_tokens): six of the shapes above (Qwen3-30B-A3B, Qwen3-235B-A22B and its EP8 share,
// DeepSeek-V3 EP8, Llama-4-Scout EP4, Mixtral-8x7B) re-measured at 21 counts of 1-4096 tokens per
// expert, most between the powers of two the fp8 table is fitted at; no row of run e is in any fit.
TEST_CASE("H100 grouped expert GEMMs between the powers of two (run e), bf16 and fp8, held out") {
  check_ep_local("run_e.json", "moe_tokens", QuantScheme::none,
                 {validation_bound("moe-h100/tokens-bf16-median"), validation_bound("moe-h100/tokens-bf16-worst")});
  check_ep_local("run_e.json", "moe_tokens", QuantScheme::fp8,
                 {validation_bound("moe-h100/tokens-fp8-median"), validation_bound("moe-h100/tokens-fp8-worst")});
}
// Run f (moe_tokens): run e's shapes again plus the narrow Qwen3 experts at fewer experts per GEMM
// (qwen3-30b-a3b-ep4 / -ep8: 32 / 16 experts of K 768 down; qwen3-235b-a22b-ep4: 32 of K 1536), the
// same widths as the whole models' 128, to separate the narrow experts' K from the group count.
// Two of them (kFp8FixedModels) fit the fp8 kernel's fixed time; the rest is held out (in bf16,
// which has no table on the H100, every row).
TEST_CASE("H100 grouped expert GEMMs at 16-128 experts per GEMM (run f), bf16 and fp8, held out") {
  check_ep_local("run_f.json", "moe_tokens", QuantScheme::none,
                 {validation_bound("moe-h100/narrow-bf16-median"), validation_bound("moe-h100/narrow-bf16-worst")});
  check_ep_local("run_f.json", "moe_tokens", QuantScheme::fp8,
                 {validation_bound("moe-h100/narrow-fp8-median"), validation_bound("moe-h100/narrow-fp8-worst")}, kFp8FixedModels);
}
