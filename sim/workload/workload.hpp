// Request generation: arrival times and prompt/output lengths, drawn lazily (one request at a
// time) from independent random streams so memory does not grow with the request count.
#pragma once
#include <cstdint>
#include <optional>

#include "sim/config/scenario.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/time.hpp"

namespace servesim {

struct RequestSpec {
  TimeNs arrival_ns = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
};

class LengthSampler {
 public:
  LengthSampler(const LengthDist& dist, std::uint64_t seed, const char* stream);
  std::int64_t next();

 private:
  LengthDist dist_;
  RngStream rng_;
  double log_mu_ = 0.0;
};

class WorkloadGenerator {
 public:
  WorkloadGenerator(const WorkloadConfig& config, std::uint64_t seed);
  // The next request in arrival order, or nothing once num_requests have been produced.
  std::optional<RequestSpec> next();
  std::int64_t produced() const { return produced_; }

 private:
  WorkloadConfig config_;
  RngStream arrivals_;
  LengthSampler prompt_;
  LengthSampler output_;
  double clock_s_ = 0.0;
  std::int64_t produced_ = 0;
};

}  // namespace servesim
