// Calibration fit: raw microbenchmark results (calibrate/run_all.sh -> raw.json, schema
// servesim-calibration-raw/1) plus a datasheet profile -> a measured hardware profile.
// This is an I/O-layer tool (it reads and writes JSON); the numbers it produces are the tables
// sim/hw/cost_model.cpp interpolates.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct FitOptions {
  std::string name;            // profile name to write
  std::string command;         // command line recorded in provenance
  int holdout_every = 3;       // every Nth GEMM M point (per shape, from the 2nd) is held out; 0 = none
};

// A held-out weight-only GEMM point (raw.json quant_gemm), predicted through the fitted profile.
struct QuantHoldout {
  std::string dtype, path;  // w4a16 | w8a16; gemv | dequant_gemm
  double m = 0, n = 0, k = 0;
  double measured_s = 0, predicted_s = 0;
};

struct FitSummary {
  nlohmann::json profile;      // the hardware profile (schema servesim-hwprofile/1)
  // Held-out weight-only GEMM points (every holdout_every-th M per curve, where servesim picks
  // the measured kernel path for that M).
  std::vector<QuantHoldout> quant_holdout;
  // Held-out GEMM points predicted through the fitted profile and the cost model.
  int gemm_holdout_points = 0;
  double gemm_holdout_median_abs_err = 0.0;
  double gemm_holdout_worst_abs_err = 0.0;
};

// Decode-attention measurements (context -> parallel units -> roofline fractions, medians taken
// here) as the profile's calibration.attention_decode object, over (KV head-tokens, context).
nlohmann::json decode_attention_json(const std::map<double, std::map<double, std::vector<double>>>& by_context_units);

// `raw` from raw_file, `base` (datasheet peaks, interconnect) from base_file; InputError naming
// the file and key on malformed input.
FitSummary fit_profile(const nlohmann::json& raw, const std::string& raw_file, const nlohmann::json& base,
                       const std::string& base_file, const FitOptions& options);

}  // namespace servesim
