// Per-request and per-sequence state shared by the replica and its batch scheduler.
#pragma once
#include <cstdint>

#include "sim/core/time.hpp"

namespace servesim {

enum class RequestState : std::uint8_t { waiting, running, completed, rejected, timed_out };

// One user request. Times are -1 until they happen.
struct Request {
  TimeNs arrival_ns = 0;
  TimeNs scheduled_ns = -1;  // first admission into a batch (end of its first queueing)
  TimeNs first_token_ns = -1;
  TimeNs last_token_ns = -1;
  TimeNs started_ns = -1;          // first iteration that computes any of it (ends its queueing)
  std::int32_t prompt_tokens = 0;  // whole prompt, shared prefix and conversation history included
  std::int32_t output_tokens = 0;
  std::int32_t generated_tokens = 0;
  std::int32_t preemptions = 0;
  std::int32_t prefix_id = -1;     // token sources for prefix caching (see kv/prefix_hash.hpp)
  std::int32_t prefix_tokens = 0;
  std::uint32_t stream_id = 0;
  std::int32_t turn = 0;           // index within its session
  std::uint8_t priority = 0;       // class, 0 = most urgent
  std::int32_t replica = -1;       // where it runs now (the decode replica once its KV moved)
  std::uint16_t cls = 0;           // request class (index into the workload's classes)
  RequestState state = RequestState::waiting;
};

// A request's place in a replica: how much of it must be in the KV cache before it samples next.
struct Sequence {
  std::uint32_t request = 0;      // index into the request table
  std::uint32_t slot = 0;         // block-table slot while running
  std::int64_t target_tokens = 0; // prompt (plus tokens generated before a preemption) to prefill
  std::int64_t computed_tokens = 0;  // tokens whose KV is in the cache
  std::int64_t kv_tokens = 0;        // tokens whose KV is in the cache once the planned iteration runs
  std::uint64_t chain_hash = 0;      // prefix caching: hash of block hashed_blocks - 1
  std::int32_t hashed_blocks = 0;    // leading blocks already registered in the prefix cache
  bool prefilled() const { return computed_tokens >= target_tokens; }
};

}  // namespace servesim
