// Replica iteration cycle: policy -> account for its plan -> step cost model (+ swap transfers over
// the host link, + contention on a shared GPU) -> record -> commit when the iteration ends.
#include "sim/serve/replica.hpp"

#include <algorithm>
#include <array>

#include "sim/model/speculative.hpp"
#include "sim/serve/parallel.hpp"
#include "sim/workload/workload.hpp"

namespace servesim {

const char* replica_role_name(ReplicaRole r) {
  switch (r) {
    case ReplicaRole::unified: return "unified";
    case ReplicaRole::prefill: return "prefill";
    case ReplicaRole::decode: return "decode";
  }
  return "?";
}

Replica::Replica(const Scenario& scenario, const ReplicaSpec& spec, RequestPool& requests, FleetKv& fleet_kv,
                 StepCaches& step_caches)
    : scenario_(scenario),
      spec_(spec),
      state_(scenario.engine, spec.memory.kv_blocks, spec.memory.kv_block_bytes(), requests),
      scheduler_(make_scheduler(scenario.engine.scheduler)),
      fleet_kv_(fleet_kv),
      step_caches_(step_caches),
      acceptance_rng_(scenario.seed, "speculative-acceptance/" + std::to_string(spec.index)) {
  metrics_.kv_capacity_blocks = spec.memory.kv_blocks;
  metrics_.kv_unit_tokens = spec.memory.kv_unit_tokens;
  metrics_.classes.resize(scenario.workload.classes.size());
  state_.concurrent_streams = streams_run_concurrently(scenario.workload);
  if (scenario.workload.arrival.kind == ArrivalConfig::Kind::stages) metrics_.stages.resize(scenario.workload.arrival.stages.size());
  set_checks(false, false);
}

ReplicaLoad Replica::load(bool with_kv_demand) const {
  ReplicaLoad l;
  l.outstanding = static_cast<std::int64_t>(state_.waiting.size() + deferred_.size() + state_.running.size() +
                                            state_.swapped.size() + state_.migrated.size() + state_.loading.size()) +
                  handing_off_ + inbound_;
  l.kv_used_blocks = state_.kv.used_blocks();
  if (with_kv_demand) {
    for (std::size_t c = 0; c < state_.waiting.classes(); ++c) {
      for (const Sequence& s : state_.waiting.queue(c)) l.kv_demand_blocks += state_.kv.blocks_for_tokens(s.target_tokens);
    }
    for (const Sequence& s : state_.migrated) l.kv_demand_blocks += state_.kv.blocks_for_tokens(s.target_tokens);
    for (const Sequence& s : deferred_) l.kv_demand_blocks += state_.kv.blocks_for_tokens(s.target_tokens);
  }
  l.kv_capacity_blocks = std::max<std::int64_t>(1, state_.kv.capacity_blocks());
  return l;
}

Replica::Admission Replica::enqueue(std::uint32_t request_index, TimeNs now) {
  Request& r = state_.requests[request_index];
  r.replica = static_cast<std::int32_t>(spec_.index);
  metrics_.arrived += 1;
  metrics_.last_arrival_ns = std::max(metrics_.last_arrival_ns, now);
  const std::int64_t total = static_cast<std::int64_t>(r.prompt_tokens) + r.output_tokens;
  const auto& kv = state_.kv;
  // A policy that runs prompts whole (in-flight batching) never runs one longer than an
  // iteration's token budget.
  const bool whole_prompt_too_long = scheduler_->rejects_prompts_over_budget() &&
                                     static_cast<std::int64_t>(r.prompt_tokens) > scenario_.engine.max_num_batched_tokens;
  if (total > scenario_.engine.max_model_len || whole_prompt_too_long ||
      kv.blocks_for_tokens(state_.reserve_target(total)) > kv.capacity_blocks() - state_.watermark_blocks) {
    return Admission::too_long;
  }
  const std::int64_t limit = scenario_.engine.scheduler.max_queue_size;
  if (limit > 0 && static_cast<std::int64_t>(state_.waiting.size() + deferred_.size()) >= limit) return Admission::queue_full;
  Sequence seq;
  seq.request = request_index;
  seq.target_tokens = r.prompt_tokens;
  if (busy_ && scenario_.engine.profile.async_scheduling) {
    deferred_.push_back(seq);
  } else {
    state_.waiting.push_back(seq, state_.class_of(seq));
  }
  note_waiting(now, +1);
  return Admission::queued;
}

void Replica::release_deferred(TimeNs cutoff) {
  const TimeNs frontend_ns = seconds_to_ns(scenario_.engine.frontend_latency_s);
  while (!deferred_.empty() && state_.requests[deferred_.front().request].arrival_ns + frontend_ns <= cutoff) {
    state_.waiting.push_back(deferred_.front(), state_.class_of(deferred_.front()));
    deferred_.pop_front();
  }
}

void Replica::note_waiting(TimeNs now, std::int64_t delta) {
  metrics_.waiting_request_seconds += static_cast<double>(waiting_new_) * ns_to_seconds(now - waiting_since_ns_);
  waiting_since_ns_ = now;
  waiting_new_ += delta;
}

void Replica::enqueue_migrated(std::uint32_t request_index, TimeNs /*now*/) {
  Request& r = state_.requests[request_index];
  r.replica = static_cast<std::int32_t>(spec_.index);
  inbound_ -= 1;
  metrics_.arrived += 1;
  Sequence seq;
  seq.request = request_index;
  seq.target_tokens = r.prompt_tokens;
  seq.computed_tokens = r.prompt_tokens;
  seq.kv_tokens = r.prompt_tokens;
  state_.migrated.push_back(seq);
}

void Replica::release_handoff(const Handoff& h, TimeNs now) {
  state_.release(h.seq);
  handing_off_ -= 1;
  note_kv_usage(now);
}

namespace {
// Sorts changes by time, in any order within an instant. A window of round robin logs ~10^5
// changes (a replica's blocks change most decode steps), where std::sort's comparisons took 10%
// of a 1,000-replica run (callgrind); an LSD radix sort on the offset from the earliest, 11 bits
// a pass, takes 3 passes over a window of up to 2^33 ns.
void sort_by_time(std::vector<FleetKv::Change>& changes, std::vector<FleetKv::Change>& scratch) {
  if (changes.size() < 512) {
    std::sort(changes.begin(), changes.end(), [](const FleetKv::Change& a, const FleetKv::Change& b) { return a.first < b.first; });
    return;
  }
  TimeNs lo = changes.front().first, hi = lo;
  for (const FleetKv::Change& c : changes) {
    lo = std::min(lo, c.first);
    hi = std::max(hi, c.first);
  }
  const auto range = static_cast<std::uint64_t>(hi - lo);
  constexpr int kBits = 11;
  constexpr std::uint64_t kMask = (std::uint64_t{1} << kBits) - 1;
  scratch.resize(changes.size());
  for (int shift = 0; shift < 64 && (range >> shift) != 0; shift += kBits) {
    std::array<std::size_t, kMask + 1> start{};
    for (const FleetKv::Change& c : changes) ++start[(static_cast<std::uint64_t>(c.first - lo) >> shift) & kMask];
    std::size_t sum = 0;
    for (std::size_t& n : start) sum += std::exchange(n, sum);
    for (const FleetKv::Change& c : changes) scratch[start[(static_cast<std::uint64_t>(c.first - lo) >> shift) & kMask]++] = c;
    changes.swap(scratch);
  }
}
}  // namespace

void FleetKv::apply(std::vector<Change>& changes) {
  sort_by_time(changes, sort_scratch);
  const double capacity = static_cast<double>(capacity_blocks);
  for (std::size_t i = 0; i < changes.size();) {
    const TimeNs t = changes[i].first;
    for (; i < changes.size() && changes[i].first == t; ++i) used_blocks += changes[i].second;
    peak_used_blocks = std::max(peak_used_blocks, used_blocks);
    usage.set(t, capacity > 0.0 ? static_cast<double>(used_blocks) / capacity : 0.0);
  }
  changes.clear();
}

void Replica::note_kv_elapsed(TimeNs now) {
  const double dt = ns_to_seconds(now - kv_since_ns_);
  const double unit = static_cast<double>(state_.kv.block_size_tokens());
  metrics_.kv_used_block_seconds += static_cast<double>(kv_used_) * dt;
  metrics_.kv_used_slot_seconds += static_cast<double>(kv_used_) * unit * dt;
  metrics_.kv_frag_slot_seconds += static_cast<double>(kv_frag_) * dt;
  kv_since_ns_ = now;
}

void Replica::note_kv_usage(TimeNs now) {
  // Noted already at this instant (a step starting where the last one ended): the integrals
  // would add 0.
  if (now != kv_since_ns_) note_kv_elapsed(now);
  const double unit = static_cast<double>(state_.kv.block_size_tokens());
  const std::int64_t used = state_.kv.used_blocks();
  const std::int64_t frag = state_.frag_slots;
  // The same blocks as last noted (most calls: a step that opened no block, or the end of a step
  // in which nothing finished): this replica's and the fleet's usage fractions and block peaks
  // stand, so the series are not set (a series records the value it holds at each sample time
  // when it is next set or finished, so it needs no call while that value holds), and the
  // fragmentation fraction can pass its peak only if frag grew (same positive divisor).
  const bool same_blocks = used == kv_used_;
  if (!same_blocks) {
    if (kv_log_) {
      kv_log_->emplace_back(now, used - kv_used_);
    } else if (!fleet_kv_.one_replica) {
      fleet_kv_.used_blocks += used - kv_used_;
      fleet_kv_.peak_used_blocks = std::max(fleet_kv_.peak_used_blocks, fleet_kv_.used_blocks);
      const double fleet_capacity = static_cast<double>(fleet_kv_.capacity_blocks);
      fleet_kv_.usage.set(now, fleet_capacity > 0.0 ? static_cast<double>(fleet_kv_.used_blocks) / fleet_capacity : 0.0);
    }
    kv_used_ = used;
    metrics_.kv_peak_used_blocks = std::max(metrics_.kv_peak_used_blocks, kv_used_);
    const double capacity = static_cast<double>(state_.kv.capacity_blocks());
    if (fleet_kv_.replica_series) metrics_.kv_usage.set(now, capacity > 0.0 ? static_cast<double>(kv_used_) / capacity : 0.0);
  }
  if (used > 0 && (!same_blocks || frag > kv_frag_)) {
    metrics_.kv_frag_peak_frac = std::max(metrics_.kv_frag_peak_frac, static_cast<double>(frag) / (static_cast<double>(used) * unit));
  }
  kv_frag_ = frag;
}

void Replica::expire(TimeNs now) {
  const double timeout_s = scenario_.workload.request_timeout_s;
  if (timeout_s <= 0.0) return;
  state_.now_ns = now;
  state_.timed_out_ids.clear();
  state_.abort_older_than(seconds_to_ns(timeout_s));
  for (const std::uint32_t id : state_.timed_out_ids) {
    const Request& r = state_.requests[id];
    metrics_.timed_out += 1;
    metrics_.classes[r.cls].timed_out += 1;
    if (!metrics_.stages.empty()) metrics_.stages[r.stage].timed_out += 1;
    if (r.started_ns < 0) note_waiting(now, -1);
    if (observer_) observer_->on_rejected(r.id, r, now);
    release_request(id);
  }
}

namespace {
bool same_shape(const BatchShape& a, const BatchShape& b) {
  return a.prefill_seqs == b.prefill_seqs && a.prefill_tokens == b.prefill_tokens && a.prefill_attn_pairs == b.prefill_attn_pairs &&
         a.prefill_kv_tokens == b.prefill_kv_tokens && a.prefill_sampled == b.prefill_sampled && a.decode_seqs == b.decode_seqs &&
         a.decode_kv_tokens == b.decode_kv_tokens && a.decode_query_tokens == b.decode_query_tokens;
}
}  // namespace

std::optional<TimeNs> Replica::start_iteration(TimeNs now) {
  if (busy_) return std::nullopt;
  if (!deferred_.empty()) {
    // Back to back, this iteration was planned when the last one started (vLLM V1's batch queue
    // of two); after an idle gap the engine plans at once.
    release_deferred(now == last_end_ns_ ? last_start_ns_ : now);
  }
  run_policy(now);
  if (!account_plan(now)) {
    // Nothing was in flight to overlap: the engine schedules what has arrived right away.
    if (deferred_.empty()) return std::nullopt;
    release_deferred(now);
    run_policy(now);
    if (!account_plan(now)) return std::nullopt;
  }
  // Swaps are copies on the same stream before the forward pass (vLLM's cache engine), so they
  // add their host-link time to the step.
  const double swap_s = state_.pending_swap_bytes > 0.0 ? state_.pending_swap_bytes / scenario_.hw.host_link_bytes_per_s : 0.0;
  // Blocking offload (engine.kv_offload.load, LMCache's connector) copies on the step's path:
  // the loads before the forward pass (start_load_kv) and the save of the KV the step prefills
  // (wait_for_save), both synchronous there; async offload (vLLM's connector) copies on its own
  // streams, off the step.
  double load_s = state_.pending_load_s;
  state_.pending_load_s = 0.0;
  if (scenario_.engine.kv_offload.blocking_load && plan_.shape.prefill_tokens > 0) {
    const double save_bytes = static_cast<double>(plan_.shape.prefill_tokens) * state_.kv_block_bytes / static_cast<double>(state_.kv.block_size_tokens());
    load_s += save_bytes / scenario_.engine.kv_offload.cpu_bandwidth_bytes_per_s;
  }
  if (plan_.decode_steps > 1) return record_window(now, swap_s, load_s);
  StepTime step = have_priced_ && same_shape(priced_shape_, plan_.shape) ? priced_step_ : cost_->step_time(plan_.shape);
  have_priced_ = false;
  if (gpu_share_) {
    gpu_share_->busy += 1;
    stretch_by_contention(step);
  }
  return record_iteration(now, step, swap_s, load_s);
}

void Replica::speculate() {
  const SpeculativeConfig& sp = scenario_.engine.speculative;
  if (plan_.all_running_decode) {  // every running sequence decodes: listed, each gets its own count
    for (std::size_t j = 0; j < plan_.all_running_seqs; ++j) plan_.items.push_back({static_cast<std::uint32_t>(j), 1, false});
    plan_.all_running_decode = false;
  }
  for (PlannedItem& item : plan_.items) {
    if (item.prefill) continue;
    const Sequence& seq = state_.running[item.running_index];
    const Request& r = state_.requests[seq.request];
    const std::int64_t accepted = speculative_accepted(sp.acceptance_rate, sp.num_speculative_tokens, acceptance_rng_.uniform());
    std::int64_t tokens = std::min<std::int64_t>(accepted + 1, r.output_tokens - r.generated_tokens);
    while (tokens > 1 && !state_.grow(item.running_index, seq.computed_tokens + tokens)) --tokens;
    item.new_tokens = tokens;
    metrics_.spec_verified_seqs += 1;
    metrics_.spec_draft_tokens += sp.num_speculative_tokens;
    metrics_.spec_accepted_tokens += accepted;
    metrics_.spec_emitted_tokens += tokens;
    metrics_.sampled_tokens += tokens - 1;  // the step's shape counts one per decode
  }
}

// Other instances on this GPU running iterations now (gpu_share_->busy, this one counted) stretch
// this step of plan_.shape (contention model).
inline void Replica::stretch_by_contention(StepTime& step) {
  const double factor = gpu_share_->slowdown(gpu_share_->busy, plan_.shape);
  metrics_.contention_s += (factor - 1.0) * step.time_s;
  step.time_s *= factor;
}

// run_policy, account_plan and record_iteration are start_iteration's steps, `inline` so the
// compiler folds them back into it (once per iteration: 0.3% of bench/million.json's
// instructions when they are calls).
inline void Replica::run_policy(TimeNs now) {
  expire(now);
  plan_.clear();
  state_.now_ns = now;
  state_.pending_swap_bytes = 0.0;
  const std::int64_t preemptions_before = state_.preemptions;
  state_.preempted_ids.clear();
  state_.dropped_ids.clear();
  // Sequences whose KV arrived from a prefill replica take blocks before the policy runs; they
  // then decode with the running batch whatever the policy.
  state_.admit_migrated();
  if (state_.offload.enabled()) {
    state_.finish_offload_loads();
    state_.start_offload_loads();
  }
  scheduler_->schedule(state_, plan_);
  if (!state_.loading.empty() && (plan_.wake_at_ns < 0 || state_.loading.front().ready_ns < plan_.wake_at_ns)) {
    plan_.wake_at_ns = state_.loading.front().ready_ns;  // idle, the replica wakes when a load is done
  }
  metrics_.preemptions += state_.preemptions - preemptions_before;
  if (scenario_.engine.speculative.enabled()) speculate();
}

inline bool Replica::account_plan(TimeNs now) {
  if (state_.dropped_timeout != dropped_seen_) {
    const std::int64_t dropped = state_.dropped_timeout - dropped_seen_;
    dropped_seen_ = state_.dropped_timeout;
    metrics_.rejected += dropped;
    metrics_.rejected_timeout += dropped;
    note_waiting(now, -dropped);
    if (observer_) {
      for (const std::uint32_t id : state_.dropped_ids) observer_->on_rejected(state_.requests[id].id, state_.requests[id], now);
    }
    for (const std::uint32_t id : state_.dropped_ids) {
      metrics_.classes[state_.requests[id].cls].rejected += 1;
      if (!metrics_.stages.empty()) metrics_.stages[state_.requests[id].stage].rejected += 1;
      release_request(id);
    }
  }
  // Listed items only: a plan of decodes only (all_running_decode, most plans) starts no request.
  for (std::size_t k = 0; k < plan_.items.size(); ++k) {
    const PlannedItem& item = plan_.items[k];
    if (!item.prefill) continue;  // a decoding request has started already
    Request& r = state_.requests[state_.running[item.running_index].request];
    if (r.started_ns < 0) {
      r.started_ns = now;
      const double t = ns_to_seconds(r.arrival_ns), q = ns_to_seconds(now - r.arrival_ns);
      metrics_.queue_s.add(q);
      metrics_.queue_fit_n += 1.0;
      metrics_.queue_fit_t += t;
      metrics_.queue_fit_q += q;
      metrics_.queue_fit_tt += t * t;
      metrics_.queue_fit_tq += t * q;
      note_waiting(now, -1);
    }
  }
  note_kv_usage(now);
  if (observer_) {
    for (const std::uint32_t id : state_.preempted_ids) observer_->on_preempted(state_.requests[id].id, now);
  }
  if (plan_.shape.total_tokens() == 0) return false;
  if (plan_.shape.prefill_seqs > 0) {
    // A prefill from token 0 is an admission: the first one, or a recompute after preemption.
    for (const PlannedItem& item : plan_.items) {
      const Sequence& seq = state_.running[item.running_index];
      Request& r = state_.requests[seq.request];
      // computed_tokens counts a prefix-cache hit too, so a first start is also "started now".
      if (!item.prefill || (seq.computed_tokens != 0 && r.started_ns != now)) continue;
      if (r.scheduled_ns < 0) r.scheduled_ns = now;
      if (observer_) observer_->on_admitted(r.id, now);
    }
  }
  return true;
}

inline TimeNs Replica::record_iteration(TimeNs now, const StepTime& step, double swap_s, double load_s) {
  const auto seqs = static_cast<std::int64_t>(plan_.seqs());
  metrics_.iterations += 1;
  if (plan_.shape.prefill_seqs > 0) metrics_.prefill_iterations += 1;
  if (step.launch_bound) metrics_.launch_bound_iterations += 1;
  metrics_.batch_seqs_sum += static_cast<double>(seqs);
  metrics_.max_batch_seqs = std::max(metrics_.max_batch_seqs, seqs);
  metrics_.busy_s += step.time_s + swap_s + load_s;
  metrics_.gpu_s += step.gpu_s;
  metrics_.comm_s += step.comm_s;
  metrics_.bubble_s += step.bubble_frac * (step.time_s - step.host_s);
  metrics_.bytes_moved += step.bytes;
  metrics_.swap_s += swap_s;
  metrics_.offload_stall_s += load_s;
  metrics_.padding_tokens += plan_.padding_tokens;
  metrics_.computed_tokens += plan_.shape.total_tokens();
  metrics_.launch_wait_s += step.launch_wait_s;
  metrics_.kernels += step.kernels;
  metrics_.sampled_tokens += plan_.shape.sampled_seqs();
  metrics_.hbm_bw_util_frac.add(step.bytes / (step.time_s * scenario_.hw.hbm_bandwidth_bytes_per_s));
  busy_ = true;
  // At least 1 ns so time always advances.
  const TimeNs duration_ns = std::max<TimeNs>(1, seconds_to_ns(step.time_s + swap_s + load_s));
  last_start_ns_ = now;
  last_end_ns_ = now + duration_ns;
  if (observer_) {
    IterationRecord it;
    it.replica = index_;
    it.start_ns = now;
    it.end_ns = now + duration_ns;
    it.seqs = seqs;
    it.prefill_seqs = plan_.shape.prefill_seqs;
    it.prefill_tokens = plan_.shape.prefill_tokens;
    it.decode_seqs = plan_.shape.decode_seqs;
    it.sampled_seqs = plan_.shape.sampled_seqs();
    it.decode_kv_tokens = plan_.shape.decode_kv_tokens;
    it.kv_used_blocks = state_.kv.used_blocks();
    it.kv_capacity_blocks = state_.kv.capacity_blocks();
    it.waiting = static_cast<std::int64_t>(state_.waiting.size());
    it.launch_bound = step.launch_bound;
    observer_->on_iteration(it);
  }
  return duration_ns;
}

TimeNs Replica::record_window(TimeNs now, double swap_s, double load_s) {
  const BatchShape first = plan_.shape;
  const auto seqs = static_cast<double>(plan_.shape.decode_seqs);
  if (gpu_share_) gpu_share_->busy += 1;
  TimeNs elapsed = 0;
  for (std::int64_t k = 0; k < plan_.decode_steps; ++k) {
    plan_.shape.decode_kv_tokens = first.decode_kv_tokens + static_cast<double>(k) * seqs;
    StepTime step = cost_->step_time(plan_.shape);
    if (gpu_share_) stretch_by_contention(step);
    // Swaps happen once, before the window's first forward pass.
    elapsed += record_iteration(now + elapsed, step, k == 0 ? swap_s : 0.0, k == 0 ? load_s : 0.0);
  }
  plan_.shape = first;
  return elapsed;
}

bool Replica::quiet_decode() const {
  const ReplicaState& st = state_;
  // lazy_computed: the window's bookkeeping knows each sequence's finish step and new blocks
  // without visiting it; every running sequence must be in the window.
  return !busy_ && st.lazy_computed && gpu_share_ == nullptr && !check_every_iteration_ &&
         scenario_.workload.request_timeout_s <= 0.0 && !st.running.empty() &&
         st.lazy_members == static_cast<std::int64_t>(st.running.size()) && st.migrated.empty() && deferred_.empty() &&
         !(st.offload.enabled() && !(st.loading.empty() && st.waiting.empty())) &&
         scheduler_->decodes_only(st);
}

// A quiet step's start, as start_iteration would make it: decode_lazy's new blocks (`opening`),
// then account_plan and record_iteration.
inline void Replica::start_quiet_step(TimeNs now, const StepTime& step, const std::vector<std::uint32_t>& opening) {
  ReplicaState& st = state_;
  const auto fresh = static_cast<std::int64_t>(opening.size());
  st.kv.append_free_blocks(opening);
  st.frag_slots += fresh * st.kv.block_size_tokens() - static_cast<std::int64_t>(st.running.size());
  st.now_ns = now;
  note_kv_usage(now);
  record_iteration(now, step, 0.0, 0.0);
}

// A quiet step's end, as finish_iteration would commit it: commit_decode_all's window step, one
// inter-token gap per sequence (nobody finishes in a quiet step).
inline void Replica::finish_quiet_step(TimeNs end) {
  ReplicaState& st = state_;
  busy_ = false;
  const TimeNs gap_ns = end - st.window_last_ns;
  st.advance_window(end);
  metrics_.itl_s.add_repeated(ns_to_seconds(gap_ns), static_cast<std::int64_t>(st.running.size()));
  // note_kv_usage(end) with nothing changed since the step's start: blocks, fragmentation,
  // the series' values and the peaks are as noted then, so only the integrals move.
  note_kv_elapsed(end);
}

std::int64_t Replica::advance_decode_run(TimeNs& now, TimeNs horizon_ns, TimeNs* in_flight_end) {
  if (!quiet_decode()) return 0;
  ReplicaState& st = state_;
  const auto n = static_cast<std::int64_t>(st.running.size());
  const std::int64_t block = st.kv.block_size_tokens();
  const auto phase_mask = static_cast<std::uint64_t>(block - 1);
  // The plan decode_all makes for this batch; only its context grows from step to step.
  plan_.clear();
  plan_.all_running_decode = true;
  plan_.all_running_seqs = st.running.size();
  plan_.shape.decode_seqs = n;
  bool priced = false;  // begin_decode_run at the first step priced (most runs end before it)
  std::int64_t steps = 0;
  for (;; ++steps) {
    if (st.finish_slot(st.window_steps + 1) != 0) break;  // a sequence finishes in this step
    const std::vector<std::uint32_t>& opening = st.phase_slots[static_cast<std::uint64_t>(st.window_steps) & phase_mask];
    const auto fresh = static_cast<std::int64_t>(opening.size());
    if (st.kv.free_blocks() < fresh) break;  // decode_all would preempt
    // decode_all: every sequence's context grows by one (lazy_computed_sum + members).
    plan_.shape.decode_kv_tokens = static_cast<double>(st.lazy_computed_sum + n);
    if (!priced) cost_->begin_decode_run(plan_.shape);
    priced = true;
    const StepTime step = cost_->decode_run_step(plan_.shape.decode_kv_tokens);
    const TimeNs end = now + std::max<TimeNs>(1, seconds_to_ns(step.time_s + 0.0));
    if (end >= horizon_ns && in_flight_end) {  // it starts now and ends after another event
      start_quiet_step(now, step, opening);
      quiet_in_flight_ = true;
      *in_flight_end = end;
      break;
    }
    if (end >= horizon_ns) {  // another event comes first (or at the same instant)
      priced_shape_ = plan_.shape;
      priced_step_ = step;
      have_priced_ = true;
      break;
    }
    start_quiet_step(now, step, opening);
    finish_quiet_step(end);
    now = end;
  }
  return steps;
}

void Replica::emit_token(Request& r, TimeNs now) {
  r.generated_tokens += 1;
  if (r.first_token_ns < 0) {
    r.first_token_ns = now;
    metrics_.ttft_s.add(ns_to_seconds(now - r.arrival_ns));
  } else {
    metrics_.itl_s.add(ns_to_seconds(now - r.last_token_ns));
  }
  r.last_token_ns = now;
}

void Replica::commit_decode_all(TimeNs now) {
  ReplicaState& st = state_;
  Sequence* const seqs = st.running.data();
  const std::size_t n = st.running.size();
  done_.clear();
  // A prefill replica hands its sequences off, and the exact path writes every token: neither
  // puts sequences in the decode window.
  const bool window = use_decode_window_ && spec_.role != ReplicaRole::prefill;
  // Sequences in the window emitted their last token at window_last_ns.
  const TimeNs window_gap_ns = now - st.window_last_ns;
  if (window) st.advance_window(now);
  // emit_token for every running sequence in one pass, without the plan's indirection. The
  // inter-token gaps go to the histogram in runs of equal gaps (in a steady batch every gap is
  // the last iteration): the same counts and quantiles as one add per token, and the same runs
  // whether a gap comes from the window or from the Request.
  TimeNs run_gap_ns = -1;
  std::int64_t run = 0;
  const auto add_gaps = [&](TimeNs gap_ns, std::int64_t count) {
    if (gap_ns != run_gap_ns) {
      metrics_.itl_s.add_repeated(ns_to_seconds(run_gap_ns), run);
      run_gap_ns = gap_ns;
      run = 0;
    }
    run += count;
  };
  std::size_t i = 0;
  if (st.lazy_computed && st.lazy_members > 0) {
    // The window is running[0, lazy_members) and nothing is written for it, but for the
    // sequences whose finish step is this one: found by a scan when the count says some finish.
    const auto members = static_cast<std::size_t>(st.lazy_members);
    std::int32_t& finishing = st.finish_slot(st.window_steps);
    for (std::size_t j = 0; finishing > 0 && j < members; ++j) {
      if (ReplicaState::finish_step(seqs[j]) != st.window_steps) continue;
      st.settle(seqs[j]);  // it leaves: its Request gets its tokens (finish_request reads them)
      done_.push_back(static_cast<std::uint32_t>(j));
      --finishing;
    }
    add_gaps(window_gap_ns, static_cast<std::int64_t>(members));
    i = members;
  }
  while (i < n) {
    // Sequences in the window (all of them in most steps): an increment and a compare each,
    // their Requests are not read.
    const std::size_t first = i;
    for (; i < n && seqs[i].window_base >= 0; ++i) {
      Sequence& seq = seqs[i];
      seq.computed_tokens += 1;
      if (seq.computed_tokens >= seq.done_at_tokens) {
        st.settle(seq);  // it leaves: its Request gets its tokens (finish_request reads them)
        done_.push_back(static_cast<std::uint32_t>(i));
      }
    }
    if (i > first) add_gaps(window_gap_ns, static_cast<std::int64_t>(i - first));
    if (i == n) break;
    // One outside the window: its Request is read and written, and it enters the window.
    Sequence& seq = seqs[i];
    const auto index = static_cast<std::uint32_t>(i++);
    seq.computed_tokens += 1;
    if (!seq.prefilled()) continue;
    Request& r = st.requests[seq.request];
    r.generated_tokens += 1;
    seq.done_at_tokens = seq.computed_tokens + (r.output_tokens - r.generated_tokens);
    const bool done = r.generated_tokens >= r.output_tokens;
    if (done) done_.push_back(index);
    const TimeNs last_ns = r.last_token_ns;
    r.last_token_ns = now;
    if (window && !done) st.enter_window(seq);  // its Request is current as of this step
    if (r.first_token_ns < 0) {
      r.first_token_ns = now;
      metrics_.ttft_s.add(ns_to_seconds(now - r.arrival_ns));
    } else {
      add_gaps(now - last_ns, 1);
    }
  }
  metrics_.itl_s.add_repeated(ns_to_seconds(run_gap_ns), run);
}

void Replica::complete(Request& r, TimeNs now) {
  r.state = RequestState::completed;
  metrics_.completed_generated_tokens += r.generated_tokens;
  metrics_.completed += 1;
  metrics_.prompt_tokens += r.prompt_tokens;
  metrics_.output_tokens += r.output_tokens;
  if (r.preemptions > 0) metrics_.preempted_requests += 1;
  const double e2e = ns_to_seconds(now - r.arrival_ns);
  metrics_.e2e_s.add(e2e);
  double tpot = 0.0;
  if (r.output_tokens > 1) {
    tpot = ns_to_seconds(now - r.first_token_ns) / static_cast<double>(r.output_tokens - 1);
    metrics_.tpot_s.add(tpot);
  }
  const double ttft = ns_to_seconds(r.first_token_ns - r.arrival_ns);
  record_class(r, ttft, tpot, e2e);
  if (!metrics_.stages.empty()) {
    ClassMetrics& st = metrics_.stages[r.stage];
    st.completed += 1;
    st.output_tokens += r.output_tokens;
    st.ttft_s.add(ttft);
    st.e2e_s.add(e2e);
    if (r.output_tokens > 1) st.tpot_s.add(tpot);
    st.last_finish_ns = now;
  }
}

void Replica::record_class(const Request& r, double ttft_s, double tpot_s, double e2e_s) {
  ClassMetrics& c = metrics_.classes[r.cls];
  const SloConfig& slo = scenario_.workload.classes[r.cls].slo;
  c.completed += 1;
  c.output_tokens += r.output_tokens;
  c.ttft_s.add(ttft_s);
  c.e2e_s.add_as_in(e2e_s, metrics_.e2e_s);  // complete() has just added both overall
  if (r.output_tokens > 1) c.tpot_s.add_as_in(tpot_s, metrics_.tpot_s);
  const bool met = (slo.ttft_s <= 0.0 || ttft_s <= slo.ttft_s) && (slo.tpot_s <= 0.0 || tpot_s <= slo.tpot_s) &&
                   (slo.e2e_s <= 0.0 || e2e_s <= slo.e2e_s);
  if (met) c.slo_met += 1;
}

void Replica::finish_request(const Sequence& seq, TimeNs now) {
  Request& r = state_.requests[seq.request];
  state_.release(seq);
  completed_.push_back(seq.request);
  complete(r, now);
  if (observer_) observer_->on_finished(r.id, r, now);
}

void Replica::finish_iteration(TimeNs now, std::vector<Handoff>& handoffs) {
  if (quiet_in_flight_) {  // started by advance_decode_run
    quiet_in_flight_ = false;
    completed_.clear();
    finish_quiet_step(now);
    return;
  }
  busy_ = false;
  if (gpu_share_) gpu_share_->busy -= 1;
  completed_.clear();
  auto& running = state_.running;
  if (plan_.all_running_decode) {
    commit_decode_all(now);
  } else {
    done_.clear();
    for (const PlannedItem& item : plan_.items) {
      Sequence& seq = running[item.running_index];
      state_.settle(seq);  // emit_token reads its Request
      seq.computed_tokens += item.new_tokens;
      if (!seq.prefilled()) continue;
      Request& r = state_.requests[seq.request];
      if (!item.prefill && item.new_tokens > 1) {
        // A multi-step window's tokens, or a verify pass's accepted ones, reach the client
        // together at its end; a sequence that finished mid-window ran (and cost) every step,
        // its extra tokens are dropped.
        const std::int64_t tokens = std::min<std::int64_t>(item.new_tokens, r.output_tokens - r.generated_tokens);
        for (std::int64_t t = 1; t < tokens; ++t) emit_token(r, now);
      }
      emit_token(r, now);
      if (item.prefill && observer_) observer_->on_prefill_done(r.id, now);
      // Only a sequence that ran can have finished (the others left when they did).
      if (r.generated_tokens >= r.output_tokens) done_.push_back(item.running_index);
    }
    std::sort(done_.begin(), done_.end());  // items list prefills before decodes
  }
  // Stable compaction: finished (or handed-off) sequences leave, the rest keep admission order.
  std::size_t kept = 0;
  if (spec_.role != ReplicaRole::prefill) {
    // Only the sequences done_ lists leave: move the runs between them, without visiting the rest.
    kept = done_.empty() ? running.size() : done_.front();
    for (std::size_t k = 0; k < done_.size(); ++k) {
      finish_request(running[done_[k]], now);
      const std::size_t next = k + 1 < done_.size() ? done_[k + 1] : running.size();
      for (std::size_t i = done_[k] + 1; i < next; ++i) running[kept++] = running[i];
    }
  } else {
    // A prefill replica: finished sequences leave, prefilled ones are handed off.
    for (std::size_t i = 0; i < running.size(); ++i) {
      const Request& r = state_.requests[running[i].request];
      if (r.generated_tokens >= r.output_tokens) {
        finish_request(running[i], now);
      } else if (running[i].prefilled()) {
        handoffs.push_back({running[i].request, running[i]});
        handing_off_ += 1;
      } else {
        if (kept != i) running[kept] = running[i];  // no self-copy: it stalls on store forwarding
        ++kept;
      }
    }
  }
  running.resize(kept);
  metrics_.recomputed_tokens = state_.recomputed_tokens;
  note_kv_usage(now);
  if (check_every_iteration_) {
    state_.kv.check_invariants();
    state_.offload.check_invariants();
    state_.check_window_invariants();
  }
}

void Replica::finish_run(TimeNs end) {
  state_.close_decode_window();
  note_kv_usage(end);
  note_waiting(end, 0);
  if (fleet_kv_.replica_series) metrics_.kv_usage.finish(end);
  metrics_.swap_outs = state_.swap_outs;
  metrics_.swap_out_bytes = state_.swap_out_bytes;
  metrics_.swap_in_bytes = state_.swap_in_bytes;
  metrics_.prefix_query_tokens = state_.prefix_query_tokens;
  metrics_.prefix_hit_tokens = state_.prefix_hit_tokens;
  metrics_.prefix_evictions = state_.kv.evictions();
  metrics_.offload_loads = state_.offload_loads;
  metrics_.offload_cpu_hit_tokens = state_.offload_cpu_hit_tokens;
  metrics_.offload_disk_hit_tokens = state_.offload_disk_hit_tokens;
  metrics_.offload_load_bytes = state_.offload_load_bytes;
  metrics_.offload_load_s = state_.offload_load_s;
  metrics_.offload_wait_s = state_.offload_wait_s;
  metrics_.offload_stored_bytes = static_cast<double>(state_.offload.stored_blocks()) * state_.kv_block_bytes;
  metrics_.offload_disk_write_bytes = static_cast<double>(state_.offload.disk_written_blocks()) * state_.kv_block_bytes;
  metrics_.offload_dropped_blocks = state_.offload.dropped_blocks();
  metrics_.offload_cpu_capacity_blocks = state_.offload.capacity_blocks(OffloadTier::cpu);
  metrics_.offload_disk_capacity_blocks = state_.offload.capacity_blocks(OffloadTier::disk);
  metrics_.kv_released_reserved_slots = state_.released_reserved_slots;
  metrics_.kv_released_unwritten_slots = state_.released_unwritten_slots;
}

}  // namespace servesim
