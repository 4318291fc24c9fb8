// Equal-time event order: completions, transfers, arrivals, then scheduling; FIFO within a phase.
#include <doctest/doctest.h>

#include <string>

#include "sim/core/event_queue.hpp"

using namespace servesim;

TEST_CASE("events at the same instant run in phase order, then push order") {
  EventQueue<std::string> q;
  q.push(100, Phase::Schedule, "schedule");
  q.push(100, Phase::Arrival, "arrival-1");
  q.push(50, Phase::Schedule, "early");
  q.push(100, Phase::Completion, "completion");
  q.push(100, Phase::Arrival, "arrival-2");
  q.push(100, Phase::Transfer, "transfer");
  std::string order;
  while (!q.empty()) order += q.pop().payload + " ";
  CHECK(order == "early completion transfer arrival-1 arrival-2 schedule ");
}

TEST_CASE("time never goes backwards") {
  EventQueue<int> q;
  for (int i = 0; i < 1000; ++i) q.push((i * 7919) % 1000, static_cast<Phase>(i % 4), i);
  TimeNs last = -1;
  while (!q.empty()) {
    const auto e = q.pop();
    CHECK(e.time_ns >= last);
    last = e.time_ns;
  }
}
