// ObserverBuffer: a RunObserver that keeps the calls it gets, for a part of the simulation that
// runs ahead of the others (a replica advancing alone to the end of a fleet's time window,
// serve/fleet_lanes.hpp). flush() replays several buffers into the real observer in one order
// defined by the calls alone, (time, source, order within the source), not by which buffer ran
// first or on which thread, so the outputs are the same whatever the execution order.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "sim/metrics/run_observer.hpp"

namespace servesim {

class ObserverBuffer final : public RunObserver {
 public:
  // `source`: the tie-break between buffers at one instant (a replica's index).
  explicit ObserverBuffer(std::uint32_t source = 0) : source_(source) {}

  void on_arrival(std::uint32_t id, const Request& r, TimeNs now) override { keep(Kind::arrival, id, now, &r); }
  void on_rejected(std::uint32_t id, const Request& r, TimeNs now) override { keep(Kind::rejected, id, now, &r); }
  void on_admitted(std::uint32_t id, TimeNs now) override { keep(Kind::admitted, id, now, nullptr); }
  void on_prefill_done(std::uint32_t id, TimeNs now) override { keep(Kind::prefill_done, id, now, nullptr); }
  void on_preempted(std::uint32_t id, TimeNs now) override { keep(Kind::preempted, id, now, nullptr); }
  void on_finished(std::uint32_t id, const Request& r, TimeNs now) override { keep(Kind::finished, id, now, &r); }
  void on_iteration(const IterationRecord& it) override;
  // on_end is not buffered: the loop that owns the buffers calls the real observer's.

  bool empty() const { return calls_.empty(); }
  // Replays every buffer's calls into `out` ordered by (time, source, call order) and empties them.
  static void flush(std::span<ObserverBuffer* const> buffers, RunObserver& out);

 private:
  enum class Kind : std::uint8_t { arrival, rejected, admitted, prefill_done, preempted, finished, iteration };
  struct Call {
    TimeNs time;
    std::uint32_t id;
    Kind kind;
    std::uint32_t payload;  // index into requests_ or iterations_
  };
  void keep(Kind kind, std::uint32_t id, TimeNs now, const Request* r);
  void replay(const Call& c, RunObserver& out) const;

  std::uint32_t source_;
  std::vector<Call> calls_;
  std::vector<Request> requests_;           // the Request as the call saw it (it changes later)
  std::vector<IterationRecord> iterations_;
};

}  // namespace servesim
