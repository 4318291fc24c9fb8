// The simulator's single event queue with a total, deterministic order.
// Events at the same instant run in Phase order (iteration completions, then KV-transfer
// completions, then arrivals, then scheduling), and within one phase in the order they were
// pushed (a sequence number stamped on push).
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/time.hpp"

namespace servesim {

// Why this order: a GPU iteration that ends at t frees KV blocks and batch slots before requests
// arriving at t are queued, and the scheduler decides once, after both, what runs next. A KV
// transfer (disaggregated serving) ending at t frees the sender's blocks after iterations ended
// and queues the migrated request on its decode replica before new arrivals at t, which it
// preceded. Replicas' events at one instant keep push order, which is deterministic.
enum class Phase : std::uint8_t { Completion = 0, Transfer = 1, Arrival = 2, Schedule = 3 };

template <class Payload>
class EventQueue {
 public:
  struct Event {
    TimeNs time_ns;
    Phase phase;
    std::uint64_t seq;
    Payload payload;
  };

  void push(TimeNs time_ns, Phase phase, Payload payload) {
    heap_.push(Event{time_ns, phase, next_seq_++, std::move(payload)});
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  std::uint64_t pushed() const { return next_seq_; }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
      if (a.phase != b.phase) return a.phase > b.phase;
      return a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace servesim
