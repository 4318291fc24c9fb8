// Deterministic random streams: each random source gets its own generator derived from
// (scenario seed, stream name), so adding a new source never shifts the draws of another.
// Distributions are written here (not <random>'s) so draws are identical across standard libraries.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <string_view>

namespace servesim {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// FNV-1a: a stable hash of the stream name (std::hash is not stable across implementations).
inline std::uint64_t stable_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

class RngStream {
 public:
  RngStream(std::uint64_t seed, std::string_view name) : gen_(splitmix64(seed ^ stable_hash(name))) {}

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi], inclusive.
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(uniform() * static_cast<double>(span));
  }
  double exponential(double rate) { return -std::log1p(-uniform()) / rate; }
  // Box-Muller; the second variate is discarded to keep the stream position simple.
  double normal(double mean, double stddev) {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace servesim
