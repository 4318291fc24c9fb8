// Lanes of a fleet advanced in time windows (fleet_lanes.hpp). A lane mirrors, for one replica,
// what EventLoop::start and the queue's phase order do: at an instant, its iteration's
// completion, then the arrivals routed to it, then one start (which chains iterations and quiet
// decode runs while they end before the lane's next event). The event count is the queue's:
// one per iteration, arrival and wake-up, plus one per start deferred at an instant where the
// lane has another event (or the router decides).
#include "sim/serve/fleet_lanes.hpp"

#include <algorithm>
#include <stdexcept>
#include <tbb/parallel_for.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

namespace servesim {

void Rejections::add(const Rejections& o) {
  total += o.total;
  queue_full += o.queue_full;
  too_long += o.too_long;
  for (std::size_t c = 0; c < by_class.size(); ++c) by_class[c] += o.by_class[c];
  for (std::size_t k = 0; k < by_stage.size(); ++k) by_stage[k] += o.by_stage[k];
}

int usable_threads(int requested) { return std::clamp(requested, 1, std::max(1, tbb::info::default_concurrency())); }

namespace {
// Completions and arrivals at t come before the router's decision at t, scheduling after it.
constexpr TimeNs key_of(TimeNs t, bool schedule) { return 2 * t + (schedule ? 1 : 0); }
constexpr TimeNs limit_of(TimeNs bound) { return bound == kNeverNs ? kNeverNs - 1 : key_of(bound, false); }
}  // namespace

Lane::Lane(Replica& replica, RequestPool& pool, bool observed, const Rejections& zero)
    : buffer(replica.spec().index + 1), rejections(zero), replica_(replica), pool_(pool) {
  if (observed) observer_ = &buffer;
  replica_.set_observer(observer_, static_cast<std::int32_t>(replica.spec().index));
  replica_.set_logs(&kv_log, &released);
}

void Lane::take_arrivals(const LaneArrival* begin, const LaneArrival* end) {
  next_arrival_ = begin;
  end_arrival_ = end;
  prefetch_next_request();
}

void Lane::prefetch_next_request() const {
  if (next_arrival_ == end_arrival_) return;
  const char* r = reinterpret_cast<const char*>(&pool_[next_arrival_->request]);
  __builtin_prefetch(r);
  __builtin_prefetch(r + sizeof(Request) - 1);
}

TimeNs Lane::next_own_ns() const {
  TimeNs t = kNeverNs;
  if (next_arrival_ != end_arrival_) t = next_arrival_->at;
  if (!wakes_.empty()) t = std::min(t, wakes_.top());
  return t;
}

TimeNs Lane::next_key_in(std::uint32_t window) const {
  TimeNs k = kNeverNs;
  if (replica_.busy()) k = key_of(done_ns_, false);
  if (next_arrival_ != end_arrival_ && next_arrival_->window <= window) k = std::min(k, key_of(next_arrival_->at, false));
  if (!wakes_.empty()) k = std::min(k, key_of(wakes_.top(), true));
  if (pending_ns_ >= 0) k = std::min(k, key_of(pending_ns_, true));
  return k;
}

void Lane::run_to(TimeNs bound, std::uint32_t window) {
  const TimeNs limit = limit_of(bound);
  // Arrivals of later windows come at or after `bound` (the first of them is the bound): left
  // out, they can only be due at the bound itself, where the router had not routed them yet.
  for (TimeNs k = next_key_in(window); k <= limit; k = next_key_in(window)) {
    const TimeNs t = k / 2;
    now_ns = t;
    int local = 0;
    bool triggered = false;  // the event loop's request_schedule would be called
    if (replica_.busy() && done_ns_ == t) {
      complete();
      ++local;
      triggered = true;
    }
    for (; next_arrival_ != end_arrival_ && next_arrival_->at == t && next_arrival_->window <= window; ++next_arrival_) {
      triggered |= arrive(next_arrival_->request);
      prefetch_next_request();
      ++local;
    }
    if (t == bound) {  // the router decides at t before anything starts
      if (triggered && !replica_.busy()) pending_ns_ = t;
      return;
    }
    schedule_phase(t, local, triggered, bound);
  }
}

void Lane::schedule_phase(TimeNs t, int local, bool triggered, TimeNs bound) {
  bool woke = false;
  for (; !wakes_.empty() && wakes_.top() == t; wakes_.pop()) {
    events += 1;
    woke = true;
    ++local;
  }
  const bool pending = pending_ns_ == t;
  if (pending) {
    pending_ns_ = -1;
    events += 1;  // the deferred start's event
  } else if (triggered && local > 1 && !replica_.busy()) {
    events += 1;  // deferred behind this lane's other events at t
  }
  if (triggered || woke || pending) start(bound);
}

void Lane::complete() {
  handoffs_.clear();
  replica_.finish_iteration(now_ns, handoffs_);
  for (const std::uint32_t i : replica_.completed()) released.push_back(i);
  events += 1;
}

bool Lane::arrive(std::uint32_t request) {
  const Replica::Admission admission = replica_.enqueue(request, now_ns);
  if (admission == Replica::Admission::queued) return true;
  Request& r = pool_[request];
  r.state = RequestState::rejected;
  rejections.count(r);
  if (admission == Replica::Admission::queue_full) rejections.queue_full += 1;
  if (observer_) observer_->on_rejected(r.id, r, now_ns);
  released.push_back(request);
  return false;
}

// EventLoop::start with this lane's next event (or the window's end) as the horizon.
void Lane::start(TimeNs bound) {
  if (replica_.busy()) return;
  for (;;) {
    const TimeNs horizon = std::min(bound, next_own_ns());
    TimeNs in_flight_end = -1;  // a quiet step that ends after the horizon starts all the same
    const std::int64_t steps = replica_.advance_decode_run(now_ns, horizon, &in_flight_end);
    decode_run_steps += static_cast<std::uint64_t>(steps);
    events += static_cast<std::uint64_t>(steps);
    if (in_flight_end >= 0) {
      decode_run_steps += 1;
      done_ns_ = in_flight_end;
      return;
    }
    const std::optional<TimeNs> duration = replica_.start_iteration(now_ns);
    if (!duration) {
      if (const TimeNs wake = replica_.wake_at_ns(); wake > now_ns && wake != wake_pending_ns_) {
        wake_pending_ns_ = wake;
        wakes_.push(wake);
      }
      return;
    }
    const TimeNs end = now_ns + *duration;
    if (end >= horizon) {
      done_ns_ = end;
      return;
    }
    now_ns = end;
    complete();
  }
}

struct FleetLanes::Arena {
  explicit Arena(int threads) : arena(threads) {}
  tbb::task_arena arena;
};

FleetLanes::FleetLanes(std::vector<std::unique_ptr<Replica>>& replicas, RequestPool& pool, FleetKv& fleet,
                       RunObserver* observer, int threads, const Rejections& zero)
    : pool_(pool),
      fleet_(fleet),
      observer_(observer),
      threads_(static_cast<std::size_t>(usable_threads(threads))) {
  for (auto& r : replicas) lanes_.push_back(std::make_unique<Lane>(*r, pool, observer != nullptr, zero));
  key_.assign(lanes_.size(), kNeverNs);
  routed_count_.assign(lanes_.size(), 0);
  lane_end_.assign(lanes_.size(), 0);
  if (threads_ > 1) {
    arena_ = std::make_unique<Arena>(static_cast<int>(threads_));
    buckets_.resize(threads_);
  }
}

FleetLanes::~FleetLanes() = default;

void FleetLanes::deliver(std::uint32_t replica, std::uint32_t request, TimeNs at) {
  routed_.push_back({at, request, static_cast<std::uint32_t>(bounds_.size())});
  routed_lane_.push_back(replica);
  ++routed_count_[replica];
  if (const TimeNs k = key_of(at, false); k < key_[replica]) {
    key_[replica] = k;
    heap_.emplace(k, replica);
  }
}

void FleetLanes::advance() {
  const TimeNs limit = limit_of(bounds_.back());
  active_.clear();
  while (!heap_.empty() && heap_.top().first <= limit) {
    const auto [key, lane] = heap_.top();
    heap_.pop();
    if (key != key_[lane]) continue;  // superseded by an earlier key
    key_[lane] = kNeverNs;
    active_.push_back(lane);
  }
  // The batch's arrivals by lane (a counting sort, arrival order kept within a lane). A lane that
  // got one is active: its key is at most the arrival's, at most the last bound.
  std::size_t end = 0;
  for (const std::uint32_t lane : active_) {
    end += routed_count_[lane];
    lane_end_[lane] = end;
  }
  if (end != routed_.size()) throw std::logic_error("simulation invariant: an arrival routed to a lane that does not run");
  by_lane_.resize(end);
  for (std::size_t i = routed_.size(); i-- > 0;) by_lane_[--lane_end_[routed_lane_[i]]] = routed_[i];
  for (const std::uint32_t lane : active_) {
    const LaneArrival* first = by_lane_.data() + lane_end_[lane];
    lanes_[lane]->take_arrivals(first, first + routed_count_[lane]);
    routed_count_[lane] = 0;
  }
  routed_.clear();
  routed_lane_.clear();
  run();
  for (const std::uint32_t lane : active_) {
    if (lanes_[lane]->arrivals_left()) throw std::logic_error("simulation invariant: a lane left arrivals past its batch");
  }
  std::sort(active_.begin(), active_.end());
  merge();
  bounds_.clear();
  for (const std::uint32_t lane : active_) {
    const TimeNs k = lanes_[lane]->next_key();
    key_[lane] = k;
    if (k != kNeverNs) heap_.emplace(k, lane);
  }
}

void FleetLanes::run() {
  // One lane through every window of the batch before the next lane: its state stays in cache.
  const auto run_lane = [this](std::uint32_t lane) {
    Lane& l = *lanes_[lane];
    for (std::size_t w = 0; w < bounds_.size(); ++w) {
      l.run_to(bounds_[w], static_cast<std::uint32_t>(w));
      l.kv_marks.push_back(l.kv_log.size());
    }
  };
  if (threads_ <= 1 || active_.size() < 2) {
    for (const std::uint32_t lane : active_) run_lane(lane);
    return;
  }
  for (auto& b : buckets_) b.clear();
  for (const std::uint32_t lane : active_) buckets_[cache_group(lane, lanes_.size(), threads_)].push_back(lane);
  arena_->arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, buckets_.size(), [&](std::size_t g) {
      for (const std::uint32_t lane : buckets_[g]) run_lane(lane);
    });
  });
}

void FleetLanes::merge() {
  if (observer_) {
    flush_.clear();
    if (!door_.empty()) flush_.push_back(&door_);
    for (const std::uint32_t lane : active_) {
      if (!lanes_[lane]->buffer.empty()) flush_.push_back(&lanes_[lane]->buffer);
    }
    if (!flush_.empty()) ObserverBuffer::flush(flush_, *observer_);
  }
  // Window by window, as the windows would have been merged one at a time: an instant at a
  // bound can have changes on both sides of the router's decision, and the fleet's peak is
  // taken after each side.
  for (std::size_t w = 0; w < bounds_.size(); ++w) {
    for (const std::uint32_t lane : active_) {
      const Lane& l = *lanes_[lane];
      const auto from = static_cast<std::ptrdiff_t>(w == 0 ? 0 : l.kv_marks[w - 1]);
      const auto to = static_cast<std::ptrdiff_t>(l.kv_marks[w]);
      changes_.insert(changes_.end(), l.kv_log.begin() + from, l.kv_log.begin() + to);
    }
    fleet_.apply(changes_);
  }
  for (const std::uint32_t lane : active_) {
    Lane& l = *lanes_[lane];
    l.kv_log.clear();
    l.kv_marks.clear();
    for (const std::uint32_t i : l.released) pool_.release(i);
    l.released.clear();
  }
}

std::uint64_t FleetLanes::events() const {
  std::uint64_t n = 0;
  for (const auto& l : lanes_) n += l->events;
  return n;
}

std::uint64_t FleetLanes::decode_run_steps() const {
  std::uint64_t n = 0;
  for (const auto& l : lanes_) n += l->decode_run_steps;
  return n;
}

TimeNs FleetLanes::last_ns() const {
  TimeNs t = 0;
  for (const auto& l : lanes_) t = std::max(t, l->now_ns);
  return t;
}

Rejections FleetLanes::rejections() const {
  Rejections sum = lanes_.front()->rejections;
  for (std::size_t i = 1; i < lanes_.size(); ++i) sum.add(lanes_[i]->rejections);
  return sum;
}

}  // namespace servesim
