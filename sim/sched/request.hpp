// Per-request and per-sequence state shared by the replica and its batch scheduler.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/kv/prefix_hash.hpp"

namespace servesim {

enum class RequestState : std::uint8_t { waiting, running, completed, rejected, timed_out };

// One user request. Times are -1 until they happen.
struct Request {
  // Read and written for every generated token outside a decode window (see ReplicaState):
  // first, so they share one cache line wherever the request sits in the pool (the struct is 96
  // bytes; a line holds 64).
  TimeNs first_token_ns = -1;
  TimeNs last_token_ns = -1;
  std::int32_t output_tokens = 0;
  std::int32_t generated_tokens = 0;
  std::uint32_t id = 0;            // arrival order: what observers (CSV, trace, HTML) see
  TimeNs arrival_ns = 0;
  TimeNs scheduled_ns = -1;  // first admission into a batch (end of its first queueing)
  TimeNs started_ns = -1;          // first iteration that computes any of it (ends its queueing)
  std::int32_t prompt_tokens = 0;  // whole prompt, shared prefix and conversation history included
  std::int32_t preemptions = 0;
  std::int32_t prefix_id = -1;     // token sources for prefix caching (see kv/prefix_hash.hpp)
  std::int32_t prefix_tokens = 0;
  std::uint32_t stream_id = 0;
  std::int32_t turn = 0;           // index within its session
  StreamUse stream_use = StreamUse::alone;
  std::uint8_t priority = 0;       // class, 0 = most urgent
  std::int32_t replica = -1;       // where it runs now (the decode replica once its KV moved)
  std::uint16_t cls = 0;           // request class (index into the workload's classes)
  std::uint16_t stage = 0;         // arrival stage (workload.arrival.stages), 0 without stages
  RequestState state = RequestState::waiting;
};

// The requests in flight (waiting, running or moving between replicas), by index. A finished
// request's index is reused by a later arrival, so memory follows the requests alive at once,
// not the workload's size (a million-request run needs a few hundred entries near saturation).
class RequestPool {
 public:
  std::uint32_t acquire(const Request& r) {
    if (free_.empty()) {
      slots_.push_back(r);
      return static_cast<std::uint32_t>(slots_.size() - 1);
    }
    const std::uint32_t i = free_.back();
    free_.pop_back();
    slots_[i] = r;
    return i;
  }
  // The request left the system; its index must not be used until acquire() hands it out again.
  void release(std::uint32_t index) { free_.push_back(index); }
  Request& operator[](std::uint32_t index) { return slots_[index]; }
  const Request& operator[](std::uint32_t index) const { return slots_[index]; }
  std::size_t live() const { return slots_.size() - free_.size(); }
  std::size_t high_water() const { return slots_.size(); }

 private:
  std::vector<Request> slots_;
  std::vector<std::uint32_t> free_;
};

// A request's place in a replica: how much of it must be in the KV cache before it samples next.
struct Sequence {
  std::uint32_t request = 0;      // index into the RequestPool
  std::uint32_t slot = 0;         // block-table slot while running
  std::int64_t target_tokens = 0; // prompt (plus tokens generated before a preemption) to prefill
  std::int64_t computed_tokens = 0;  // tokens whose KV is in the cache
  std::int64_t kv_tokens = 0;        // tokens whose KV is in the cache once the planned iteration runs
  std::uint64_t chain_hash = 0;      // prefix caching: hash of block hashed_blocks - 1
  std::int32_t hashed_blocks = 0;    // leading blocks already registered in the prefix cache
  // Prefix caching: leading blocks registered as soon as they fill; the blocks after them are
  // registered when the sequence leaves the running set (ReplicaState::shared_blocks says why).
  std::int32_t eager_blocks = 0;
  // computed_tokens once the request has all its output; set whenever the replica writes the
  // Request's token count, read while the sequence is in the decode window.
  std::int64_t done_at_tokens = 0;
  // In the decode window (ReplicaState::window_steps): the window's step count when the replica
  // last wrote this sequence's Request; -1 when the Request is current (not in the window).
  std::int64_t window_base = -1;
  bool prefilled() const { return computed_tokens >= target_tokens; }
};

}  // namespace servesim
