// Speculative decoding's costs against our H100 (calibrate/results/h100/specdec.json, measured by
// calibrate/specdec/measure_specdec.py on a lent H100 SXM, 2026-12-06, random bf16 weights: the
// plain-PyTorch decoder of the independent set, each step one CUDA graph replay). Acceptance
// cannot be measured with random weights; these rows check what a step costs:
//   - verify: the target's pass over k + 1 query tokens per sequence (k = 1..7, batch 1-128,
//     context 512 and 2048) of llama-3-8b and llama-2-7b, against time_verify;
//   - verify / decode: the same pass over the plain decode step (k = 0) of its batch and context,
//     measured against predicted: what speculation adds, apart from the decode step's own error;
//   - draft decode: a draft model's decode step (llama-3.2-1b, llama-68m), against time_decode;
//   - eagle head: one EAGLE-style head step per target (fc, one layer, the target's LM head),
//     against the drafter the simulator prices (speculative_head plus its fc GEMM).
// Each model is predicted as the independent H100 set's decode steps are (validate_steps): the
// SDPA tables without its head layout, the GEMM tables without its shapes, the torch engine's
// parameters fitted to the set's other models. Nothing is fitted to specdec.json.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/calib/independent.hpp"
#include "sim/hw/hw_profile.hpp"
#include "sim/validate/independent_set.hpp"

namespace servesim {

ValidationResult validate_speculative(const nlohmann::json& specdec, const std::string& file, const IndependentSet& set,
                                      const HwProfile& hw);

// The bounds on those rows (data/validation/bounds.json, table speculative/h100-sxm), set before
// their first run; tests/validation/test_speculative_h100.cpp checks them.
std::vector<ValidationBound> speculative_bounds();

// calibrate/results/h100/specdec.json in the data tree.
std::string default_specdec_file();

}  // namespace servesim
