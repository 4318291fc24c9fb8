// Fit of a hardware profile to vidur's published per-operator timings (microsoft/vidur profiling
// data: one transformer layer's GEMMs and streaming ops over tokens and TP degree, plus
// FlashAttention decode/prefill tables). Used for GPUs we cannot run ourselves (A100, H100).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "sim/calib/fit.hpp"

namespace servesim {

struct VidurFitOptions {
  std::string name;
  std::string command;
  std::string holdout_model;   // model folder name left out of the fit and used to measure it
  std::string attention_csv;   // optional compute-legacy attention table (decode and prefill)
};

struct VidurFitSummary {
  nlohmann::json profile;
  int holdout_points = 0;               // held-out GEMM + streaming op timings
  double holdout_median_abs_err = 0.0;
  double holdout_worst_abs_err = 0.0;
  double holdout_gemm_median_abs_err = 0.0;
};

// compute_dir: .../vidur/compute/<gpu> holding <org>/<model>/mlp.csv.
VidurFitSummary fit_vidur_profile(const std::string& compute_dir, const nlohmann::json& base, const std::string& base_file,
                                  const VidurFitOptions& options);

}  // namespace servesim
