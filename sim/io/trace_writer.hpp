// trace.json in Chrome's trace event format (opens in Perfetto and chrome://tracing), streamed to
// the file while the run goes. Sampled so huge runs stay small: iteration spans and counters
// (KV usage, batch size, queue length) for iterations starting in the first `window_s` simulated
// seconds, and per-request phase spans (queued, prefill, decode, preempted) for the first
// `max_requests` requests arriving in that window, each followed to its end.
#pragma once
#include <cstdint>
#include <string>

#include "sim/io/output_file.hpp"
#include "sim/metrics/request_phases.hpp"

namespace servesim {

struct TraceOptions {
  std::uint32_t max_requests = 1000;
  double window_s = 60.0;
};

class TraceWriter final : public RequestPhases {
 public:
  TraceWriter(const std::string& path, const TraceOptions& options, const std::string& run_name);
  void on_iteration(const IterationRecord& it) override;
  // Ends the JSON document and closes the file; commit() (which closes first if needed) renames
  // it into place.
  void close();
  void commit();
  std::int64_t events() const { return events_; }

  // Track layout, for readers of the file: replica r is process kReplicaPid + r (thread 0 holds
  // its iterations; its counters are process-wide), requests are threads of kRequestsPid with
  // tid = request id.
  static constexpr int kReplicaPid = 1;
  static constexpr int kRequestsPid = 1000;

 protected:
  bool follow(std::uint32_t id, TimeNs arrival_ns) override;
  void on_span(std::uint32_t id, RequestPhase phase, TimeNs start_ns, TimeNs end_ns) override;

 private:
  void begin_event();
  void metadata(const char* what, int pid, std::int64_t tid, const std::string& name);

  OutputFile file_;
  TraceOptions options_;
  TimeNs window_ns_;
  std::uint32_t followed_ = 0;
  std::int32_t replicas_named_ = 0;
  std::int64_t events_ = 0;
};

}  // namespace servesim
