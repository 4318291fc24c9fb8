// The calibrators' raw.json (schema servesim-calibration-raw/1, written by calibrate/merge_raw.py)
// checked before anything is fitted: every section the fit needs, every record's keys, types and
// physical ranges (a GEMM time of 0 or 1e300 used to become a profile and "median |error| inf%"),
// with errors naming the file and the record ("raw.json: gemm[3].time_s: must be in (0, 1000],
// got 0"), not the tables derived from it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace servesim {

// InputError naming `file` and the key for the first problem; returns when the file is fit to fit.
void check_calibration_raw(const nlohmann::json& raw, const std::string& file);

}  // namespace servesim
