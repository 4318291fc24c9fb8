// See slo_settled.hpp.
#include "sim/metrics/slo_settled.hpp"

#include <algorithm>
#include <cmath>

namespace servesim {

SloMissWatch::SloMissWatch(const Scenario& scenario, double factor, bool stop) : stop_(stop) {
  const WorkloadConfig& w = scenario.workload;
  // The quantile is reported at its bucket's geometric centre (LogHistogram, buckets 0.2% wide):
  // a value 1% past factor x the target keeps its bucket's centre past it too.
  constexpr double kBucketMargin = 1.01;
  classes_.resize(w.classes.size());
  if (w.num_requests <= 0) return;
  early_ = w.request_timeout_s <= 0.0 && scenario.engine.scheduler.max_waiting_time_s <= 0.0;
  const auto n = static_cast<double>(w.num_requests);
  for (std::size_t c = 0; c < w.classes.size(); ++c) {
    const SloConfig& slo = w.classes[c].slo;
    // LogHistogram::quantile's rank, at num_requests completions.
    const auto rank = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(slo.percentile * n)));
    const auto target = [&](const char* metric, double threshold_s) -> std::optional<Target> {
      if (threshold_s <= 0.0) return std::nullopt;
      return Target{metric, factor * threshold_s * kBucketMargin, factor * threshold_s, threshold_s, w.num_requests - rank};
    };
    ClassWatch& cw = classes_[c];
    cw.ttft = target("ttft_s", slo.ttft_s);
    cw.tpot = target("tpot_s", slo.tpot_s);
    cw.e2e = target("e2e_s", slo.e2e_s);
    if (cw.ttft) cw.ttft_limit_ns = to_ns_past(cw.ttft->limit_s);
  }
}

TimeNs SloMissWatch::to_ns_past(double seconds) {
  return static_cast<TimeNs>(std::ceil(seconds * 1e9)) + 1;  // + 1: past it in seconds too
}

void SloMissWatch::count(std::size_t cls, Target& t, double value_s) {
  if (value_s < t.limit_s || ++t.past <= t.allowed || settled_) return;
  settled_ = SettledMiss{cls, t.metric, t.at_least_s, t.threshold_s};
  if (stop_) throw RunSettled{*settled_};
}

void SloMissWatch::on_arrival(std::uint32_t id, const Request& r, TimeNs now) {
  waited_until(now);
  if (seen_.size() <= id) seen_.resize(static_cast<std::size_t>(id) + 1);
  Seen& s = seen_[id];
  s.arrival_ns = r.arrival_ns;
  s.output_tokens = r.output_tokens;
  s.cls = r.cls;
  if (r.cls < classes_.size()) classes_[r.cls].ids.push_back(id);
}

void SloMissWatch::on_rejected(std::uint32_t id, const Request&, TimeNs now) {
  waited_until(now);
  if (id < seen_.size()) seen_[id].turned_away = true;
}

void SloMissWatch::on_prefill_done(std::uint32_t id, TimeNs now) {
  waited_until(now);
  if (!early_ || id >= seen_.size() || seen_[id].first_token || seen_[id].cls >= classes_.size()) return;
  Seen& s = seen_[id];
  s.first_token = true;
  ClassWatch& cw = classes_[s.cls];
  if (cw.tpot && s.output_tokens > 1) {
    tpot_deadlines_.push({now + to_ns_past(cw.tpot->limit_s * static_cast<double>(s.output_tokens - 1)), id});
  }
  if (cw.ttft && !s.ttft_counted) {
    s.ttft_counted = true;
    count(s.cls, *cw.ttft, ns_to_seconds(now - s.arrival_ns));
  }
}

void SloMissWatch::waited_until(TimeNs now) {
  if (!early_) return;
  for (std::size_t c = 0; c < classes_.size(); ++c) {
    ClassWatch& cw = classes_[c];
    if (!cw.ttft) continue;
    for (; cw.next_wait < cw.ids.size(); ++cw.next_wait) {
      Seen& s = seen_[cw.ids[cw.next_wait]];
      if (s.arrival_ns + cw.ttft_limit_ns > now) break;
      if (s.first_token || s.turned_away || s.ttft_counted) continue;
      s.ttft_counted = true;  // its first token comes after now: its TTFT is past the limit
      count(c, *cw.ttft, cw.ttft->limit_s);
    }
  }
  while (!tpot_deadlines_.empty() && tpot_deadlines_.top().deadline_ns <= now) {
    Seen& s = seen_[tpot_deadlines_.top().id];
    tpot_deadlines_.pop();
    if (s.finished) continue;
    s.tpot_counted = true;  // it finishes after now: its TPOT is past the limit
    count(s.cls, *classes_[s.cls].tpot, classes_[s.cls].tpot->limit_s);
  }
}

void SloMissWatch::on_finished(std::uint32_t id, const Request& r, TimeNs now) {
  waited_until(now);
  if (r.cls >= classes_.size()) return;
  bool ttft_counted = false, tpot_counted = false;
  if (id < seen_.size()) {
    seen_[id].finished = true;
    ttft_counted = seen_[id].ttft_counted;
    tpot_counted = seen_[id].tpot_counted;
  }
  ClassWatch& cw = classes_[r.cls];
  // As Replica::complete records them.
  if (cw.ttft && !ttft_counted) count(r.cls, *cw.ttft, ns_to_seconds(r.first_token_ns - r.arrival_ns));
  if (cw.tpot && !tpot_counted && r.output_tokens > 1) {
    count(r.cls, *cw.tpot, ns_to_seconds(now - r.first_token_ns) / static_cast<double>(r.output_tokens - 1));
  }
  if (cw.e2e) count(r.cls, *cw.e2e, ns_to_seconds(now - r.arrival_ns));
}

}  // namespace servesim
