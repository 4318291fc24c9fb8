// Run recorder for the HTML report; see run_recorder.hpp.
#include "sim/metrics/run_recorder.hpp"

#include <algorithm>

namespace servesim {

RunRecorder::RunRecorder(std::int64_t expected_requests, std::uint32_t sample_size, std::size_t max_buckets)
    : timeline_(max_buckets), sample_size_(sample_size) {
  const std::int64_t first = expected_requests / 2 - static_cast<std::int64_t>(sample_size) / 2;
  sample_first_ = static_cast<std::uint32_t>(std::max<std::int64_t>(0, first));
  sample_.reserve(sample_size);
}

SampledRequest* RunRecorder::sampled(std::uint32_t id) {
  if (id < sample_first_ || id - sample_first_ >= sample_.size()) return nullptr;
  return &sample_[id - sample_first_];
}

bool RunRecorder::follow(std::uint32_t id, TimeNs /*arrival_ns*/) {
  return id >= sample_first_ && id - sample_first_ < sample_size_;
}

void RunRecorder::on_arrival(std::uint32_t id, const Request& r, TimeNs now) {
  timeline_.at(now).arrived += 1;
  if (follow(id, now) && id - sample_first_ == sample_.size()) {
    SampledRequest s;
    s.id = id;
    s.arrival_ns = now;
    s.prompt_tokens = r.prompt_tokens;
    s.output_tokens = r.output_tokens;
    sample_.push_back(std::move(s));
  }
  RequestPhases::on_arrival(id, r, now);
}

void RunRecorder::on_rejected(std::uint32_t id, const Request& r, TimeNs now) {
  timeline_.at(now).rejected += 1;
  RequestPhases::on_rejected(id, r, now);
}

void RunRecorder::on_preempted(std::uint32_t id, TimeNs now) {
  timeline_.at(now).preemptions += 1;
  RequestPhases::on_preempted(id, now);
}

void RunRecorder::on_finished(std::uint32_t id, const Request& r, TimeNs now) {
  timeline_.at(now).completed += 1;
  RequestPhases::on_finished(id, r, now);
}

void RunRecorder::on_iteration(const IterationRecord& it) {
  TimelineBucket& b = timeline_.at(it.start_ns);
  const double kv = it.kv_capacity_blocks > 0 ? static_cast<double>(it.kv_used_blocks) / static_cast<double>(it.kv_capacity_blocks) : 0.0;
  b.iterations += 1;
  b.busy_ns += static_cast<double>(it.end_ns - it.start_ns);
  b.seqs_sum += static_cast<double>(it.seqs);
  b.seqs_max = std::max(b.seqs_max, it.seqs);
  b.kv_frac_sum += kv;
  b.kv_frac_max = std::max(b.kv_frac_max, kv);
  b.waiting_sum += static_cast<double>(it.waiting);
  b.waiting_max = std::max(b.waiting_max, it.waiting);
  // Widening for the end time may merge buckets, so `b` is not used after this line.
  timeline_.at(it.end_ns).output_tokens += it.sampled_seqs;
  if (it.prefill_seqs > 0) {
    shapes_.prefill_iterations += 1;
    shapes_.prefill_seqs += it.prefill_seqs;
    shapes_.prefill_tokens += it.prefill_tokens;
  }
  if (it.decode_seqs > 0) {
    shapes_.decode_iterations += 1;
    shapes_.decode_seqs += it.decode_seqs;
    shapes_.decode_kv_tokens += it.decode_kv_tokens;
  }
}

void RunRecorder::on_span(std::uint32_t id, RequestPhase phase, TimeNs start_ns, TimeNs end_ns) {
  SampledRequest* s = sampled(id);
  if (s && s->spans.size() < kMaxSpans) s->spans.push_back({phase, start_ns, end_ns});
}

void RunRecorder::on_request_done(std::uint32_t id, const Request& /*r*/, TimeNs /*now*/) {
  if (SampledRequest* s = sampled(id)) s->done = true;
}

}  // namespace servesim
