// Fits from the independent set; see independent.hpp. The tables have the form of the
// calibrator's (roofline fractions, frac = roofline / (t - kernel_overhead)), so the cost model
// reproduces a fitted point exactly and interpolates between points the same way for every
// kernel family.
#include "sim/calib/independent.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "sim/calib/fit.hpp"
#include "sim/core/error.hpp"
#include "sim/core/median.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"

namespace servesim {

namespace {

HeadLayout row_layout(const nlohmann::json& row, const std::string& file, const std::string& where) {
  return {static_cast<std::int64_t>(row_positive(row, "hq", file, where)), static_cast<std::int64_t>(row_positive(row, "hkv", file, where)),
          static_cast<std::int64_t>(row_positive(row, "head_dim", file, where))};
}

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
  for (const auto& k : row_array(profile, "top", file, where)) {
    std::string name = k.value("kernel", "");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const double t = row_positive(k, "time_s", file, where);
    listed += t;
    for (const char* tag : {"nvjet", "gemm", "cutlass", "splitk", "xmma", "sdpa", "flash", "fmha", "lean_reduction"}) {
      if (name.find(tag) != std::string::npos) {
        other += t;
        break;
      }
    }
  }
  return row_positive(profile, "gpu_s", file, where) - other;
}

// The engine's streaming bandwidth ceiling (a fraction of the calibrated plateau) at which the
// streaming ops of `ops` take `target` seconds (bisection: their time falls as the ceiling
// rises); 1 when even the calibrated curve is slower.
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

double row_positive(const nlohmann::json& row, const char* key, const std::string& file, const std::string& where) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_number() || !(it->get<double>() > 0.0) || !std::isfinite(it->get<double>())) {
    throw InputError(file, where + "." + key, "missing or not a positive number");
  }
  return it->get<double>();
}

const nlohmann::json& row_array(const nlohmann::json& section, const char* key, const std::string& file, const std::string& where) {
  const auto it = section.find(key);
  if (it == section.end() || !it->is_array()) throw InputError(file, where + "." + key, "missing or not an array");
  return *it;
}

const std::vector<std::string>& independent_dense_models() {
  static const std::vector<std::string> names = {"llama-3-8b", "qwen2-7b", "phi-3-mini", "llama-2-13b", "mistral-7b"};
  return names;
}


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

std::vector<std::string> default_independent_files() { return independent_files_for("h200-sxm"); }

std::vector<std::string> independent_files_for(const std::string& hw) {
  namespace fs = std::filesystem;
  // calibrate/results/<gpu>/independent: the profile name without its form factor (h100-sxm -> h100).
  const std::string gpu = hw.substr(0, hw.find('-'));
  const fs::path dir = fs::path(data_dir()) / "calibrate" / "results" / gpu / "independent";
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

HeadLayout layout_of(const ModelSpec& m) { return {m.num_attention_heads, m.num_kv_heads, m.head_dim}; }

std::vector<AttentionSection> attention_sections(const IndependentSet& set) {
  std::vector<AttentionSection> out;
  for (const auto& [name, section] : set.sections) {
    if (name == "attention" || name.rfind("attention_", 0) == 0) out.push_back({name, &section, set.file(name)});
  }
  if (out.empty()) set.section("attention");  // InputError naming the files
  return out;
}

namespace {
// Measured decode fractions per head dimension (context -> units -> fractions), and the prefill
// rows as measured (the fractions need the head-dim tiles, found from all rows first).
struct PrefillRow {
  HeadLayout layout;
  double batch = 0, prompt = 0, busy_s = 0;
  bool sweep = false;
};
struct SdpaRows {
  std::map<std::int64_t, std::map<double, std::map<double, std::vector<double>>>> decode_by_head_dim;
  std::vector<PrefillRow> prefill;
};

void gather_sdpa(const AttentionSection& sec, const HwProfile& hw, const std::set<HeadLayout>& exclude, SdpaRows& out) {
  const double peak = hw.peak_flops(Dtype::bf16), bw = hw.hbm_bandwidth_bytes_per_s, overhead = hw.kernel_overhead_s;
  const std::string& file = sec.file;
  // Decode: one query token per sequence over `context` cached tokens; the same roofline the cost
  // model uses for a decode attention op (K and V read, q read and o written; 4 FLOPs per
  // head-dim element per query-key pair).
  const auto& dec = row_array(*sec.rows, "decode", file, sec.name);
  for (std::size_t i = 0; i < dec.size(); ++i) {
    const std::string where = sec.name + ".decode[" + std::to_string(i) + "]";
    const HeadLayout l = row_layout(dec[i], file, where);
    if (exclude.count(l)) continue;
    const double b = row_positive(dec[i], "batch", file, where), c = row_positive(dec[i], "context", file, where);
    const double q_w = static_cast<double>(l.q_heads * l.head_dim);
    const double bytes = row_positive(dec[i], "kv_bytes", file, where) + 2.0 * b * q_w * 2.0;
    const double roofline = std::max(4.0 * q_w * b * c / peak, bytes / bw);
    const double busy = row_positive(dec[i], "time_s", file, where) - overhead;
    out.decode_by_head_dim[l.head_dim][c][b * static_cast<double>(l.kv_heads)].push_back(busy > 0.0 ? roofline / busy : 1.0);
  }
  const auto& pre = row_array(*sec.rows, "prefill", file, sec.name);
  for (std::size_t i = 0; i < pre.size(); ++i) {
    const std::string where = sec.name + ".prefill[" + std::to_string(i) + "]";
    const HeadLayout l = row_layout(pre[i], file, where);
    if (exclude.count(l)) continue;
    out.prefill.push_back({l, row_positive(pre[i], "batch", file, where), row_positive(pre[i], "prompt", file, where),
                           row_positive(pre[i], "time_s", file, where) - overhead, sec.sweep()});
  }
}

// The head dimensions SDPA prefill runs a kernel of its own for: a measured head dim d whose
// launches take (median over rows of equal heads, batch and length) at least 0.95 of the time at
// the next larger measured head dim runs that one's kernel, padded (on the H200: 80 and 96 run
// in the time of 128, while 64 and 256 differ from their neighbours; runs f and g).
std::vector<std::int64_t> prefill_tiles(const std::vector<PrefillRow>& rows) {
  std::map<std::tuple<std::int64_t, std::int64_t, double, double>, std::map<std::int64_t, double>> by_launch;
  std::set<std::int64_t> dims;
  for (const PrefillRow& r : rows) {
    by_launch[{r.layout.q_heads, r.layout.kv_heads, r.batch, r.prompt}][r.layout.head_dim] = r.busy_s;
    dims.insert(r.layout.head_dim);
  }
  std::vector<std::int64_t> tiles;
  for (auto d = dims.rbegin(); d != dims.rend(); ++d) {
    const auto next = std::next(d) == dims.rend() ? dims.end() : dims.upper_bound(*d);
    std::vector<double> ratios;
    if (next != dims.end()) {
      for (const auto& [launch, times] : by_launch) {
        if (times.count(*d) && times.count(*next) && times.at(*next) > 0.0) ratios.push_back(times.at(*d) / times.at(*next));
      }
    }
    if (ratios.empty() || median(ratios) < 0.95) tiles.insert(tiles.begin(), *d);
  }
  return tiles;
}
}  // namespace

nlohmann::json fit_sdpa_attention(const std::vector<AttentionSection>& sections, const HwProfile& hw,
                                  const std::set<HeadLayout>& exclude) {
  SdpaRows f;
  for (const AttentionSection& sec : sections) gather_sdpa(sec, hw, exclude, f);
  const std::string& file = sections.front().file;
  std::int64_t main_dim = 0;
  std::size_t most = 0;
  for (const auto& [d, by_context] : f.decode_by_head_dim) {
    std::size_t n = 0;
    for (const auto& [c, by_units] : by_context) n += by_units.size();
    if (d == 128 || (main_dim != 128 && n > most)) main_dim = d, most = n;
  }
  // Prefill: causal, query = key length S per sequence; compute fraction over FLOPs per launch,
  // the FLOPs counted at the head-dim tile the kernel runs. Model layouts only: FLOPs stand for
  // the launch's size only among similar head counts (a sweep's 8 heads fill the GPU worse than
  // 32 at the same FLOPs).
  const std::vector<std::int64_t> tiles = prefill_tiles(f.prefill);
  const double peak = hw.peak_flops(Dtype::bf16);
  std::map<double, std::vector<double>> prefill;  // FLOPs per launch -> fractions
  for (const PrefillRow& r : f.prefill) {
    if (r.sweep) continue;
    const auto tile = static_cast<double>(HwProfile::prefill_head_dim_tile(tiles, r.layout.head_dim));
    const double flops = 4.0 * static_cast<double>(r.layout.q_heads) * tile * r.batch * r.prompt * (r.prompt + 1.0) / 2.0;
    prefill[flops].push_back(r.busy_s > 0.0 ? flops / (peak * r.busy_s) : 1.0);
  }
  if (main_dim == 0 || prefill.empty()) throw InputError(file, sections.front().name, "no decode or prefill rows left to fit");
  nlohmann::json pre_table = nlohmann::json::array();
  for (const auto& [flops, fracs] : prefill) pre_table.push_back({flops, std::clamp(median(fracs), 1e-3, 1.0)});
  nlohmann::json out = {{"decode", decode_attention_json(f.decode_by_head_dim.at(main_dim))},
                        {"prefill_compute_frac_by_flops", pre_table},
                        {"prefill_head_dim_tiles", tiles},
                        {"head_dim", main_dim}};
  nlohmann::json others = nlohmann::json::object();
  for (const auto& [d, by_context] : f.decode_by_head_dim) {
    if (d != main_dim) others[std::to_string(d)] = {{"decode", decode_attention_json(by_context)}};
  }
  if (!others.empty()) out["other_head_dims"] = others;
  return out;
}

HwProfile with_sdpa_fit(const IndependentSet& set, const HwProfile& hw, const std::set<HeadLayout>& exclude) {
  HwProfile h = hw;
  const std::vector<AttentionSection> sections = attention_sections(set);
  const nlohmann::json tables = fit_sdpa_attention(sections, hw, exclude);
  h.attention_kernel_tables[static_cast<std::size_t>(AttentionKernel::sdpa)] =
      parse_attention_kernel_tables(tables, sections.front().file, "attention (fit)");
  return h;
}

std::set<GemmShape> gemm_shapes_of(const ModelSpec& m) {
  return {{m.qkv_width(), m.hidden_size}, {m.hidden_size, m.q_width()}, {m.mlp_in_width(), m.hidden_size},
          {m.hidden_size, m.ffn_size}, {m.vocab_size, m.hidden_size}};
}

HwProfile without_gemm_shapes(const HwProfile& hw, const std::set<GemmShape>& shapes) {
  HwProfile h = hw;
  for (GemmTable& t : h.gemm_tables) {
    if (t.empty()) continue;
    std::vector<GemmShapeCurve> kept;
    for (const GemmShapeCurve& c : t.shapes()) {
      if (!shapes.count({static_cast<std::int64_t>(c.n), static_cast<std::int64_t>(c.k)})) kept.push_back(c);
    }
    t = GemmTable(std::move(kept));
  }
  return h;
}

StepQuery independent_query(const std::string& model, const HwProfile& hw, const char* engine) {
  StepQuery q;
  q.model = load_model(resolve_data_ref("models", model, "independent set", "model"));
  q.hw = hw;
  q.precision = Precision{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  if (engine) q.engine = load_engine_profile(engine, "independent set", "engine");
  return q;
}

void apply_torch_fit(StepQuery& q, const TorchEngineFit& fit) {
  q.hw.dependent_kernel_gap_s = fit.kernel_gap_s;
  if (!q.engine) return;
  q.engine->kernels.elementwise_bw_frac = fit.elementwise_bw_frac;
  if (fit.dispatch_s_per_kernel > 0.0) q.engine->launch.dispatch_s_per_kernel = fit.dispatch_s_per_kernel;
}

std::string TorchEngineFit::describe() const {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "elementwise bandwidth %.3f of streaming, dependent-kernel gap %.3f us, eager host cost %.2f us per kernel",
                elementwise_bw_frac, kernel_gap_s * 1e6, dispatch_s_per_kernel * 1e6);
  return buf;
}

TorchEngineFit fit_torch_engines(const IndependentSet& set, const HwProfile& hw, const std::set<std::string>& exclude) {
  TorchEngineFit fit;
  HwProfile h = hw;
  h.dependent_kernel_gap_s = 0.0;
  std::vector<std::string> models;
  for (const std::string& m : independent_dense_models()) {
    if (!exclude.count(m)) models.push_back(m);
  }
  // 1. Elementwise bandwidth, first: the gap is a residual after it.
  std::vector<double> effs;
  for (const std::string& m : models) {
    const std::string sec = "model_" + m;
    const auto& profiles = set.section(sec).value("profiles", nlohmann::json::object());
    if (!profiles.contains("prefill_b1_s2048")) continue;
    const TimedStep t = time_prefill(independent_query(m, h, "torch-eager"), 1, 2048, 0);
    effs.push_back(streaming_fraction_for(
        t.ops, h, profiled_streaming_s(profiles["prefill_b1_s2048"], set.file(sec), sec + ".profiles.prefill_b1_s2048")));
  }
  if (!effs.empty()) fit.elementwise_bw_frac = median(effs);
  // Per decode row of section `sec` with batch <= max_batch: `measured` over the step's kernels,
  // less the predicted step when `residual` (the model's own times are then subtracted).
  const auto per_kernel = [&](const std::string& sec, const char* engine, double max_batch, const char* measured, bool eager,
                              bool residual, std::vector<double>& out) {
    if (!set.has(sec)) return;
    StepQuery q = independent_query(sec.substr(sec.find('_') + 1), h, engine);
    apply_torch_fit(q, fit);
    const std::string& file = set.file(sec);
    for (const auto& r : row_array(set.section(sec), "decode", file, sec)) {
      const double b = row_positive(r, "batch", file, sec + ".decode"), c = row_positive(r, "context", file, sec + ".decode");
      if (b > max_batch) continue;
      const TimedStep t = time_decode(q, static_cast<std::int64_t>(b), static_cast<std::int64_t>(c), eager);
      const double m = row_positive(r, measured, file, sec + ".decode");
      out.push_back((m - (residual ? t.step.time_s : 0.0)) / static_cast<double>(t.step.kernels));
    }
  };
  // 2. The dependent-kernel gap: the per-kernel residual of small-batch graph steps.
  std::vector<double> gaps;
  for (const std::string& m : models) per_kernel("model_" + m, "torch-cudagraph", 8, "graph_s", false, true, gaps);
  if (!gaps.empty()) fit.kernel_gap_s = std::max(0.0, median(gaps));
  // 3. Host cost per eager kernel: eager steps where the host issues every kernel.
  std::vector<double> dispatch;
  for (const std::string& m : models) per_kernel("eager_" + m, "torch-eager", 64, "eager_s", true, false, dispatch);
  if (!dispatch.empty()) fit.dispatch_s_per_kernel = median(dispatch);
  return fit;
}

std::vector<CbDecodeStep> cb_decode_steps(const nlohmann::json& run, const std::string& file, const std::string& where) {
  struct Token {
    double t, context;
  };
  std::vector<Token> tokens;
  double last_first = 0.0;
  const auto& reqs = row_array(run, "per_request", file, where);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const std::string at = where + ".per_request[" + std::to_string(i) + "]";
    const double prompt = row_positive(reqs[i], "prompt", file, at);
    const auto& times = row_array(reqs[i], "token_times_s", file, at);
    if (times.empty()) throw InputError(file, at + ".token_times_s", "empty");
    last_first = std::max(last_first, times.front().get<double>());
    for (std::size_t k = 0; k < times.size(); ++k) tokens.push_back({times[k].get<double>(), prompt + static_cast<double>(k)});
  }
  std::sort(tokens.begin(), tokens.end(), [](const Token& a, const Token& b) { return a.t < b.t; });
  // A step's tokens are stamped within a fraction of a millisecond; steps are tens of ms apart.
  constexpr double kSameStep_s = 2e-3;
  std::vector<CbDecodeStep> steps;
  double prev = -1.0, step_t = -1.0;
  for (const Token& tok : tokens) {
    if (step_t < 0.0 || tok.t - step_t > kSameStep_s) {
      prev = step_t;
      step_t = tok.t;
      if (prev > last_first) steps.push_back({0, 0.0, step_t - prev});
    }
    if (prev > last_first) {
      steps.back().seqs += 1;
      steps.back().kv_tokens += tok.context;
    }
  }
  return steps;
}

std::vector<std::string> engine_run_sections(const IndependentSet& set, const std::string& sec) {
  std::vector<std::string> out;
  for (const std::string& name : {sec, sec + "_repeats", sec + "_warm", sec + "_series"}) {
    if (set.has(name)) out.push_back(name);
  }
  return out;
}

namespace {

// Each run of section `sec` (hf_generate, hf_cb) and of its repeats (`sec`_repeats) whose model
// is not excluded, with its path for errors, and the query of `engine` for its model.
template <class Fn>
void for_each_engine_run(const IndependentSet& set, const char* sec, const char* engine, const HwProfile& hw,
                         const TorchEngineFit& torch, const std::set<std::string>& exclude, Fn&& fn) {
  for (const std::string& name : engine_run_sections(set, sec)) {
    const std::string& file = set.file(name);
    const auto& runs = row_array(set.section(name), "runs", file, name);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const std::string model = runs[i].value("model", "");
      if (exclude.count(model)) continue;
      StepQuery q = independent_query(model, hw, engine);
      apply_torch_fit(q, torch);
      fn(runs[i], file, name + ".runs[" + std::to_string(i) + "]", q);
    }
  }
}

}  // namespace

double fit_hf_decode_step_s(const IndependentSet& set, const HwProfile& hw, const TorchEngineFit& torch,
                            const std::set<std::string>& exclude) {
  if (!set.has("hf_generate")) return 0.0;
  std::vector<double> residuals;
  for_each_engine_run(set, "hf_generate", "hf-transformers", hw, torch, exclude,
                      [&](const nlohmann::json& run, const std::string& file, const std::string& where, StepQuery& q) {
    q.engine->launch.host_overhead_per_decode_step_s = 0.0;
    const double b = row_positive(run, "batch", file, where), prompt = row_positive(run, "prompt", file, where);
    const double n = row_positive(run, "new_tokens", file, where);
    const TimedStep t = time_decode(q, static_cast<std::int64_t>(b), static_cast<std::int64_t>(prompt + n / 2.0), true);
    residuals.push_back(row_positive(run, "tpot_median_s", file, where) - t.step.time_s);
  });
  return residuals.empty() ? 0.0 : std::max(0.0, median(residuals));
}

namespace {

// The first step of a generate_batch run: from the requests' creation to the first tokens, over
// the budget's worth of prompt tokens (the requests stamped then, plus the one split at the end of
// the budget). Its time is host + A + B / f in the packed attention's rate fraction f; two
// evaluations give A and B, the measured time gives f.
double fit_packed_attention(const IndependentSet& set, const HwProfile& hw, const TorchEngineFit& torch, const HfCbFit& host,
                            const std::set<std::string>& exclude) {
  std::vector<double> fracs;
  for_each_engine_run(set, "hf_cb", "hf-transformers-cb", hw, torch, exclude,
                      [&](const nlohmann::json& run, const std::string& file, const std::string& where, StepQuery& q) {
    HfCbFit at = host;
    std::vector<double> created, first;
    double prompt_tokens = 0.0;
    const auto& reqs = row_array(run, "per_request", file, where);
    for (std::size_t r = 0; r < reqs.size(); ++r) {
      const std::string rw = where + ".per_request[" + std::to_string(r) + "]";
      created.push_back(reqs[r].value("created_s", 0.0));
      first.push_back(row_array(reqs[r], "token_times_s", file, rw).front().get<double>());
      prompt_tokens += row_positive(reqs[r], "prompt", file, rw);
    }
    const double first_s = *std::min_element(first.begin(), first.end());
    const auto in_first_step = std::count_if(first.begin(), first.end(), [&](double t) { return t - first_s < 2e-3; });
    const double budget = static_cast<double>(q.engine->max_num_batched_tokens > 0 ? q.engine->max_num_batched_tokens : 8192);
    const double tokens = std::min(prompt_tokens, budget);
    const std::int64_t seqs = in_first_step + (prompt_tokens > budget ? 1 : 0);
    const double measured = first_s - median(created);
    const auto step = [&](double f) {
      at.packed_attention_compute_frac = f;
      apply_hf_cb_fit(q, at);
      return time_prefill(q, seqs, static_cast<std::int64_t>(tokens / static_cast<double>(seqs)), 0).step.time_s;
    };
    const double s1 = step(1.0), b = step(0.5) - s1, a = s1 - b;
    if (b > 0.0 && measured > a) fracs.push_back(std::clamp(b / (measured - a), 0.05, 2.0));
  });
  return fracs.empty() ? 1.0 : median(fracs);
}

}  // namespace

HfCbFit fit_hf_cb(const IndependentSet& set, const HwProfile& hw, const TorchEngineFit& torch, const std::set<std::string>& exclude) {
  HfCbFit fit;
  if (!set.has("hf_cb")) return fit;
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for_each_engine_run(set, "hf_cb", "hf-transformers-cb", hw, torch, exclude,
                      [&](const nlohmann::json& run, const std::string& file, const std::string& where, StepQuery& q) {
    q.engine->launch.host_overhead_per_step_s = 0.0;
    q.engine->launch.host_overhead_per_seq_s = 0.0;
    for (const CbDecodeStep& s : cb_decode_steps(run, file, where)) {
      const double context = s.kv_tokens / static_cast<double>(s.seqs);
      const double x = static_cast<double>(s.seqs);
      const double y = s.measured_s - time_decode(q, s.seqs, static_cast<std::int64_t>(context), true).step.time_s;
      sx += x, sy += y, sxx += x * x, sxy += x * y, n += 1;
    }
  });
  if (n < 2 || sxx * n - sx * sx <= 0.0) return fit;
  fit.per_seq_s = std::max(0.0, (n * sxy - sx * sy) / (n * sxx - sx * sx));
  fit.per_step_s = std::max(0.0, (sy - fit.per_seq_s * sx) / n);
  fit.packed_attention_compute_frac = fit_packed_attention(set, hw, torch, fit, exclude);
  return fit;
}

void apply_hf_cb_fit(StepQuery& q, const HfCbFit& fit) {
  q.engine->launch.host_overhead_per_step_s = fit.per_step_s;
  q.engine->launch.host_overhead_per_seq_s = fit.per_seq_s;
  q.engine->kernels.packed_attention_compute_frac = fit.packed_attention_compute_frac;
}

}  // namespace servesim
