// A run's SLO miss settled before the run ends. A latency target at percentile q is checked on
// the nearest-rank quantile of the completed requests' values (LogHistogram::quantile): once more
// requests are at `factor` x the target or beyond than the percentile lets past it at
// workload.num_requests completions (num_requests - rank(num_requests); the allowance only grows
// with the count, so no smaller count allows more), the quantile ends past factor x the target
// whatever the other requests do, and the run misses its SLO by at least that factor. A request
// counts when it completes past an E2E limit; for TTFT and TPOT as soon as that is certain, where
// every request not turned away at arrival completes (no workload.request_timeout_s, no
// engine.scheduler.max_waiting_time_s): TTFT when its first token comes late or it has waited
// that long without one, TPOT when it has not finished by its first token's time + the limit x
// (output tokens - 1). Else TTFT and TPOT too count at completion.
// `servesim plan` stops such runs (its search reads only their verdict): SloMissWatch throws
// RunSettled out of simulate().
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/metrics/run_observer.hpp"

namespace servesim {

struct SettledMiss {
  std::size_t cls = 0;
  std::string metric;         // "ttft_s", "tpot_s" or "e2e_s"
  double at_least_s = 0.0;    // the percentile's value is past this (factor x the target)
  double threshold_s = 0.0;   // the target
};

// Thrown by SloMissWatch (stop on): simulate() unwinds on it as on its own errors; the caller
// catches it around the call.
struct RunSettled {
  SettledMiss miss;
};

class SloMissWatch final : public RunObserver {
 public:
  // factor >= 1. Never settles without a latency target or a fixed num_requests.
  SloMissWatch(const Scenario& scenario, double factor, bool stop);
  void on_arrival(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_rejected(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_admitted(std::uint32_t, TimeNs now) override { waited_until(now); }
  void on_prefill_done(std::uint32_t id, TimeNs now) override;
  void on_finished(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_iteration(const IterationRecord& it) override { waited_until(it.start_ns); }
  const std::optional<SettledMiss>& settled() const { return settled_; }

 private:
  struct Target {
    const char* metric = "";
    double limit_s = 0.0;  // factor x the target, and the histogram's bucket width (the quantile is a bucket's centre)
    double at_least_s = 0.0, threshold_s = 0.0;
    std::int64_t allowed = 0;  // requests past limit_s the percentile absorbs
    std::int64_t past = 0;
  };
  struct ClassWatch {
    std::optional<Target> ttft, tpot, e2e;
    TimeNs ttft_limit_ns = 0;          // a wait this long is past the TTFT limit
    std::vector<std::uint32_t> ids;    // its requests in arrival order
    std::size_t next_wait = 0;         // ids before it: their wait has been looked at
  };
  struct Seen {
    TimeNs arrival_ns = 0;
    std::int32_t output_tokens = 0;
    std::uint16_t cls = 0;
    bool first_token = false, turned_away = false, finished = false;
    bool ttft_counted = false, tpot_counted = false;
  };
  // A request's TPOT is past the limit if it has not finished by deadline_ns.
  struct TpotDeadline {
    TimeNs deadline_ns;
    std::uint32_t id;
    bool operator>(const TpotDeadline& o) const { return deadline_ns > o.deadline_ns || (deadline_ns == o.deadline_ns && id > o.id); }
  };
  void count(std::size_t cls, Target& t, double value_s);
  // Requests past their TTFT limit by `now` without a first token, or past their TPOT deadline
  // without finishing.
  void waited_until(TimeNs now);
  static TimeNs to_ns_past(double seconds);
  std::vector<ClassWatch> classes_;
  std::vector<Seen> seen_;  // by request id
  std::priority_queue<TpotDeadline, std::vector<TpotDeadline>, std::greater<>> tpot_deadlines_;
  bool early_ = false;  // every request not turned away completes: TTFT and TPOT count before completion
  bool stop_;
  std::optional<SettledMiss> settled_;
};

}  // namespace servesim
