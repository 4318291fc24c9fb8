// Replica: one serving instance on one GPU. A batch scheduler (policy) over a paged KV allocator
// (mechanism), timed by the cost model. The engine asks it to start an iteration whenever it is
// idle and to commit the iteration when it ends.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/metrics/run_metrics.hpp"
#include "sim/metrics/run_observer.hpp"
#include "sim/sched/scheduler.hpp"
#include "sim/serve/memory_plan.hpp"

namespace servesim {

class Replica {
 public:
  Replica(const Scenario& scenario, const MemoryPlan& memory, std::vector<Request>& requests, RunMetrics& metrics);

  enum class Admission { queued, too_long, queue_full };

  bool busy() const { return busy_; }
  bool has_work() const { return !state_.waiting.empty() || !state_.running.empty() || !state_.swapped.empty(); }
  // Queues a new request, or says why it is rejected: longer than max_model_len or than the KV
  // cache could ever hold, or the waiting queue is at max_queue_size.
  Admission enqueue(std::uint32_t request_index, TimeNs now);

  // Plans the next iteration at `now`; returns its duration, or nothing (the replica stays idle,
  // until wake_at_ns() if that is set).
  std::optional<TimeNs> start_iteration(TimeNs now);
  TimeNs wake_at_ns() const { return plan_.wake_at_ns; }
  // Commits the running iteration at `now`: tokens are produced, finished requests leave
  // (listed in completed() until the next call).
  void finish_iteration(TimeNs now);
  const std::vector<std::uint32_t>& completed() const { return completed_; }
  // Copies the scheduler's counters into the metrics and closes the time integrals at `end`.
  void finish_run(TimeNs end);

  const ReplicaState& state() const { return state_; }
  // Reports request transitions and iterations to `observer` (not owned; null = none).
  void set_observer(RunObserver* observer, std::int32_t replica_index) {
    observer_ = observer;
    index_ = replica_index;
  }

 private:
  void note_kv_usage(TimeNs now);
  void note_waiting(TimeNs now, std::int64_t delta);
  void emit_token(Request& r, TimeNs now);

  const Scenario& scenario_;
  ReplicaState state_;
  std::unique_ptr<BatchScheduler> scheduler_;
  RunMetrics& metrics_;
  IterationPlan plan_;
  std::vector<Op> ops_;  // reused each iteration
  std::vector<std::uint32_t> completed_;
  bool busy_ = false;
  RunObserver* observer_ = nullptr;
  std::int32_t index_ = 0;
  TimeNs kv_since_ns_ = 0;
  std::int64_t kv_used_ = 0, kv_frag_ = 0;
  TimeNs waiting_since_ns_ = 0;
  std::int64_t waiting_new_ = 0;  // queued requests that have not started
  std::int64_t dropped_seen_ = 0;
};

}  // namespace servesim
