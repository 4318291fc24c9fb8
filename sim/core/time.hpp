// Simulated time: integer nanoseconds, so event order never depends on float rounding.
#pragma once
#include <cmath>
#include <cstdint>

namespace servesim {

using TimeNs = std::int64_t;

// The longest simulated time an input may ask for, the one limit for every time key of a scenario
// (durations, timeouts, SLO targets) and for trace arrivals after time_scale. Why 3.2e7 s: it is a
// year (3.16e7 s) rounded up, longer than any serving study needs, so no honest input meets it;
// and it sits far inside the clock's int64 nanoseconds (9.2e9 s, 292 years), so an arrival plus
// the deadlines and the rest of the run added to it never overflows, and a double holding such a
// time still resolves about 4 ns. A larger value (e.g. 1e10 s) wraps the clock and surfaces as
// "time went backwards" or a request that waits forever.
inline constexpr double kMaxSimulatedTimeS = 3.2e7;

// std::llround(seconds * 1e9) (nearest, halves away from zero) without the libm call, which cost
// ~27 instructions at every simulated step: x - trunc(x) is exact below 2^63 (an integer-valued
// double past 2^52, Sterbenz's lemma at or above 1, x itself below), so the comparisons with
// 0.5 decide as llround does. NaN and values past the int64 range take llround itself.
inline TimeNs seconds_to_ns(double seconds) {
  const double x = seconds * 1e9;
  if (!(std::fabs(x) < 9.0e18)) return static_cast<TimeNs>(std::llround(x));
  auto t = static_cast<TimeNs>(x);  // toward zero
  const double frac = x - static_cast<double>(t);
  if (frac >= 0.5) {
    ++t;
  } else if (frac <= -0.5) {
    --t;
  }
  return t;
}
inline double ns_to_seconds(TimeNs ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace servesim
