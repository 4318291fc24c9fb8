// Which numbers of a hardware profile were measured on the GPU and which come from its datasheet
// or from curves derived for other GPUs: what `run`, `step` and `plan` state beside a prediction,
// so a user can tell a calibrated answer from an extrapolated one.
#pragma once
#include <string>
#include <vector>

#include "sim/hw/hw_profile.hpp"

namespace servesim {

struct FieldOrigin {
  std::string field;   // a group of profile fields ("GEMM efficiency", "HBM bandwidth", ...)
  std::string origin;  // "measured", "datasheet", "derived" or "not measured"
  std::string detail;  // what measured it or where it was derived from
};

// One entry per field group, in a fixed order.
std::vector<FieldOrigin> field_origins(const HwProfile& hw);

// One line: "measured: GEMM efficiency, ...; datasheet: ...; derived: ...; not measured: ...".
std::string field_origins_line(const std::vector<FieldOrigin>& origins);
inline std::string field_origins_line(const HwProfile& hw) { return field_origins_line(field_origins(hw)); }

}  // namespace servesim
