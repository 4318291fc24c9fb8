// Quantized GEMM kernels measured by calibrate/quant/measure_quant.py (quant_kernels.json, schema
// servesim-quant-kernels/1: torch._scaled_mm, torch._int_mm, tinygemm, ... over the bundled
// models' layer shapes) -> the hardware profile's calibration.quant_kernels tables, one per
// kernel and format, which an engine profile's `quant_kernels` names (QuantKernel).
// Each table stores frac = roofline / (t - launches x kernel_overhead), as every measured GEMM
// table (sim/hw/measured_tables.hpp); every holdout_every-th M per shape is kept out and
// predicted through the cost model to report the fit's error.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/hw/hw_profile.hpp"

namespace servesim {

// One measured point kept out of the fit, with what the fitted profile predicts for it.
struct QuantKernelHoldout {
  std::string kernel, format;
  double m = 0, n = 0, k = 0;
  double measured_s = 0, predicted_s = 0;
};

struct QuantKernelFit {
  nlohmann::json tables = nlohmann::json::object();  // calibration.quant_kernels: kernel -> format -> columns
  std::vector<QuantKernelHoldout> held;
  std::string date, gpu;                              // of the measurements (the gemm section's)
};

// `doc` read from `file`; `hw` the profile the kernels were measured on (peaks, bandwidth, kernel
// overhead); `command` is recorded in each table's source. InputError naming the file and key on
// malformed input.
QuantKernelFit fit_quant_kernels(const nlohmann::json& doc, const std::string& file, const HwProfile& hw,
                                 const std::string& command, int holdout_every);

}  // namespace servesim
