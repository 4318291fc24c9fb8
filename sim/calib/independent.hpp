// Fits from the independent H200 set (calibrate/independent/measure.py; results under
// calibrate/results/h200/independent/): what users run rather than our own calibrator kernels.
// Every fit takes an exclusion set, so `servesim validate` can fit without the rows it predicts
// (leave one head layout, GEMM shape or model out); `servesim calibrate independent` fits on
// every row for the shipped profiles.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/analysis/step_query.hpp"
#include "sim/hw/hw_profile.hpp"

namespace servesim {

// The merged sections of one or more run files (`{"schema": "servesim-independent/1",
// "sections": {...}}` each; a later file replaces an earlier section of the same name).
struct IndependentSet {
  std::map<std::string, nlohmann::json> sections;
  std::map<std::string, std::string> file_of;  // section -> the file it came from (for errors)
  bool has(const std::string& name) const { return sections.count(name) > 0; }
  const nlohmann::json& section(const std::string& name) const;  // InputError naming the files if missing
  const std::string& file(const std::string& name) const { return file_of.at(name); }
};
IndependentSet load_independent_set(const std::vector<std::string>& files);
// The committed set: every calibrate/results/h200/independent/run_*.json of the data directory.
std::vector<std::string> default_independent_files();
// The same for the set measured on `hw` (calibrate/results/h100/independent for h100-sxm).
std::vector<std::string> independent_files_for(const std::string& hw);
// The sections holding runs of engine section `sec` (hf_generate, hf_cb): `sec` and
// `sec`_repeats (run f: the same request counts measured again), `sec`_warm (run h: a warm-up
// call before each model's first measured one) and `sec`_series (run i: every request count of
// every model three to five times over in one process per model), those present.
std::vector<std::string> engine_run_sections(const IndependentSet& set, const std::string& sec);
// The dense models the set times end to end (sections model_<name>, eager_<name>).
const std::vector<std::string>& independent_dense_models();

// A positive number `key` of a measurement row / an array `key` of a section, InputError naming
// `file` and `where`.key otherwise.
double row_positive(const nlohmann::json& row, const char* key, const std::string& file, const std::string& where);
const nlohmann::json& row_array(const nlohmann::json& section, const char* key, const std::string& file, const std::string& where);

// Attention head layout of a model or a measurement row: query heads, KV heads, head dimension.
struct HeadLayout {
  std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
  bool operator<(const HeadLayout& o) const {
    return std::tie(q_heads, kv_heads, head_dim) < std::tie(o.q_heads, o.kv_heads, o.head_dim);
  }
  bool operator==(const HeadLayout& o) const { return !(*this < o) && !(o < *this); }
};
HeadLayout layout_of(const ModelSpec& m);

// The set's SDPA kernel sections, in name order: `attention` (five model layouts, run b) and
// every `attention_*` (run f: attention_head_dims, other head dimensions and repeats; run g:
// attention_small_heads, 8 heads of each head dimension).
struct AttentionSection {
  std::string name;
  const nlohmann::json* rows;  // the section, owned by the set
  std::string file;
  // A calibrator's sweep (attention_small_heads), not a model's layout: always fitted, never
  // held out (leaving a sweep layout out would ask the fit to extrapolate below the fewest
  // heads it measured, which says nothing about a model).
  bool sweep() const { return name == "attention_small_heads"; }
};
std::vector<AttentionSection> attention_sections(const IndependentSet& set);

// SDPA decode and causal prefill kernel times -> the profile's calibration.attention_kernels.sdpa
// object (fractions of `hw`'s roofline, as the standard tables are): decode grids over (KV
// head-tokens, context) per head dimension (head_dim 128's, else the one with the most rows, at
// the top, the others under "other_head_dims"); one prefill compute fraction over FLOPs from the
// model layouts. Rows of `exclude` layouts are left out.
nlohmann::json fit_sdpa_attention(const std::vector<AttentionSection>& sections, const HwProfile& hw,
                                  const std::set<HeadLayout>& exclude = {});
// `hw` with SDPA tables fitted to every layout of the set but `exclude`.
HwProfile with_sdpa_fit(const IndependentSet& set, const HwProfile& hw, const std::set<HeadLayout>& exclude = {});

// GEMM weight shapes (n, k) of a model's linear layers and LM head, and `hw` without the
// calibrated curves of some shapes (their GEMMs then come from the nearest other shapes).
using GemmShape = std::pair<std::int64_t, std::int64_t>;
std::set<GemmShape> gemm_shapes_of(const ModelSpec& m);
HwProfile without_gemm_shapes(const HwProfile& hw, const std::set<GemmShape>& shapes);

// What the plain-PyTorch engines (torch-cudagraph, torch-eager) need beyond the hardware tables,
// fitted to the models of the set but `exclude`:
// - elementwise_bw_frac: torch's elementwise kernels against the profile's streaming bandwidth,
//   from the profiled 2048-token prefills (bandwidth-bound streaming ops; kernel times from the
//   torch profiler, told from GEMMs and attention by kernel name);
// - kernel_gap_s: the GPU's gap between dependent kernels of a step (HwProfile::
//   dependent_kernel_gap_s), the median per-kernel residual of CUDA-graph decode steps of batch <= 8;
// - dispatch_s_per_kernel: host cost per eager kernel, from the eager decode steps of batch <= 64
//   (run c: no profiler in the process), where the host issues every kernel.
// `hw` carries the SDPA tables and GEMM curves to fit with; its own gap is ignored.
struct TorchEngineFit {
  double elementwise_bw_frac = 1.0, kernel_gap_s = 0.0, dispatch_s_per_kernel = 0.0;
  std::string describe() const;
};
TorchEngineFit fit_torch_engines(const IndependentSet& set, const HwProfile& hw, const std::set<std::string>& exclude = {});

// transformers generate() (hf-transformers): the host time of a decode step beyond dispatching its
// kernels (the per-token loop: cache update, masks, logits processing), the median residual of
// its decode token times (run c, hf_generate) over the models but `exclude`.
double fit_hf_decode_step_s(const IndependentSet& set, const HwProfile& hw, const TorchEngineFit& torch,
                            const std::set<std::string>& exclude = {});

// transformers generate_batch() (hf-transformers-cb): its Python scheduler and batch preparation,
// a line a + b x sequences fitted to the decode-only steps of its runs over the models but
// `exclude` (least squares on the residual after the kernels' GPU and dispatch time).
struct HfCbFit {
  double per_step_s = 0.0, per_seq_s = 0.0;
  // Then, on the first step of each run (a prefill of the whole token budget, all requests
  // submitted at once): the packed attention's compute rate as a fraction of the SDPA prefill
  // table's, the median over runs (KernelPlan::packed_attention_compute_frac).
  double packed_attention_compute_frac = 1.0;
};
// `q` (an hf-transformers-cb query) with the fitted host costs and packed-attention rate.
void apply_hf_cb_fit(StepQuery& q, const HfCbFit& fit);
HfCbFit fit_hf_cb(const IndependentSet& set, const HwProfile& hw, const TorchEngineFit& torch,
                  const std::set<std::string>& exclude = {});

// One step of a generate_batch run in which every request had started decoding: how many
// sequences, their KV tokens and the measured step time (between two token timestamps).
struct CbDecodeStep {
  std::int64_t seqs = 0;
  double kv_tokens = 0.0, measured_s = 0.0;
};
std::vector<CbDecodeStep> cb_decode_steps(const nlohmann::json& run, const std::string& file, const std::string& where);

// A bf16 step query of a bundled model on `hw` with a bundled engine (nullptr: none).
StepQuery independent_query(const std::string& model, const HwProfile& hw, const char* engine);
// `q` with the fitted engine parameters (and `q.hw` with the fitted kernel gap).
void apply_torch_fit(StepQuery& q, const TorchEngineFit& fit);

}  // namespace servesim
