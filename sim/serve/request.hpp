// Per-request and per-sequence state shared by the replica and its batch scheduler.
#pragma once
#include <cstdint>

#include "sim/core/time.hpp"

namespace servesim {

enum class RequestState : std::uint8_t { waiting, running, completed, rejected, timed_out };

// One user request. Times are -1 until they happen.
struct Request {
  TimeNs arrival_ns = 0;
  TimeNs first_token_ns = -1;
  TimeNs last_token_ns = -1;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
  std::int32_t generated_tokens = 0;
  std::int32_t preemptions = 0;
  std::uint16_t cls = 0;  // request class (index into the workload's classes)
  RequestState state = RequestState::waiting;
};

// A request's place in a replica: how much of it must be in the KV cache before it samples next.
struct Sequence {
  std::uint32_t request = 0;      // index into the request table
  std::uint32_t slot = 0;         // block-table slot while running
  std::int64_t target_tokens = 0; // prompt (plus tokens generated before a preemption) to prefill
  std::int64_t computed_tokens = 0;  // tokens whose KV is in the cache
  bool prefilled() const { return computed_tokens >= target_tokens; }
};

}  // namespace servesim
