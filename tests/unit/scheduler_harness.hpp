// What the scheduler tests drive ReplicaState with: a small engine (16 sequences, 4096 batched
// tokens and context, 16-token blocks, no watermark, so admission is decided by free blocks
// alone) and a harness that plays the replica (commit = tokens computed, finished requests leave).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/sched/batch_scheduler.hpp"

namespace servesim::test {

inline EngineConfig small_engine(const std::string& scheduler_impl) {
  EngineConfig e;
  e.max_num_seqs = 16;
  e.max_num_batched_tokens = 4096;
  e.max_model_len = 4096;
  e.block_size = 16;
  e.watermark_frac = 0.0;
  e.scheduler.impl = scheduler_impl;
  return e;
}

struct Harness {
  EngineConfig cfg;
  RequestPool requests;
  std::unique_ptr<ReplicaState> st;
  std::unique_ptr<BatchScheduler> sched;
  IterationPlan plan;

  Harness(const Harness&) = delete;  // st refers to cfg and requests
  Harness& operator=(const Harness&) = delete;
  Harness(EngineConfig c, std::int64_t capacity_blocks) : cfg(std::move(c)) {
    st = std::make_unique<ReplicaState>(cfg, capacity_blocks, 1000.0, requests);
    sched = make_scheduler(cfg.scheduler);
  }
  void add(std::int32_t prompt, std::int32_t output, TimeNs arrival = 0, std::uint8_t priority = 0) {
    Request r;
    r.arrival_ns = arrival;
    r.prompt_tokens = prompt;
    r.output_tokens = output;
    r.priority = priority;
    r.stream_id = static_cast<std::uint32_t>(requests.high_water());
    Sequence s;
    s.request = requests.acquire(r);
    s.target_tokens = prompt;
    st->waiting.push_back(s, st->class_of(s));
  }
  const IterationPlan& step(TimeNs now = 0) {
    plan.clear();
    st->now_ns = now;
    sched->schedule(*st, plan);
    return plan;
  }
  // What Replica::finish_iteration does, without metrics.
  void commit() {
    if (plan.all_running_decode) {
      for (Sequence& seq : st->running) {
        seq.computed_tokens += 1;
        if (seq.prefilled()) requests[seq.request].generated_tokens += 1;
      }
    }
    for (const PlannedItem& item : plan.items) {
      Sequence& seq = st->running[item.running_index];
      seq.computed_tokens += item.new_tokens;
      if (seq.prefilled()) requests[seq.request].generated_tokens += 1;
    }
    std::vector<Sequence> kept;
    for (const Sequence& s : st->running) {
      const Request& r = requests[s.request];
      if (r.generated_tokens >= r.output_tokens) st->release(s);
      else kept.push_back(s);
    }
    st->running = kept;
  }
  std::int64_t prefill_items() const {
    std::int64_t n = 0;
    for (const auto& i : plan.items) n += i.prefill;
    return n;
  }
};

}  // namespace servesim::test
