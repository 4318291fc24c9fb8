// Request generation: arrival times and prompt/output lengths, drawn lazily (one request at a
// time) from independent random streams so memory does not grow with the request count.
#pragma once
#include <cstdint>
#include <optional>

#include "sim/config/scenario.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/time.hpp"

namespace servesim {

// One request as the workload creates it. prompt_tokens is the whole prompt: shared prefix,
// conversation history (later turns of a session) and the new tokens.
struct RequestSpec {
  TimeNs arrival_ns = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int32_t prefix_id = -1;      // shared system prompt, -1 for none
  std::int64_t prefix_tokens = 0;   // its length (the first tokens of the prompt)
  std::uint32_t stream_id = 0;      // the conversation: tokens after the prefix belong to it
  std::int32_t turn = 0;            // 0 for a session's first request
  std::uint8_t priority = 0;        // class, 0 = most urgent
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
  // The next request (a session's first turn) in arrival order, or nothing once all are made.
  std::optional<RequestSpec> next();
  // The turn after `done`, which completed at done_ns, or nothing when its session is over.
  std::optional<RequestSpec> next_turn(const RequestSpec& done, TimeNs done_ns);
  std::int64_t produced() const { return produced_; }

 private:
  WorkloadConfig config_;
  RngStream arrivals_;
  LengthSampler prompt_;
  LengthSampler output_;
  RngStream prefix_rng_;
  RngStream priority_rng_;
  std::int64_t sessions_total_ = 0;
  std::int64_t sessions_started_ = 0;
  double clock_s_ = 0.0;
  std::int64_t produced_ = 0;
};

}  // namespace servesim
