// RunObserver: what the event loop tells output writers (CSV, trace, HTML charts) while it runs.
// The simulator works without one (a null pointer); calls are per request transition and per
// iteration, never per token, so observing stays cheap on the hot path.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/sched/request.hpp"

namespace servesim {

// One iteration as planned at its start: it runs over [start_ns, end_ns) on `replica`.
struct IterationRecord {
  std::int32_t replica = 0;
  TimeNs start_ns = 0, end_ns = 0;
  std::int64_t seqs = 0;            // sequences in the batch
  std::int64_t prefill_seqs = 0, prefill_tokens = 0, decode_seqs = 0;
  std::int64_t sampled_seqs = 0;    // tokens produced when it ends
  double decode_kv_tokens = 0.0;    // sum of the decoding sequences' context lengths
  std::int64_t kv_used_blocks = 0, kv_capacity_blocks = 0;  // after this iteration's allocations
  std::int64_t waiting = 0;         // requests left in the queue after scheduling
  bool launch_bound = false;
};

// Request ids are arrival-order indices (0, 1, 2, ...). Contract for implementers: every arrived
// request gets on_arrival, then either on_rejected, or on_admitted / on_prefill_done /
// on_preempted (repeatable, in that order) and finally on_finished. `r` is only valid during the
// call. Times are simulated ns and never decrease across calls.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_arrival(std::uint32_t /*id*/, const Request& /*r*/, TimeNs /*now*/) {}
  virtual void on_rejected(std::uint32_t /*id*/, const Request& /*r*/, TimeNs /*now*/) {}
  // Enters a batch for its (first or recomputed) prefill, starting at `now`.
  virtual void on_admitted(std::uint32_t /*id*/, TimeNs /*now*/) {}
  // Its prefill is complete and it sampled a token at `now`.
  virtual void on_prefill_done(std::uint32_t /*id*/, TimeNs /*now*/) {}
  // Lost its KV blocks and went back to the queue (recompute).
  virtual void on_preempted(std::uint32_t /*id*/, TimeNs /*now*/) {}
  virtual void on_finished(std::uint32_t /*id*/, const Request& /*r*/, TimeNs /*now*/) {}
  virtual void on_iteration(const IterationRecord& /*it*/) {}
  // The run ended at `end_ns` (last event).
  virtual void on_end(TimeNs /*end_ns*/) {}
};

// Forwards every call to each observer in order (not owned).
class ObserverList final : public RunObserver {
 public:
  void add(RunObserver* o) {
    if (o) list_.push_back(o);
  }
  bool empty() const { return list_.empty(); }
  void on_arrival(std::uint32_t id, const Request& r, TimeNs now) override {
    for (auto* o : list_) o->on_arrival(id, r, now);
  }
  void on_rejected(std::uint32_t id, const Request& r, TimeNs now) override {
    for (auto* o : list_) o->on_rejected(id, r, now);
  }
  void on_admitted(std::uint32_t id, TimeNs now) override {
    for (auto* o : list_) o->on_admitted(id, now);
  }
  void on_prefill_done(std::uint32_t id, TimeNs now) override {
    for (auto* o : list_) o->on_prefill_done(id, now);
  }
  void on_preempted(std::uint32_t id, TimeNs now) override {
    for (auto* o : list_) o->on_preempted(id, now);
  }
  void on_finished(std::uint32_t id, const Request& r, TimeNs now) override {
    for (auto* o : list_) o->on_finished(id, r, now);
  }
  void on_iteration(const IterationRecord& it) override {
    for (auto* o : list_) o->on_iteration(it);
  }
  void on_end(TimeNs end_ns) override {
    for (auto* o : list_) o->on_end(end_ns);
  }

 private:
  std::vector<RunObserver*> list_;
};

}  // namespace servesim
