// Simulated time: integer nanoseconds, so event order never depends on float rounding.
#pragma once
#include <cmath>
#include <cstdint>

namespace servesim {

using TimeNs = std::int64_t;

// About a year: the longest simulated time an input may ask for (time keys, trace arrivals after
// time_scale). Far inside the int64 ns range (292 years), so the clock never overflows.
inline constexpr double kMaxSimulatedTimeS = 3.2e7;

inline TimeNs seconds_to_ns(double seconds) { return static_cast<TimeNs>(std::llround(seconds * 1e9)); }
inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace servesim
