// RequestPhases: turns the observer's request transitions into closed spans (queued, prefill,
// decode, preempted) for the requests a subclass chooses to follow. Memory is one entry per
// followed request in flight.
#pragma once
#include <cstdint>
#include <unordered_map>

#include "sim/metrics/run_observer.hpp"

namespace servesim {

enum class RequestPhase : std::uint8_t { queued, prefill, decode, preempted, rejected };
const char* request_phase_name(RequestPhase p);

class RequestPhases : public RunObserver {
 public:
  void on_arrival(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_rejected(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_admitted(std::uint32_t id, TimeNs now) override;
  void on_prefill_done(std::uint32_t id, TimeNs now) override;
  void on_preempted(std::uint32_t id, TimeNs now) override;
  void on_finished(std::uint32_t id, const Request& r, TimeNs now) override;

 protected:
  // Whether request `id` (arrival order) is followed; asked once, at its arrival.
  virtual bool follow(std::uint32_t id, TimeNs arrival_ns) = 0;
  // A phase of a followed request ended. Spans of one request arrive in time order, end >= start;
  // zero-length spans are skipped except `rejected`, which is always zero-length.
  virtual void on_span(std::uint32_t id, RequestPhase phase, TimeNs start_ns, TimeNs end_ns) = 0;
  // A followed request left the system (finished or rejected) at `now`.
  virtual void on_request_done(std::uint32_t /*id*/, const Request& /*r*/, TimeNs /*now*/) {}

 private:
  struct Open {
    RequestPhase phase;
    TimeNs since_ns;
  };
  void transition(std::uint32_t id, RequestPhase next, TimeNs now);
  std::unordered_map<std::uint32_t, Open> open_;
};

}  // namespace servesim
