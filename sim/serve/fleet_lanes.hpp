// A fleet advanced in conservative time windows (issue 39): between two router decisions the
// replicas do not interact, so each replica (its Lane) handles its own events alone up to the
// window's end, the next instant anything outside it can read or change its state (the next
// arrival the router has not routed yet). A lane chains its iterations and quiet decode runs up
// to its own next event, not to the fleet's next event, and lanes can run on several threads.
// What the rest of the simulation sees is defined without the execution order: observer calls
// are buffered per lane and replayed at the window's end in (time, source, order) order
// (metrics/observer_buffer.hpp); KV block changes are applied to the fleet's totals in time order
// (FleetKv::apply); finished requests return to the pool at the window's end, lane by lane.
// Used by the event loop (simulation.cpp) when nothing else crosses replicas: see
// EventLoop::windows_apply.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "sim/metrics/observer_buffer.hpp"
#include "sim/serve/replica.hpp"

namespace servesim {

constexpr TimeNs kNeverNs = std::numeric_limits<TimeNs>::max();

// Requests turned away, by the door (the event loop) or by a replica's full queue.
struct Rejections {
  std::int64_t total = 0, queue_full = 0, too_long = 0;
  std::vector<std::int64_t> by_class, by_stage;  // by_stage empty without arrival stages
  void count(const Request& r) {
    total += 1;
    by_class[r.cls] += 1;
    if (!by_stage.empty()) by_stage[r.stage] += 1;
  }
  void add(const Rejections& o);
};

// No more threads than the process may use (one core under taskset: 1, no TBB arena).
int usable_threads(int requested);

// Which of `groups` kernel-time-cache groups replica `index` of `replicas` belongs to: lanes of
// one group run on one thread at a time, so a group shares one StepCaches.
inline std::size_t cache_group(std::size_t index, std::size_t replicas, std::size_t groups) {
  return index * groups / replicas;
}

// An arrival routed to a lane: its time, its request, and the window of its batch it was routed
// in (FleetLanes::end_window).
struct LaneArrival {
  TimeNs at;
  std::uint32_t request, window;
};

// One replica's events: its iteration completions, the arrivals routed to it, its scheduling
// and its policy's wake-ups, in the event queue's phase order (core/event_queue.hpp).
class Lane {
 public:
  Lane(Replica& replica, RequestPool& pool, bool observed, const Rejections& zero);
  // The arrivals routed to it in this batch, in time order (held by FleetLanes); the batch's
  // last bound is at or after the last of them, so none is left after it.
  void take_arrivals(const LaneArrival* begin, const LaneArrival* end);
  bool arrivals_left() const { return next_arrival_ != end_arrival_; }
  // Handles every event before the scheduling at `bound` (kNeverNs: all): completions and
  // arrivals at `bound` delivered in windows up to `window` included (later ones the router had
  // not routed yet), a start at `bound` waits for the router's decision.
  void run_to(TimeNs bound, std::uint32_t window);
  // 2t for a completion or arrival at t, 2t + 1 for scheduling at t; kNeverNs when none.
  TimeNs next_key() const { return next_key_in(std::numeric_limits<std::uint32_t>::max()); }

  ObserverBuffer buffer;
  std::vector<FleetKv::Change> kv_log;
  std::vector<std::size_t> kv_marks;  // kv_log's size at the end of each window of the batch it ran
  std::vector<std::uint32_t> released;  // requests to return to the pool
  Rejections rejections;
  std::uint64_t events = 0, decode_run_steps = 0;
  TimeNs now_ns = 0;  // its last event

 private:
  void complete();
  bool arrive(std::uint32_t request);
  void schedule_phase(TimeNs t, int local, bool triggered, TimeNs bound);
  void start(TimeNs bound);
  TimeNs next_own_ns() const;  // its next arrival or wake-up
  TimeNs next_key_in(std::uint32_t window) const;  // next_key, arrivals of later windows left out

  Replica& replica_;
  RequestPool& pool_;
  RunObserver* observer_ = nullptr;
  TimeNs done_ns_ = 0;     // the running iteration's end (replica busy)
  TimeNs pending_ns_ = -1; // a start deferred to the scheduling phase at this instant
  TimeNs wake_pending_ns_ = -1;
  // Its arrivals not handled yet (each window's come at or after the last's bound).
  const LaneArrival* next_arrival_ = nullptr;
  const LaneArrival* end_arrival_ = nullptr;
  // The event loop wrote their requests a batch of arrivals ago (up to 2^17 requests, megabytes):
  // each is fetched while the lane runs up to its arrival (a Request spans two cache lines).
  void prefetch_next_request() const;
  std::priority_queue<TimeNs, std::vector<TimeNs>, std::greater<>> wakes_;
  std::vector<Handoff> handoffs_;  // none without disaggregation
};

class FleetLanes {
 public:
  // threads > 1: each window's lanes run on usable_threads(threads), in cache groups (cache_group).
  FleetLanes(std::vector<std::unique_ptr<Replica>>& replicas, RequestPool& pool, FleetKv& fleet, RunObserver* observer,
             int threads, const Rejections& zero);
  ~FleetLanes();
  // The router sent `request` to `replica` at `at` (not before the last window's bound).
  void deliver(std::uint32_t replica, std::uint32_t request, TimeNs at);
  // The router has routed every arrival before `bound` (the next one's time, kNeverNs: none
  // left): the window closes; the arrivals delivered after this belong to the next.
  void end_window(TimeNs bound) { bounds_.push_back(bound); }
  // Runs the windows ended since the last call (a batch) and merges them. Every lane with events
  // before the scheduling at the last bound runs through the batch's windows one after another,
  // as if each window had run alone (Lane::run_to at each bound, with the arrivals routed by
  // then); then each window's KV changes are applied in turn, and the observer calls and released
  // requests merged. A lane's state is woken once per batch, not once per window: a batch of
  // several windows is for a router that reads no replica state, without an observer (its calls
  // at a bound would be merged in another order). At least one window must have ended.
  void advance();
  // Observer calls of the event loop itself (arrivals, rejections at the door): merged first at
  // an instant.
  ObserverBuffer& door() { return door_; }
  // The lanes the last advance ran, ascending: no other lane's replica changed.
  const std::vector<std::uint32_t>& active() const { return active_; }

  std::uint64_t events() const;
  std::uint64_t decode_run_steps() const;
  TimeNs last_ns() const;
  Rejections rejections() const;

 private:
  void run();
  void merge();

  std::vector<std::unique_ptr<Lane>> lanes_;
  RequestPool& pool_;
  FleetKv& fleet_;
  RunObserver* observer_;
  ObserverBuffer door_{0};
  std::size_t threads_;
  struct Arena;
  std::unique_ptr<Arena> arena_;  // TBB, when threads_ > 1
  std::vector<TimeNs> key_;       // each lane's entry in heap_ (kNeverNs: none or running)
  std::priority_queue<std::pair<TimeNs, std::uint32_t>, std::vector<std::pair<TimeNs, std::uint32_t>>, std::greater<>> heap_;
  std::vector<std::uint32_t> active_;
  std::vector<TimeNs> bounds_;  // of the windows ended since the last advance, in order
  // The batch's arrivals as routed (time order), the lane of each and how many each lane got;
  // before the lanes run, each lane's side by side in by_lane_ (ending at lane_end_). Delivering
  // appends to one array instead of to each lane's own queue, whose tail is cold at hundreds of
  // replicas (2.3% of 512 x 512,000 under perf).
  std::vector<LaneArrival> routed_, by_lane_;
  std::vector<std::uint32_t> routed_lane_, routed_count_;
  std::vector<std::size_t> lane_end_;
  std::vector<std::vector<std::uint32_t>> buckets_;
  std::vector<ObserverBuffer*> flush_;
  std::vector<FleetKv::Change> changes_;
};

}  // namespace servesim
