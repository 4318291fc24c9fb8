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
#include "sim/sched/scheduler.hpp"

namespace servesim {

class Replica {
 public:
  Replica(const Scenario& scenario, std::int64_t kv_blocks, std::vector<Request>& requests, RunMetrics& metrics);

  bool busy() const { return busy_; }
  bool has_work() const { return !state_.waiting.empty() || !state_.running.empty(); }
  void enqueue(std::uint32_t request_index, TimeNs now);

  // Plans the next iteration at `now`; returns its duration, or nothing (the replica stays idle).
  std::optional<TimeNs> start_iteration(TimeNs now);
  // Commits the running iteration at `now`: tokens are produced, finished requests leave.
  void finish_iteration(TimeNs now);

  const ReplicaState& state() const { return state_; }

 private:
  void note_kv_usage(TimeNs now);
  // Drops requests older than workload.request_timeout_s (counted as timed out).
  void expire(TimeNs now);
  void record_class(const Request& r, double ttft_s, double tpot_s, double e2e_s);
  void emit_token(Request& r, TimeNs now);

  const Scenario& scenario_;
  ReplicaState state_;
  std::unique_ptr<BatchScheduler> scheduler_;
  RunMetrics& metrics_;
  IterationPlan plan_;
  std::vector<Op> ops_;  // reused each iteration
  bool busy_ = false;
  TimeNs kv_since_ns_ = 0;
  std::int64_t kv_used_ = 0;
};

}  // namespace servesim
