// Reads and writes hardware profiles (hwprofiles/*.json). A profile is a short JSON file people
// edit (datasheet peaks, links, launch costs, efficiency curves, provenance) that may name a
// tables file beside it ("tables": "tables/NAME.json") holding what calibration measured: GEMM
// roofline fractions per shape, the decode-attention grid, measured efficiency curves. In memory
// (as the fitters build one) "tables" may instead be that object itself. docs/hardware-profiles.md
// describes both files.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/hw/fidelity.hpp"
#include "sim/hw/hw_profile.hpp"

namespace servesim {

HwProfile load_hw_profile(const std::string& path);
// `file` names the document in errors and anchors a relative tables path.
HwProfile parse_hw_profile(const nlohmann::json& doc, const std::string& file);
nlohmann::json provenance_to_json(const Provenance& p);
// field_origins(hw) as [{field, origin, detail}], and back (reports are read back by `summary`).
nlohmann::json field_origins_json(const HwProfile& hw);
std::vector<FieldOrigin> field_origins_from_json(const nlohmann::json& origins);
// One attention kernel family's tables (the form of calibration.attention_kernels.<family>), e.g.
// as `fit_sdpa_attention` returns them; `path` names the object in errors.
HwProfile::AttentionKernelTables parse_attention_kernel_tables(const nlohmann::json& doc, const std::string& file,
                                                               const std::string& path);

// --- Building and writing profiles (the fitters) ---

// Replaces a "tables" file name in `doc` (read from `file`) by the tables object it names, so the
// document can be edited and written elsewhere. A document without one is left as it is.
void inline_hw_tables(nlohmann::json& doc, const std::string& file);

// The path of the tables file `name` a profile `file` names ("tables": "tables/NAME.json", relative
// to the profile). InputError naming the profile and its "tables" key when it is not there (a
// profile copied without its tables file used to fail as "tables/NAME.json: file not found").
std::string hw_tables_path(const std::string& name, const std::string& file);

// Puts a fitted efficiency curve ([[size, fraction], ...]) under tables.efficiency, dropping a
// curve of the same name from the profile's own "efficiency" (each curve lives in one place).
void set_fitted_curve(nlohmann::json& profile, const std::string& key, nlohmann::json curve);

// Measured GEMM curves: (n, k) -> (m, roofline fraction) points, increasing in m.
using GemmCurves = std::map<std::pair<double, double>, std::vector<std::pair<double, double>>>;
// The columnar table the loader reads: {"m": every m measured, "shapes": [[n, k, frac...], ...]}.
nlohmann::json gemm_columns_json(const GemmCurves& curves);

// Writes `profile` (tables inline) as PATH plus, when it has tables, tables/<PATH's stem>.json
// beside it, named from PATH by that relative path. The tables keep 5 significant digits and one
// row per shape; the profile keeps its keys in datasheet order. Both are read back through
// load_hw_profile before this returns. Returns the tables file's path ("" when none).
std::string write_hw_profile(const nlohmann::json& profile, const std::string& path);

// The tables as written: every non-integral number rounded to 5 significant digits (at most
// 5e-5 relative change), integral ones as integers.
nlohmann::json rounded_tables(const nlohmann::json& tables);

}  // namespace servesim
