// Event loop. Arrivals are generated lazily (each arrival schedules the next), so the queue holds
// O(replicas) events however many requests the workload has. A replica's next iteration is
// planned at once when no other event shares the instant (the phase order could not change
// anything), so one replica with no contention costs one event per iteration plus one per
// arrival; otherwise a Schedule event defers it until completions, transfers and arrivals at that
// instant have been handled.
#include "sim/serve/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/event_queue.hpp"
#include "sim/serve/fleet_lanes.hpp"
#include "sim/serve/parallel.hpp"
#include "sim/serve/router.hpp"
#include "sim/serve/saturation_batch.hpp"
#include "sim/workload/workload.hpp"

namespace servesim {

std::vector<ReplicaSpec> replica_specs(const Scenario& s) {
  std::vector<ReplicaSpec> specs;
  const auto add = [&](ReplicaRole role, std::int64_t count, std::int64_t tp, std::int64_t pp) {
    ReplicaSpec spec;
    spec.role = role;
    spec.parallel = s.parallel;
    spec.parallel.tensor_parallel_size = tp;
    spec.parallel.pipeline_parallel_size = pp;
    spec.parallel.data_parallel_size = 1;
    spec.memory = plan_memory(s, tp, pp);
    for (std::int64_t i = 0; i < count; ++i) {
      spec.index = static_cast<std::uint32_t>(specs.size());
      specs.push_back(spec);
    }
  };
  if (s.disaggregation.enabled) {
    const auto& d = s.disaggregation;
    add(ReplicaRole::prefill, d.prefill.replicas, d.prefill.tensor_parallel_size, d.prefill.pipeline_parallel_size);
    add(ReplicaRole::decode, d.decode.replicas, d.decode.tensor_parallel_size, d.decode.pipeline_parallel_size);
  } else {
    add(ReplicaRole::unified, s.parallel.data_parallel_size * s.instances, s.parallel.tensor_parallel_size,
        s.parallel.pipeline_parallel_size);
  }
  return specs;
}

namespace {

struct ArrivalEvent {
  RequestSpec spec;
};
struct IterationDoneEvent {
  std::uint32_t replica;
};
struct ScheduleEvent {
  std::uint32_t replica;
};
struct WakeEvent {  // a policy waiting for a batch window or timeout to expire
  std::uint32_t replica;
};
struct KvTransferDoneEvent {
  std::uint32_t from, to;
  Handoff handoff;
};
using Payload = std::variant<ArrivalEvent, IterationDoneEvent, ScheduleEvent, WakeEvent, KvTransferDoneEvent>;

RequestSpec spec_of(const Request& r) {
  RequestSpec s;
  s.arrival_ns = r.arrival_ns;
  s.prompt_tokens = r.prompt_tokens;
  s.output_tokens = r.output_tokens;
  s.prefix_id = r.prefix_id;
  s.prefix_tokens = r.prefix_tokens;
  s.stream_id = r.stream_id;
  s.turn = r.turn;
  s.stream_use = r.stream_use;
  s.priority = r.priority;
  s.stage = r.stage;
  return s;
}

// A pool of interchangeable replicas behind one router.
struct Pool {
  std::vector<std::uint32_t> members;
  std::unique_ptr<Router> router;
};

LinkScope kv_link(const Scenario& s, std::int64_t total_gpus) {
  const std::string& l = s.disaggregation.kv_transfer_link;
  if (l == "nvlink") return LinkScope::nvlink;
  if (l == "pcie") return LinkScope::pcie;
  if (l == "inter_node") return LinkScope::inter_node;
  return s.hw.interconnect.scope_for(static_cast<int>(total_gpus));
}

class EventLoop;

// Closed loop: every departure (a completion, or a rejection or timeout wherever it happens) frees
// its client, so the event loop sees each one here before the caller's observer does.
class DepartureTap final : public RunObserver {
 public:
  DepartureTap(EventLoop& loop, RunObserver* next) : loop_(loop), next_(next) {}
  void on_arrival(std::uint32_t id, const Request& r, TimeNs now) override {
    if (next_) next_->on_arrival(id, r, now);
  }
  void on_rejected(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_admitted(std::uint32_t id, TimeNs now) override {
    if (next_) next_->on_admitted(id, now);
  }
  void on_prefill_done(std::uint32_t id, TimeNs now) override {
    if (next_) next_->on_prefill_done(id, now);
  }
  void on_preempted(std::uint32_t id, TimeNs now) override {
    if (next_) next_->on_preempted(id, now);
  }
  void on_finished(std::uint32_t id, const Request& r, TimeNs now) override;
  void on_iteration(const IterationRecord& it) override {
    if (next_) next_->on_iteration(it);
  }
  void on_end(TimeNs end_ns) override {
    if (next_) next_->on_end(end_ns);
  }

 private:
  EventLoop& loop_;
  RunObserver* next_;
};

class EventLoop {
 public:
  EventLoop(const Scenario& s, const SimHooks& hooks)
      : scenario_(s), workload_(s.workload, s.seed), hooks_(hooks), tap_(*this, hooks.observer) {
    if (closed_loop_) observer_ = &tap_;
    class_arrived_.assign(s.workload.classes.size(), 0);
    rejections_.by_class.assign(s.workload.classes.size(), 0);
    if (s.workload.arrival.kind == ArrivalConfig::Kind::stages) {
      stage_arrived_.assign(s.workload.arrival.stages.size(), 0);
      rejections_.by_stage.assign(s.workload.arrival.stages.size(), 0);
    }
    const std::vector<ReplicaSpec> specs = replica_specs(s);
    windowed_ = windows_apply(s, specs.size());
    // Lanes of one cache group run on one thread at a time (fleet_lanes.hpp).
    const std::size_t groups = windowed_ ? static_cast<std::size_t>(usable_threads(hooks.sim_threads)) : 1;
    for (std::size_t g = 0; g < groups; ++g) step_caches_.push_back(std::make_unique<StepCaches>());
    for (const ReplicaSpec& spec : specs) fleet_kv_.capacity_blocks += spec.memory.kv_blocks;
    fleet_kv_.one_replica = specs.size() == 1;
    fleet_kv_.replica_series = specs.size() <= kMaxReplicasWithUsageSeries;
    for (const ReplicaSpec& spec : specs) {
      StepCaches& caches = *step_caches_[cache_group(spec.index, specs.size(), groups)];
      replicas_.push_back(std::make_unique<Replica>(s, spec, requests_, fleet_kv_, caches));
      replicas_.back()->set_observer(observer_, static_cast<std::int32_t>(spec.index));
      replicas_.back()->set_checks(hooks.reference_path, hooks.check_every_iteration);
      if (s.instances > 1) {
        // Consecutive replicas are the instances of one GPU.
        if (spec.index % static_cast<std::uint32_t>(s.instances) == 0) {
          gpu_shares_.push_back(std::make_unique<GpuShare>(s, decode_saturation(s).context_tokens));
          gpus_ += spec.parallel.gpus_per_replica();
        }
        replicas_.back()->set_gpu_share(gpu_shares_.back().get());
      } else {
        gpus_ += spec.parallel.gpus_per_replica();
      }
      Pool& pool = spec.role == ReplicaRole::decode ? decode_ : entry_;
      pool.members.push_back(spec.index);
    }
    entry_.router = make_router(s.router);
    if (!decode_.members.empty()) decode_.router = make_router(s.router);
    memory_ = specs.front().memory;
    schedule_pending_.assign(replicas_.size(), false);
    wake_pending_ns_.assign(replicas_.size(), -1);
    link_free_ns_.assign(replicas_.size(), 0);
    transfer_scope_ = kv_link(s, gpus_);
    with_kv_demand_ = entry_.router->reads_kv_demand();
  }

  SimResult run() {
    const auto wall_start = std::chrono::steady_clock::now();
    if (windowed_) {
      run_windows();
    } else {
      run_queue();
    }
    SimResult result = collect();
    result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return result;
  }

 private:
  // The fleet in time windows (fleet_lanes.hpp) where nothing but the router crosses replicas:
  // an open loop without sessions (a completion there sends no request), no disaggregation (no
  // KV transfers between pools), one instance per GPU (no shared GPU), two replicas or more.
  bool windows_apply(const Scenario& s, std::size_t replicas) const {
    return hooks_.windows && fast_forward_ && replicas > 1 && !closed_loop_ && !sessions_ && !s.disaggregation.enabled &&
           s.instances == 1;
  }

  void run_queue() {
    // Open loop: each arrival schedules the next. Closed loop: every client sends its first
    // request now, and each departure its client's next (client_free).
    const std::int64_t first_sends = closed_loop_ ? scenario_.workload.arrival.clients : 1;
    for (std::int64_t c = 0; c < first_sends; ++c) push_next_arrival();
    while (!queue_.empty()) {
      auto ev = queue_.pop();
      if (ev.time_ns < now_) throw std::logic_error("simulation invariant: time went backwards");
      now_ = ev.time_ns;
      std::visit([this](auto& payload) { handle(payload); }, ev.payload);
      count_event();
    }
  }

  // Arrivals are routed one window at a time: one arrival for a router that reads the replicas'
  // state (each lane must reach it first), a batch for one that does not (round robin).
  void run_windows() {
    FleetLanes lanes(replicas_, requests_, fleet_kv_, hooks_.observer, hooks_.sim_threads, rejections_);
    lanes_ = &lanes;
    if (observer_) observer_ = &lanes.door();
    const std::size_t per_window = entry_.router->reads_loads() ? 1 : std::max<std::size_t>(256, 16 * replicas_.size());
    if (per_window == 1) {
      for (const auto& r : replicas_) lane_loads_.push_back(r->load(with_kv_demand_));
    }
    // Round robin without an observer routes a batch of windows before the lanes run them
    // (FleetLanes::advance): each lane's state (its allocator, running set, histograms, the
    // requests it holds) is woken from memory once per batch rather than once per window. Up to
    // 128 arrivals a replica (8 windows at 16 a replica), and 2^17 (~15 MB of requests held at
    // once): 512 replicas x 512,000 requests, one core, 3.2 -> 2.6 s CPU (docs/scale.md).
    const std::size_t batch = per_window > 1 && hooks_.observer == nullptr
                                  ? std::max<std::size_t>(1, std::min<std::size_t>(128 * replicas_.size(), std::size_t{1} << 17) / per_window)
                                  : 1;
    std::optional<RequestSpec> next = workload_.next();
    std::uint64_t windows = 0;
    while (next) {
      const std::uint64_t windows_before = windows;
      for (std::size_t w = 0; next && w < batch; ++w, ++windows) {
        for (std::size_t k = 0; next && k < per_window; ++k) {
          now_ = next->arrival_ns + frontend_ns_;
          arrive(*next);
          next = workload_.next();
          ++events_;
        }
        lanes.end_window(next ? next->arrival_ns + frontend_ns_ : kNeverNs);
      }
      lanes.advance();
      // Only the lanes that ran can have changed: the router scans the others' loads as kept.
      if (per_window == 1) {
        for (const std::uint32_t lane : lanes.active()) lane_loads_[lane] = replicas_[lane]->load(with_kv_demand_);
      }
      if (hooks_.progress && (windows >> 8) != (windows_before >> 8)) report_progress();
    }
    events_ += lanes.events();
    decode_run_steps_ += lanes.decode_run_steps();
    now_ = std::max(now_, lanes.last_ns());
    rejections_.add(lanes.rejections());
    observer_ = hooks_.observer;
    lanes_ = nullptr;
  }

 public:
  SimResult collect() {
    SimResult result;
    result.metrics.rejected = rejections_.total;
    result.metrics.rejected_queue_full = rejections_.queue_full;
    result.metrics.rejected_too_long = rejections_.too_long;
    result.metrics.classes.resize(scenario_.workload.classes.size());
    for (const auto& r : replicas_) {
      r->finish_run(now_);
      RunMetrics m = r->metrics();
      m.end_ns = now_;
      result.metrics.merge(m);
      result.replicas.push_back({r->spec(), std::move(m)});
    }
    if (hooks_.progress) report_progress();
    if (observer_) observer_->on_end(now_);
    // Arrivals at the fleet are the workload's (migrated requests arrive twice at replicas).
    result.metrics.arrived = arrived_;
    for (std::size_t c = 0; c < class_arrived_.size(); ++c) {
      result.metrics.classes[c].arrived = class_arrived_[c];
      result.metrics.classes[c].rejected += rejections_.by_class[c];
    }
    result.metrics.stages.resize(stage_arrived_.size());
    for (std::size_t k = 0; k < stage_arrived_.size(); ++k) {
      result.metrics.stages[k].arrived = stage_arrived_[k];
      result.metrics.stages[k].rejected += rejections_.by_stage[k];
    }
    result.metrics.trace_rows_skipped = workload_.trace_rows_skipped();
    if (fleet_kv_.one_replica) {
      // Finished at now_ like the fleet's would be (finish_run).
      result.metrics.kv_peak_used_blocks = result.replicas.front().metrics.kv_peak_used_blocks;
      result.metrics.kv_usage = result.replicas.front().metrics.kv_usage;
    } else {
      result.metrics.kv_peak_used_blocks = fleet_kv_.peak_used_blocks;
      fleet_kv_.usage.finish(now_);
      result.metrics.kv_usage = fleet_kv_.usage;
    }
    result.metrics.end_ns = now_;
    result.memory = memory_;
    result.gpus = gpus_;
    result.kv_transfers = kv_transfers_;
    result.kv_transfer_bytes = kv_transfer_bytes_;
    result.kv_transfer_s = kv_transfer_s_;
    result.kv_transfer_link = scenario_.disaggregation.enabled ? link_scope_name(transfer_scope_) : "";
    result.events = events_;
    result.decode_run_steps = decode_run_steps_;
    check_end_of_run(result);
    return result;
  }

 private:
  // The accounting every run must satisfy; cheap, so always on (a broken one is a simulator bug).
  void check_end_of_run(SimResult& result) const {
    RunAccounting& a = result.accounting;
    const RunMetrics& m = result.metrics;
    a.requests_in_flight_at_end = static_cast<std::int64_t>(requests_.live());
    a.request_table_high_water = static_cast<std::int64_t>(requests_.high_water());
    for (const auto& r : replicas_) a.kv_blocks_in_use_at_end += r->state().kv.used_blocks();
    a.output_tokens_asked = m.output_tokens;
    a.output_tokens_generated = m.completed_generated_tokens;
    const auto fail = [](const std::string& what) { throw std::logic_error("simulation invariant: " + what); };
    if (m.completed + m.rejected + m.timed_out != m.arrived) {
      fail(std::to_string(m.arrived) + " arrived but " + std::to_string(m.completed) + " completed, " +
           std::to_string(m.rejected) + " rejected and " + std::to_string(m.timed_out) + " timed out");
    }
    if (a.requests_in_flight_at_end != 0) fail(std::to_string(a.requests_in_flight_at_end) + " requests still in flight at the end");
    if (a.kv_blocks_in_use_at_end != 0) fail(std::to_string(a.kv_blocks_in_use_at_end) + " KV blocks still allocated at the end");
    if (a.output_tokens_generated != a.output_tokens_asked) {
      fail(std::to_string(a.output_tokens_generated) + " tokens generated for completed requests that asked for " +
           std::to_string(a.output_tokens_asked));
    }
  }

  void report_progress() {
    // Completions and timeouts are counted by the replicas; rejections at the door here.
    std::int64_t finished = rejections_.total;
    for (const auto& r : replicas_) finished += r->metrics().completed + r->metrics().rejected_timeout;
    hooks_.progress(Progress{arrived_, finished, scenario_.workload.num_requests, ns_to_seconds(now_)});
  }

  // A request reaches the engine engine.frontend_latency_s after the client sent it (its
  // arrival_ns, from which latencies are measured).
  void push_next_arrival() {
    if (auto spec = workload_.next()) queue_.push(spec->arrival_ns + frontend_ns_, Phase::Arrival, ArrivalEvent{*spec});
  }

  // Plans replica r's next iteration now if nothing else happens at this instant, else once
  // everything at this instant has been handled.
  void request_schedule(std::uint32_t r) {
    if (replicas_[r]->busy() || schedule_pending_[r]) return;
    if (queue_.empty() || queue_.top().time_ns > now_) {
      start(r);
      return;
    }
    schedule_pending_[r] = true;
    queue_.push(now_, Phase::Schedule, ScheduleEvent{r});
  }

  // Every handled event counts (the report's sim.events), chained iterations too.
  void count_event() {
    ++events_;
    if ((events_ & 0xfff) == 0 && hooks_.progress) report_progress();
  }

  // Starts replica r's next iteration. Fast-forward: while the iteration would end before every
  // other queued event, its completion is the next event the loop would pop, so it is handled
  // here at once and the next iteration planned, without the queue round trip: same events in
  // the same order, same report (SimHooks::fast_forward off gives the per-event loop). Runs of
  // quiet decode steps (the whole batch decodes, nobody finishes) skip the policy and the
  // per-sequence commit too (Replica::advance_decode_run).
  void start(std::uint32_t r) {
    Replica& replica = *replicas_[r];
    for (;;) {
      if (fast_forward_) {
        // Quiet decode steps before the next queued event: committed by the replica in one
        // run, each counted as the chained iteration it stands for.
        const TimeNs horizon = queue_.empty() ? std::numeric_limits<TimeNs>::max() : queue_.top().time_ns;
        const std::int64_t steps = replica.advance_decode_run(now_, horizon);
        decode_run_steps_ += static_cast<std::uint64_t>(steps);
        for (std::int64_t k = 0; k < steps; ++k) count_event();
      }
      const std::optional<TimeNs> duration = replica.start_iteration(now_);
      if (!duration) {
        if (const TimeNs wake = replica.wake_at_ns(); wake > now_ && wake != wake_pending_ns_[r]) {
          wake_pending_ns_[r] = wake;
          queue_.push(wake, Phase::Schedule, WakeEvent{r});
        }
        return;
      }
      const TimeNs end_ns = now_ + *duration;
      // Strictly before: another completion at end_ns that is already queued would pop first.
      if (!fast_forward_ || (!queue_.empty() && queue_.top().time_ns <= end_ns)) {
        queue_.push(end_ns, Phase::Completion, IterationDoneEvent{r});
        return;
      }
      now_ = end_ns;
      complete_iteration(r);
      count_event();
      // request_schedule's test: the handlers above may have queued events at this instant.
      if (!queue_.empty() && queue_.top().time_ns <= now_) {
        schedule_pending_[r] = true;
        queue_.push(now_, Phase::Schedule, ScheduleEvent{r});
        return;
      }
    }
  }

  std::uint32_t route(Pool& pool, std::int64_t prefix_id) {
    if (pool.members.size() == 1) return pool.members.front();
    if (!pool.router->reads_loads()) {
      loads_.resize(pool.members.size());  // only the count is read
      return pool.members[pool.router->route(loads_, prefix_id)];
    }
    if (lanes_) return pool.router->route(lane_loads_, prefix_id);  // the one pool, every replica in order
    loads_.clear();
    for (const std::uint32_t i : pool.members) loads_.push_back(replicas_[i]->load(with_kv_demand_));
    return pool.members[pool.router->route(loads_, prefix_id)];
  }

  void handle(ArrivalEvent& a) {
    // Later turns of a session come from completions, not from the arrival process; a closed
    // loop's next requests from departures.
    if (a.spec.turn == 0 && !closed_loop_) push_next_arrival();
    arrive(a.spec);
  }

  // A request reaches the router at now_: counted, turned away at the door or routed.
  void arrive(const RequestSpec& spec) {
    arrived_ += 1;
    class_arrived_[spec.cls] += 1;
    if (!stage_arrived_.empty()) stage_arrived_[spec.stage] += 1;
    Request r;
    r.cls = static_cast<std::uint16_t>(spec.cls);
    r.arrival_ns = spec.arrival_ns;
    r.prompt_tokens = static_cast<std::int32_t>(spec.prompt_tokens);
    r.output_tokens = static_cast<std::int32_t>(spec.output_tokens);
    r.prefix_id = spec.prefix_id;
    r.prefix_tokens = static_cast<std::int32_t>(spec.prefix_tokens);
    r.stream_id = spec.stream_id;
    r.turn = spec.turn;
    r.stream_use = spec.stream_use;
    r.priority = spec.priority;
    r.stage = spec.stage;
    r.id = static_cast<std::uint32_t>(arrived_ - 1);
    const std::uint32_t index = requests_.acquire(r);
    if (observer_) observer_->on_arrival(r.id, r, now_);
    // A request longer than max_model_len, or one a replica's KV cache could never hold even
    // alone, is rejected at once (vLLM does the same) rather than waiting forever; so is one that
    // finds its replica's queue full. A rejected turn ends its session.
    const std::int64_t total = spec.prompt_tokens + spec.output_tokens;
    if (total > scenario_.engine.max_model_len || !fits_alone(entry_, total) ||
        (!decode_.members.empty() && !fits_alone(decode_, total))) {
      reject(index);
      rejections_.too_long += 1;
      return;
    }
    const std::uint32_t target = route(entry_, r.prefix_id);
    if (lanes_) {
      lanes_->deliver(target, index, now_);
      return;
    }
    const Replica::Admission admission = replicas_[target]->enqueue(index, now_);
    if (admission != Replica::Admission::queued) {
      reject(index);
      if (admission == Replica::Admission::queue_full) rejections_.queue_full += 1;
      return;
    }
    request_schedule(target);
  }

  void reject(std::uint32_t index) {
    Request& r = requests_[index];
    r.state = RequestState::rejected;
    rejections_.count(r);
    if (observer_) observer_->on_rejected(r.id, r, now_);
    requests_.release(index);
  }

 public:
  // Closed loop: request `r` left at now_ (completed or not); its client sends the session's next
  // turn, or, when the session is over, a new request after its think time.
  void client_free(const Request& r, bool completed) {
    if (!completed && now_ == r.arrival_ns && think_ns_ == 0 && scenario_.workload.num_requests < 0) {
      // Refused the moment it was sent, its client would send again at the same instant: with
      // no request count nothing guarantees the clock ever moves.
      throw InputError(scenario_.file, "workload.arrival.think_time_s",
                       "a closed-loop request was rejected the moment it was sent (too long, or the queue was full), so its "
                       "client sends again at the same instant and the clock need not advance: set workload.num_requests or "
                       "a think_time_s above 0");
    }
    if (completed && sessions_) {
      if (auto next = workload_.next_turn(spec_of(r), now_)) {
        queue_.push(next->arrival_ns + frontend_ns_, Phase::Arrival, ArrivalEvent{*next});
        return;
      }
    }
    if (auto next = workload_.next_sent_at(ns_to_seconds(now_ + think_ns_))) {
      queue_.push(next->arrival_ns + frontend_ns_, Phase::Arrival, ArrivalEvent{*next});
    }
  }

 private:

  bool fits_alone(const Pool& pool, std::int64_t tokens) const {
    const ReplicaState& st = replicas_[pool.members.front()]->state();
    return st.kv.blocks_for_tokens(st.reserve_target(tokens)) <= st.kv.capacity_blocks() - st.watermark_blocks;
  }

  void handle(IterationDoneEvent& e) {
    complete_iteration(e.replica);
    request_schedule(e.replica);
  }

  // Replica r's iteration ends now: its tokens, completions (and next session turns) and handoffs.
  void complete_iteration(std::uint32_t r) {
    handoffs_.clear();
    Replica& replica = *replicas_[r];
    replica.finish_iteration(now_, handoffs_);
    for (const Handoff& h : handoffs_) start_transfer(r, h);
    for (const std::uint32_t i : replica.completed()) {
      if (sessions_ && !closed_loop_) {  // a closed loop's clients continue in client_free
        if (auto next = workload_.next_turn(spec_of(requests_[i]), now_)) {
          queue_.push(next->arrival_ns + frontend_ns_, Phase::Arrival, ArrivalEvent{*next});
        }
      }
      requests_.release(i);
    }
  }

  // The prompt's KV goes from every GPU of the prefill replica to its counterpart in parallel
  // (the side with fewer GPUs sets the shard size); transfers from one replica queue on its links.
  void start_transfer(std::uint32_t from, const Handoff& h) {
    const Request& r = requests_[h.request];
    const std::uint32_t to = route(decode_, r.prefix_id);
    replicas_[to]->expect_migrated();
    const double bytes = kv_layout_.kv_bytes(r.prompt_tokens, scenario_.precision.kv_cache);
    const auto lanes = static_cast<double>(std::min(replicas_[from]->spec().parallel.gpus_per_replica(),
                                                    replicas_[to]->spec().parallel.gpus_per_replica()));
    const double seconds = scenario_.hw.interconnect.time_s(Collective::send_recv, bytes / lanes, 2, transfer_scope_);
    const TimeNs begin = std::max(now_, link_free_ns_[from]);
    const TimeNs end = begin + std::max<TimeNs>(1, seconds_to_ns(seconds));
    link_free_ns_[from] = end;
    kv_transfers_ += 1;
    kv_transfer_bytes_ += bytes;
    kv_transfer_s_ += seconds;
    queue_.push(end, Phase::Transfer, KvTransferDoneEvent{from, to, h});
  }

  void handle(KvTransferDoneEvent& e) {
    replicas_[e.from]->release_handoff(e.handoff, now_);
    request_schedule(e.from);
    replicas_[e.to]->enqueue_migrated(e.handoff.request, now_);
    request_schedule(e.to);
  }

  void handle(ScheduleEvent& e) {
    schedule_pending_[e.replica] = false;
    start(e.replica);
  }

  void handle(WakeEvent& e) { request_schedule(e.replica); }

  const Scenario& scenario_;
  WorkloadGenerator workload_;
  const TimeNs frontend_ns_ = seconds_to_ns(scenario_.engine.frontend_latency_s);
  const SimHooks& hooks_;
  const bool closed_loop_ = scenario_.workload.arrival.closed_loop();
  // The layers as the engine's KV cache holds them (kv_cache_windowed_layers): the bytes a
  // disaggregated prompt's KV transfer moves. Built once, not per migrated request.
  const ModelSpec kv_layout_ = kv_cache_layout(scenario_.model, scenario_.engine.profile.kv_windowed_layers);
  const TimeNs think_ns_ = seconds_to_ns(scenario_.workload.arrival.think_time_s);
  DepartureTap tap_;
  RunObserver* observer_ = hooks_.observer;  // the tap in a closed loop (it forwards to hooks_.observer)
  RequestPool requests_;
  FleetKv fleet_kv_;
  // Shared by the replicas (one per cache group with sim_threads); declared before them, destroyed after.
  std::vector<std::unique_ptr<StepCaches>> step_caches_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<std::unique_ptr<GpuShare>> gpu_shares_;  // one per GPU when instances share GPUs
  Pool entry_, decode_;
  MemoryPlan memory_;
  std::int64_t gpus_ = 0;
  std::vector<bool> schedule_pending_;
  std::vector<TimeNs> link_free_ns_;
  LinkScope transfer_scope_ = LinkScope::nvlink;
  bool with_kv_demand_ = false;
  std::vector<ReplicaLoad> loads_;
  std::vector<ReplicaLoad> lane_loads_;  // run_windows: every replica's load, refreshed after it runs
  std::vector<Handoff> handoffs_;
  EventQueue<Payload> queue_;
  TimeNs now_ = 0;
  std::int64_t arrived_ = 0, kv_transfers_ = 0;
  Rejections rejections_;  // at the door and (windows) by the replicas' queues; replicas count the rest
  std::vector<std::int64_t> class_arrived_;  // the fleet's view
  std::vector<std::int64_t> stage_arrived_;  // likewise per arrival stage (empty without stages)
  double kv_transfer_bytes_ = 0.0, kv_transfer_s_ = 0.0;
  bool sessions_ = scenario_.workload.sessions.turns > 1;
  std::vector<TimeNs> wake_pending_ns_;
  std::uint64_t events_ = 0, decode_run_steps_ = 0;
  bool fast_forward_ = hooks_.fast_forward && !hooks_.reference_path;
  bool windowed_ = false;
  FleetLanes* lanes_ = nullptr;  // while run_windows runs
};

void DepartureTap::on_rejected(std::uint32_t id, const Request& r, TimeNs now) {
  if (next_) next_->on_rejected(id, r, now);
  loop_.client_free(r, false);
}

void DepartureTap::on_finished(std::uint32_t id, const Request& r, TimeNs now) {
  if (next_) next_->on_finished(id, r, now);
  loop_.client_free(r, true);
}

}  // namespace

SimResult simulate(const Scenario& scenario, const SimHooks& hooks) {
  EventLoop loop(scenario, hooks);
  SimResult result = loop.run();
  result.saturation = decode_saturation(scenario);
  return result;
}

}  // namespace servesim
