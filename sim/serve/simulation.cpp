// Event loop. Arrivals are generated lazily (each arrival schedules the next), so the queue holds
// O(replicas) events however many requests the workload has; with one replica and no contention
// there is exactly one event per iteration.
#include "sim/serve/simulation.hpp"

#include <chrono>
#include <variant>
#include <vector>

#include "sim/core/event_queue.hpp"
#include "sim/serve/replica.hpp"
#include "sim/workload/workload.hpp"

namespace servesim {

namespace {

struct ArrivalEvent {
  RequestSpec spec;
};
struct IterationDoneEvent {};
struct ScheduleEvent {};
using Payload = std::variant<ArrivalEvent, IterationDoneEvent, ScheduleEvent>;

class Engine {
 public:
  explicit Engine(const Scenario& s)
      : scenario_(s), memory_(plan_memory(s)), workload_(s.workload, s.seed) {
    if (s.workload.num_requests > 0) requests_.reserve(static_cast<std::size_t>(s.workload.num_requests));
    metrics_.classes.resize(s.workload.classes.size());
    replica_.emplace(s, memory_.kv_blocks, requests_, metrics_);
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
    }
    metrics_.end_ns = now_;
    metrics_.trace_rows_skipped = workload_.trace_rows_skipped();
    SimResult result{std::move(metrics_), memory_, events,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()};
    return result;
  }

 private:
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
    push_next_arrival();
    metrics_.arrived += 1;
    metrics_.classes[a.spec.cls].arrived += 1;
    Request r;
    r.cls = static_cast<std::uint16_t>(a.spec.cls);
    r.arrival_ns = a.spec.arrival_ns;
    r.prompt_tokens = static_cast<std::int32_t>(a.spec.prompt_tokens);
    r.output_tokens = static_cast<std::int32_t>(a.spec.output_tokens);
    const auto index = static_cast<std::uint32_t>(requests_.size());
    requests_.push_back(r);
    // A request longer than max_model_len, or one the KV cache could never hold even alone, is
    // rejected at once (vLLM does the same) rather than waiting forever.
    const std::int64_t total = a.spec.prompt_tokens + a.spec.output_tokens;
    const auto& kv = replica_->state().kv;
    const auto watermark = static_cast<std::int64_t>(scenario_.engine.watermark_frac * static_cast<double>(kv.capacity_blocks()));
    if (total > scenario_.engine.max_model_len || kv.blocks_for_tokens(total) > kv.capacity_blocks() - watermark) {
      reject(a.spec.cls);
      metrics_.rejected_too_long += 1;
      return;
    }
    // A bounded queue (SGLang's max_queued_requests) turns overload into counted rejections.
    const std::int64_t limit = scenario_.engine.max_queued_requests;
    if (limit > 0 && static_cast<std::int64_t>(replica_->state().waiting.size()) >= limit) {
      reject(a.spec.cls);
      metrics_.rejected_queue_full += 1;
      return;
    }
    replica_->enqueue(index, now_);
    request_schedule();
  }

  void reject(std::uint32_t cls) {
    requests_.back().state = RequestState::rejected;
    metrics_.rejected += 1;
    metrics_.classes[cls].rejected += 1;
  }

  void handle(IterationDoneEvent&) {
    replica_->finish_iteration(now_);
    request_schedule();
  }

  void handle(ScheduleEvent&) {
    schedule_pending_ = false;
    if (auto duration = replica_->start_iteration(now_)) {
      queue_.push(now_ + *duration, Phase::Completion, IterationDoneEvent{});
    }
  }

  const Scenario& scenario_;
  MemoryPlan memory_;
  WorkloadGenerator workload_;
  std::vector<Request> requests_;
  RunMetrics metrics_;
  std::optional<Replica> replica_;
  EventQueue<Payload> queue_;
  TimeNs now_ = 0;
  bool schedule_pending_ = false;
};

}  // namespace

SimResult simulate(const Scenario& scenario) {
  Engine engine(scenario);
  return engine.run();
}

}  // namespace servesim
