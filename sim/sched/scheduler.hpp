// Batch scheduling policies: each decides, before every iteration, which sequences run and how
// many tokens each computes, using the KV allocator (a mechanism) to reserve blocks and to
// preempt. Policies are registered by name in make_scheduler/list_policies.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/kv/block_allocator.hpp"
#include "sim/model/ops.hpp"
#include "sim/serve/request.hpp"

namespace servesim {

// What a policy may read and change. The replica owns it.
struct ReplicaState {
  ReplicaState(const EngineConfig& config, std::int64_t kv_capacity_blocks, std::vector<Request>& request_table);

  const EngineConfig& config;
  BlockAllocator kv;
  std::vector<Request>& requests;
  std::deque<Sequence> waiting;   // FCFS; preempted sequences go back to the front
  std::vector<Sequence> running;  // in admission order (oldest first)
  std::vector<std::uint32_t> free_slots;
  std::uint32_t slots_created = 0;
  std::int64_t preemptions = 0;
  std::int64_t recomputed_tokens = 0;
  std::vector<std::uint32_t> preempted_ids;  // requests preempted since the replica last cleared it

  std::uint32_t take_slot();
  // Frees a running sequence's blocks and slot (the caller removes it from `running`).
  void release(const Sequence& seq);
  // Preempts by recompute: blocks freed, the sequence must prefill prompt + generated tokens again.
  void preempt_to_waiting_front(Sequence seq);
};

// One sequence's share of an iteration.
struct PlannedItem {
  std::uint32_t running_index = 0;
  std::int64_t new_tokens = 0;  // tokens computed this iteration (1 for decode)
  bool prefill = false;
};

struct IterationPlan {
  std::vector<PlannedItem> items;
  BatchShape shape;
  void clear() {
    items.clear();
    shape = BatchShape{};
  }
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  // Fills `plan` (cleared by the caller) for the next iteration; an empty plan means idle.
  // May admit from `waiting`, allocate KV blocks and preempt running sequences.
  virtual void schedule(ReplicaState& state, IterationPlan& plan) = 0;
};

struct PolicyParam {
  std::string name, type, default_value, description;
};
struct PolicyInfo {
  std::string name, description;
  std::vector<PolicyParam> params;
};

std::unique_ptr<BatchScheduler> make_scheduler(const SchedulerConfig& config);
std::vector<PolicyInfo> list_policies();

}  // namespace servesim
