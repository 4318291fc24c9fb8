// Request phase tracking; see request_phases.hpp.
#include "sim/metrics/request_phases.hpp"

namespace servesim {

const char* request_phase_name(RequestPhase p) {
  switch (p) {
    case RequestPhase::queued: return "queued";
    case RequestPhase::prefill: return "prefill";
    case RequestPhase::decode: return "decode";
    case RequestPhase::preempted: return "preempted";
    case RequestPhase::rejected: return "rejected";
  }
  return "?";
}

void RequestPhases::transition(std::uint32_t id, RequestPhase next, TimeNs now) {
  auto it = open_.find(id);
  if (it == open_.end()) return;
  if (now > it->second.since_ns) on_span(id, it->second.phase, it->second.since_ns, now);
  it->second = Open{next, now};
}

void RequestPhases::on_arrival(std::uint32_t id, const Request& /*r*/, TimeNs now) {
  if (follow(id, now)) open_.emplace(id, Open{RequestPhase::queued, now});
}

void RequestPhases::on_rejected(std::uint32_t id, const Request& r, TimeNs now) {
  auto it = open_.find(id);
  if (it == open_.end()) return;
  open_.erase(it);
  on_span(id, RequestPhase::rejected, now, now);
  on_request_done(id, r, now);
}

void RequestPhases::on_admitted(std::uint32_t id, TimeNs now) { transition(id, RequestPhase::prefill, now); }
void RequestPhases::on_prefill_done(std::uint32_t id, TimeNs now) { transition(id, RequestPhase::decode, now); }
void RequestPhases::on_preempted(std::uint32_t id, TimeNs now) { transition(id, RequestPhase::preempted, now); }

void RequestPhases::on_finished(std::uint32_t id, const Request& r, TimeNs now) {
  auto it = open_.find(id);
  if (it == open_.end()) return;
  if (now > it->second.since_ns) on_span(id, it->second.phase, it->second.since_ns, now);
  open_.erase(it);
  on_request_done(id, r, now);
}

}  // namespace servesim
