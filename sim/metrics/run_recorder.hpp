// RunRecorder: what report.html draws that report.json does not hold: the run over time (bounded
// Timeline), the phases of a window of consecutive requests (for the queueing Gantt chart) and
// the average batch shapes (for placing the model's ops on the roofline). Constant memory.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/metrics/request_phases.hpp"
#include "sim/metrics/timeline.hpp"

namespace servesim {

struct SampledSpan {
  RequestPhase phase;
  TimeNs start_ns, end_ns;
};

struct SampledRequest {
  std::uint32_t id = 0;
  TimeNs arrival_ns = 0;
  std::int32_t prompt_tokens = 0, output_tokens = 0;
  std::vector<SampledSpan> spans;  // in time order; at most kMaxSpans (later ones dropped)
  bool done = false;
};

// Sums over iterations, for the mean prefill and decode batch shapes.
struct ShapeSums {
  std::int64_t prefill_iterations = 0, prefill_seqs = 0, prefill_tokens = 0;
  std::int64_t decode_iterations = 0, decode_seqs = 0;
  double decode_kv_tokens = 0.0;
};

class RunRecorder final : public RequestPhases {
 public:
  static constexpr std::size_t kMaxSpans = 64;
  // Follows `sample_size` consecutive requests from the middle of `expected_requests` (steady
  // state rather than warm-up); the timeline keeps at most `max_buckets` buckets.
  RunRecorder(std::int64_t expected_requests, std::uint32_t sample_size = 40, std::size_t max_buckets = 240);

  void on_arrival(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_rejected(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_preempted(std::uint32_t id, TimeNs now) override;
  void on_finished(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_iteration(const IterationRecord& it) override;
  void on_end(TimeNs end_ns) override { end_ns_ = end_ns; }

  const Timeline& timeline() const { return timeline_; }
  const std::vector<SampledRequest>& sample() const { return sample_; }
  const ShapeSums& shapes() const { return shapes_; }
  TimeNs end_ns() const { return end_ns_; }

 protected:
  bool follow(std::uint32_t id, TimeNs arrival_ns) override;
  void on_span(std::uint32_t id, RequestPhase phase, TimeNs start_ns, TimeNs end_ns) override;
  void on_request_done(std::uint32_t id, const Request& r, TimeNs now) override;

 private:
  SampledRequest* sampled(std::uint32_t id);

  Timeline timeline_;
  std::uint32_t sample_first_, sample_size_;
  std::vector<SampledRequest> sample_;
  ShapeSums shapes_;
  TimeNs end_ns_ = 0;
};

}  // namespace servesim
