// Validation against the independent H200 set (calibrate/results/h200/independent/): servesim's
// predictions of what users run, on rows the fit did not see. Every fitted quantity is refitted
// without the rows it predicts: kernel tables leave out the predicted head layout, step
// parameters leave out the predicted model (leave-one-out), so each printed error is an
// out-of-sample error. The shipped profiles are the same fits over every row.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/analysis/error_bands.hpp"

#include <nlohmann/json.hpp>

#include "sim/calib/independent.hpp"
#include "sim/hw/hw_profile.hpp"
#include "sim/validate/bounds.hpp"

namespace servesim {

// One prediction of one measurement. `group` (kernel, step, engine) and `phase` name what is
// compared; `engine` is the engine profile the prediction used.
struct ValidationRow {
  std::string group, engine, phase, model, point;
  double measured = 0.0, predicted = 0.0;
  double error() const { return (predicted - measured) / measured; }
};

// What one leave-one-out fit chose, printed with the results (so the fitted values are visible).
struct FoldNote {
  std::string group, held_out, text;
};

struct ValidationResult {
  std::vector<ValidationRow> rows;
  std::vector<FoldNote> folds;
};

// Kernels alone: torch GEMMs (bf16 F.linear, fp8 _scaled_mm) against the profile's GEMM tables
// (fitted to our calibrator, never to these rows), and SDPA attention (decode, prefill) against
// tables fitted to the other head layouts.
ValidationResult validate_kernels(const IndependentSet& set, const HwProfile& hw);

// Whole steps of the plain-PyTorch decoder of five models, each predicted with the SDPA tables,
// the dependent-kernel gap and the host costs fitted to the other four: decode under CUDA graphs
// (torch-cudagraph), prefill kernels (their GPU time), eager decode and prefill (torch-eager) and
// transformers generate() (hf-transformers).
ValidationResult validate_steps(const IndependentSet& set, const HwProfile& hw);

// Engines end to end, leave-one-model-out (the SDPA tables, GEMM shapes, torch and engine host
// parameters refitted without the predicted model): transformers generate() (hf-transformers:
// time to first token and decode token time) and continuous batching (hf-transformers-cb: p50
// TTFT, TPOT and end-to-end latency of each run, simulated from the run's own prompts).
ValidationResult validate_engines(const IndependentSet& set, const HwProfile& hw);

// The error bands `plan` shows (data/validation/error_bands.json): one per (engine, phase) of the
// whole-step and engine groups (kernel rows and the GPU-time-only steps speak for no engine), on
// the GPU the set was measured on.
std::vector<ErrorBand> error_bands(const ValidationResult& res, const std::string& hw);

// The bounds servesim states for each (group, engine, phase) it reports on the independent set
// measured on `hw` (h200-sxm: calibrate/results/h200/independent; h100-sxm:
// calibrate/results/h100/independent).
std::vector<ValidationBound> validation_bounds(const std::string& hw = "h200-sxm");

// Per (group, engine, phase): n, median and worst |error|, the worst rows, the bound and whether
// it holds.
struct ValidationSummary {
  std::string group, engine, phase;
  std::size_t n = 0;
  double median_abs = 0.0, worst_abs = 0.0;
  // A copy, not a pointer into the bounds given: callers pass temporaries (summarize(rows,
  // published_bounds()) in a range-for), which die before the loop body reads the bound.
  std::optional<ValidationBound> bound;  // empty when no bound is stated for this group
  std::vector<ValidationRow> worst_rows;   // up to 3, largest |error| first
  bool holds() const { return !bound || (median_abs <= bound->median && worst_abs <= bound->worst); }
};
std::vector<ValidationSummary> summarize(const std::vector<ValidationRow>& rows, const std::vector<ValidationBound>& bounds);

}  // namespace servesim
