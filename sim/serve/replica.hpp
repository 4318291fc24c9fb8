// Replica: one serving instance on tp x pp GPUs. A batch scheduler (policy) over a paged KV
// allocator (mechanism), its iterations priced by a step cost model (serve/step_cost.hpp). The event loop asks it to start an
// iteration whenever it is idle and to commit the iteration when it ends. In a disaggregated
// deployment a prefill replica hands each prompt's KV off after its first token, and a decode
// replica takes such sequences in without recomputing them.
#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/core/rng.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/metrics/run_metrics.hpp"
#include "sim/metrics/run_observer.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "sim/serve/gpu_share.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/parallel.hpp"
#include "sim/serve/router.hpp"
#include "sim/serve/step_cost.hpp"

namespace servesim {

enum class ReplicaRole { unified, prefill, decode };
const char* replica_role_name(ReplicaRole r);

struct ReplicaSpec {
  std::uint32_t index = 0;
  ReplicaRole role = ReplicaRole::unified;
  ParallelConfig parallel;  // tensor/pipeline sizes of this replica (data_parallel_size unused)
  MemoryPlan memory;
};

// Fleets larger than this keep no per-replica KV usage series (the fleet's series is kept): at
// 2,048 replicas those series were three quarters of report.json's text, and building and
// writing them most of the run (callgrind; docs/scale.md). report.json says when they are left out.
constexpr std::size_t kMaxReplicasWithUsageSeries = 64;

// KV blocks in use across all replicas, for the fleet's peak (the sum of peaks overstates it) and
// its usage series (used fraction of all replicas' blocks).
struct FleetKv {
  std::int64_t capacity_blocks = 0;
  std::int64_t used_blocks = 0;
  std::int64_t peak_used_blocks = 0;
  SampledSeries usage;
  // A fleet of one replica: its block peak and usage series are the fleet's, value for value, so
  // the replica keeps only its own (these fields stay unused) and the event loop takes them at the end.
  bool one_replica = false;
  bool replica_series = true;  // replicas keep their own usage series (kMaxReplicasWithUsageSeries)

  // A change of one replica's block count: (time, blocks added; negative: freed).
  using Change = std::pair<TimeNs, std::int64_t>;
  // Replicas that ran ahead alone (a fleet's time window, serve/fleet_lanes.hpp) log their
  // changes; applied here in time order. The peak is the largest total at the end of an instant
  // (changes at one instant are simultaneous, so their order does not count), which is what the
  // usage series samples too.
  void apply(std::vector<Change>& changes);
  std::vector<Change> sort_scratch;  // apply's radix sort
};

// A prefilled sequence leaving a prefill replica: its blocks stay allocated until the transfer ends.
struct Handoff {
  std::uint32_t request = 0;
  Sequence seq;  // its slot and written tokens, released when the transfer ends
};

class Replica {
 public:
  // step_caches: the simulation's kernel-time caches and op-list memos, shared by its replicas.
  Replica(const Scenario& scenario, const ReplicaSpec& spec, RequestPool& requests, FleetKv& fleet_kv,
          StepCaches& step_caches);

  enum class Admission { queued, too_long, queue_full };

  const ReplicaSpec& spec() const { return spec_; }
  bool busy() const { return busy_; }
  const ReplicaState& state() const { return state_; }
  const RunMetrics& metrics() const { return metrics_; }
  RunMetrics& metrics() { return metrics_; }
  // The router's view; the KV demand of the waiting queue (O(queue)) only when asked for.
  ReplicaLoad load(bool with_kv_demand) const;

  // A new request routed here (counted as arrived at this replica): queues it, or says why it is
  // rejected: longer than max_model_len or than the KV cache could ever hold, or the waiting
  // queue is at max_queue_size.
  Admission enqueue(std::uint32_t request_index, TimeNs now);
  // A request whose KV is on its way here from a prefill replica (counts as outstanding).
  void expect_migrated() { inbound_ += 1; }
  // Its KV arrived: it waits for blocks and then decodes without prefill.
  void enqueue_migrated(std::uint32_t request_index, TimeNs now);
  // The KV of a handed-off sequence has been sent: its blocks are freed.
  void release_handoff(const Handoff& h, TimeNs now);

  // Plans the next iteration at `now`; returns its duration, or nothing (the replica stays idle,
  // until wake_at_ns() if that is set).
  std::optional<TimeNs> start_iteration(TimeNs now);
  TimeNs wake_at_ns() const { return plan_.wake_at_ns; }
  // Commits the running iteration at `now`: tokens are produced, finished requests leave (listed
  // in completed() until the next call), and (prefill role) prefilled sequences that still have
  // tokens to generate are appended to `handoffs`.
  void finish_iteration(TimeNs now, std::vector<Handoff>& handoffs);
  const std::vector<std::uint32_t>& completed() const { return completed_; }
  // Quiet decode run (the event loop's fast-forward): while the policy would only decode the whole
  // batch (BatchScheduler::decodes_only), no sequence finishes, the free blocks cover the step's
  // new blocks and the step would end before `horizon_ns` (the next queued event), runs the step
  // at `now` and commits it at its end, as start_iteration and finish_iteration would: the same
  // step time (the cost model is evaluated per step: durations are rounded to whole ns and the
  // attention tables interpolate in log space, so k steps have no exact closed-form sum), the
  // same metrics and KV accounting in the same order, the same observer calls; only the policy,
  // the plan and the per-sequence commit are skipped (O(new blocks) per step, not O(batch)).
  // Moves `now` to the end of the last step and returns how many ran (0: not quiet).
  // in_flight_end (a fleet's lane): the quiet step that would end at or after the horizon starts
  // now all the same (start_iteration would plan it), its end is written there and
  // finish_iteration commits it as the run would; untouched when no such step started.
  std::int64_t advance_decode_run(TimeNs& now, TimeNs horizon_ns, TimeNs* in_flight_end = nullptr);
  // Copies the scheduler's counters into the metrics and closes the time integrals at `end`.
  void finish_run(TimeNs end);

  // Reports request transitions and iterations to `observer` (not owned; null = none).
  void set_observer(RunObserver* observer, std::int32_t replica_index) {
    observer_ = observer;
    index_ = replica_index;
  }
  // Running ahead of the fleet (serve/fleet_lanes.hpp): its changes of KV blocks are logged in
  // `kv_log` for FleetKv::apply, and the requests it lets go (rejected, timed out) listed in
  // `released` for the event loop to release in the pool; null (default): done at once.
  void set_logs(std::vector<FleetKv::Change>* kv_log, std::vector<std::uint32_t>* released) {
    kv_log_ = kv_log;
    released_ = released;
  }
  // Instances sharing one GPU (parallel.instances_per_gpu > 1) share one GpuShare (not owned).
  void set_gpu_share(GpuShare* share) { gpu_share_ = share; }
  // reference_path: time every kernel with estimate() (no cache), write every token into its
  // Request (no decode window) and register every prefix-cache block as it fills;
  // check_every_iteration: the allocator's O(capacity) invariant check after each iteration.
  void set_checks(bool reference_path, bool check_every_iteration) {
    cost_ = make_step_cost_model(scenario_, spec_.parallel, reference_path, &step_caches_);
    state_.late_registration = !reference_path;
    // Multi-step windows (engine.num_scheduler_steps > 1) and speculative decoding (each sequence
    // advances by its own accepted tokens) take the per-item path: no decode window, so no lazy
    // tokens and no quiet decode runs (quiet_decode needs lazy_computed).
    use_decode_window_ = !reference_path && scenario_.engine.num_scheduler_steps == 1 && !scenario_.engine.speculative.enabled();
    state_.lazy_kv = use_decode_window_ && spec_.role != ReplicaRole::prefill && state_.plain_paged();
    state_.lazy_computed = state_.lazy_kv && !scheduler_->reads_running_tokens();
    check_every_iteration_ = check_every_iteration;
  }

 private:
  // start_iteration's steps: the policy plans (after timeouts and migrated arrivals); the
  // replica accounts for what it did (drops, first starts, admissions, preemptions, KV usage) and
  // says whether there is anything to run; the iteration's metrics and observer record.
  void run_policy(TimeNs now);
  bool account_plan(TimeNs now);
  // swap_s, load_s: swap and blocking offload copies before the forward pass, added to the step.
  TimeNs record_iteration(TimeNs now, const StepTime& step, double swap_s, double load_s);
  // Speculative decoding (engine.speculative): each planned decode becomes a verify pass whose
  // accepted drafts are drawn now (truncated geometric in the acceptance rate, from this
  // replica's stream), so the item commits 1 + accepted tokens (at most the request's remaining
  // output) and its KV reservation grows by them; a block the accepted tokens need and cannot get
  // costs them. The plan's shape stays the scheduler's: the step cost model prices the verify
  // pass and the drafter from it (serve/speculative_step.hpp).
  void speculate();
  // start_iteration for a multi-step decode window (plan_.decode_steps > 1): prices and records
  // each of its steps, every sequence's context one token longer than in the step before;
  // returns the window's duration.
  TimeNs record_window(TimeNs now, double swap_s, double load_s);
  void stretch_by_contention(StepTime& step);
  void note_kv_usage(TimeNs now);
  // The time integrals of KV usage up to now: all of note_kv_usage when nothing changed since
  // the last call (the usage series record held values without being called).
  void note_kv_elapsed(TimeNs now);
  void start_quiet_step(TimeNs now, const StepTime& step, const std::vector<std::uint32_t>& opening);
  void finish_quiet_step(TimeNs end);
  // advance_decode_run's preconditions that hold for the whole run.
  bool quiet_decode() const;
  void note_waiting(TimeNs now, std::int64_t delta);
  // Aborts requests older than workload.request_timeout_s (counted as timed out).
  void expire(TimeNs now);
  void record_class(const Request& r, double ttft_s, double tpot_s, double e2e_s);
  void emit_token(Request& r, TimeNs now);
  // Commits a plan in which every running sequence decoded one token (the common case) and
  // lists in done_ the indices of the sequences that have now generated all their tokens.
  void commit_decode_all(TimeNs now);
  // A running sequence that generated all its tokens: frees its blocks, completes the request.
  void finish_request(const Sequence& seq, TimeNs now);
  void complete(Request& r, TimeNs now);
  void release_request(std::uint32_t index) {
    if (released_) {
      released_->push_back(index);
    } else {
      state_.requests.release(index);
    }
  }

  const Scenario& scenario_;
  ReplicaSpec spec_;
  ReplicaState state_;
  std::unique_ptr<BatchScheduler> scheduler_;
  RunMetrics metrics_;
  FleetKv& fleet_kv_;
  std::vector<FleetKv::Change>* kv_log_ = nullptr;  // set_logs
  std::vector<std::uint32_t>* released_ = nullptr;
  IterationPlan plan_;
  StepCaches& step_caches_;              // the simulation's, shared (serve/parallel.hpp)
  std::unique_ptr<StepCostModel> cost_;  // prices plan_ (serve/step_cost.hpp)
  // The step a quiet decode run priced but did not run (the next event came first): the
  // iteration start_iteration plans next has that shape, and the cost model is a pure function
  // of it, so it is not priced twice.
  BatchShape priced_shape_;
  StepTime priced_step_;
  bool have_priced_ = false;
  bool use_decode_window_ = true;
  RngStream acceptance_rng_;  // speculative decoding's accepted drafts, drawn in plan order
  GpuShare* gpu_share_ = nullptr;
  bool check_every_iteration_ = false;
  std::vector<std::uint32_t> completed_;
  std::vector<std::uint32_t> done_;  // running indices that finished this iteration, ascending
  std::int64_t handing_off_ = 0;  // sequences whose KV is being sent away
  std::int64_t inbound_ = 0;      // sequences whose KV is on its way here
  bool busy_ = false;
  bool quiet_in_flight_ = false;  // the running iteration is a quiet step (advance_decode_run)
  RunObserver* observer_ = nullptr;
  std::int32_t index_ = 0;
  TimeNs kv_since_ns_ = 0;
  std::int64_t kv_used_ = 0, kv_frag_ = 0;
  TimeNs waiting_since_ns_ = 0;
  std::int64_t waiting_new_ = 0;  // queued requests that have not started
  std::int64_t dropped_seen_ = 0;
  // Async scheduling (EngineProfile::async_scheduling): requests that arrived while an iteration
  // ran, in arrival order; the engine planned the next iteration when the running one started,
  // so they join the waiting queue only for the iteration after it (release_deferred).
  std::deque<Sequence> deferred_;
  TimeNs last_start_ns_ = -1, last_end_ns_ = -1;  // the last iteration's span
  // Moves deferred requests that arrived at or before `cutoff` to the waiting queue.
  void release_deferred(TimeNs cutoff);
};

}  // namespace servesim
