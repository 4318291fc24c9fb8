// Simulated time: integer nanoseconds, so event order never depends on float rounding.
#pragma once
#include <cmath>
#include <cstdint>

namespace servesim {

using TimeNs = std::int64_t;

inline TimeNs seconds_to_ns(double seconds) { return static_cast<TimeNs>(std::llround(seconds * 1e9)); }
inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace servesim
