// Event loop. Arrivals are generated lazily (each arrival schedules the next), so the queue holds
// O(replicas) events however many requests the workload has; with one replica and no contention
// there is exactly one event per iteration.
#include "sim/serve/simulation.hpp"

#include <chrono>
#include <variant>
#include <vector>

#include "sim/core/event_queue.hpp"
#include "sim/serve/replica.hpp"
#include "sim/serve/saturation.hpp"
#include "sim/workload/workload.hpp"

namespace servesim {

namespace {

struct ArrivalEvent {
  RequestSpec spec;
};
struct IterationDoneEvent {};
struct ScheduleEvent {};
struct WakeEvent {};  // a policy waiting for a batch window or timeout to expire
using Payload = std::variant<ArrivalEvent, IterationDoneEvent, ScheduleEvent, WakeEvent>;

RequestSpec spec_of(const Request& r) {
  RequestSpec s;
  s.arrival_ns = r.arrival_ns;
  s.prompt_tokens = r.prompt_tokens;
  s.output_tokens = r.output_tokens;
  s.prefix_id = r.prefix_id;
  s.prefix_tokens = r.prefix_tokens;
  s.stream_id = r.stream_id;
  s.turn = r.turn;
  s.priority = r.priority;
  return s;
}

class Engine {
 public:
  Engine(const Scenario& s, const SimHooks& hooks)
      : scenario_(s), memory_(plan_memory(s)), workload_(s.workload, s.seed), hooks_(hooks) {
    requests_.reserve(static_cast<std::size_t>(s.workload.num_requests));
    replica_.emplace(s, memory_, requests_, metrics_);
    replica_->set_observer(hooks.observer, 0);
  }

  SimResult run() {
    const auto wall_start = std::chrono::steady_clock::now();
    push_next_arrival();
    std::uint64_t events = 0;
    while (!queue_.empty()) {
      auto ev = queue_.pop();
      now_ = ev.time_ns;
      ++events;
      std::visit([this](auto& payload) { handle(payload); }, ev.payload);
      if ((events & 0xfff) == 0 && hooks_.progress) report_progress();
    }
    metrics_.end_ns = now_;
    replica_->finish_run(now_);
    if (hooks_.progress) report_progress();
    if (hooks_.observer) hooks_.observer->on_end(now_);
    SimResult result{std::move(metrics_), memory_, events,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count(), Saturation{}};
    return result;
  }

 private:
  void report_progress() {
    hooks_.progress(Progress{metrics_.arrived, metrics_.completed + metrics_.rejected,
                             scenario_.workload.num_requests, ns_to_seconds(now_)});
  }

  void push_next_arrival() {
    if (auto spec = workload_.next()) queue_.push(spec->arrival_ns, Phase::Arrival, ArrivalEvent{*spec});
  }

  void request_schedule() {
    if (!replica_->busy() && !schedule_pending_) {
      schedule_pending_ = true;
      queue_.push(now_, Phase::Schedule, ScheduleEvent{});
    }
  }

  void handle(ArrivalEvent& a) {
    // Later turns of a session come from completions, not from the arrival process.
    if (a.spec.turn == 0) push_next_arrival();
    metrics_.arrived += 1;
    Request r;
    r.arrival_ns = a.spec.arrival_ns;
    r.prompt_tokens = static_cast<std::int32_t>(a.spec.prompt_tokens);
    r.output_tokens = static_cast<std::int32_t>(a.spec.output_tokens);
    r.prefix_id = a.spec.prefix_id;
    r.prefix_tokens = static_cast<std::int32_t>(a.spec.prefix_tokens);
    r.stream_id = a.spec.stream_id;
    r.turn = a.spec.turn;
    r.priority = a.spec.priority;
    const auto index = static_cast<std::uint32_t>(requests_.size());
    requests_.push_back(r);
    if (hooks_.observer) hooks_.observer->on_arrival(index, r, now_);
    // A request longer than max_model_len, or one the KV cache could never hold even alone, is
    // rejected at once (vLLM does the same) rather than waiting forever; so is one that finds
    // the queue full. A rejected turn ends its session.
    const Replica::Admission admission = replica_->enqueue(index, now_);
    if (admission != Replica::Admission::queued) {
      requests_.back().state = RequestState::rejected;
      metrics_.rejected += 1;
      if (admission == Replica::Admission::queue_full) metrics_.rejected_queue_full += 1;
      if (hooks_.observer) hooks_.observer->on_rejected(index, requests_.back(), now_);
      return;
    }
    request_schedule();
  }

  void handle(IterationDoneEvent&) {
    replica_->finish_iteration(now_);
    if (sessions_) {
      for (const std::uint32_t i : replica_->completed()) {
        if (auto next = workload_.next_turn(spec_of(requests_[i]), now_)) {
          queue_.push(next->arrival_ns, Phase::Arrival, ArrivalEvent{*next});
        }
      }
    }
    request_schedule();
  }

  void handle(ScheduleEvent&) {
    schedule_pending_ = false;
    if (auto duration = replica_->start_iteration(now_)) {
      queue_.push(now_ + *duration, Phase::Completion, IterationDoneEvent{});
    } else if (const TimeNs wake = replica_->wake_at_ns(); wake > now_ && wake != wake_pending_ns_) {
      wake_pending_ns_ = wake;
      queue_.push(wake, Phase::Schedule, WakeEvent{});
    }
  }

  void handle(WakeEvent&) { request_schedule(); }

  const Scenario& scenario_;
  MemoryPlan memory_;
  WorkloadGenerator workload_;
  const SimHooks& hooks_;
  std::vector<Request> requests_;
  RunMetrics metrics_;
  std::optional<Replica> replica_;
  EventQueue<Payload> queue_;
  TimeNs now_ = 0;
  bool schedule_pending_ = false;
  bool sessions_ = scenario_.workload.sessions.turns > 1;
  TimeNs wake_pending_ns_ = -1;
};

}  // namespace

SimResult simulate(const Scenario& scenario, const SimHooks& hooks) {
  Engine engine(scenario, hooks);
  SimResult result = engine.run();
  result.saturation = decode_saturation(scenario);
  return result;
}

}  // namespace servesim
