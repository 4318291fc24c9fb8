// The seam between a replica's scheduling and the time its iterations take: a StepCostModel
// prices one iteration from the batch shape the scheduler planned. The replica keeps the
// bookkeeping (queues, KV, metrics); what an iteration costs is the model's alone, so trying
// another predictor (a measured table, a learned model) is one class here, not an edit of the
// replica. Chosen by name in the scenario (`cost_model.impl`), one entry each in the registry
// step_cost_models() (step_cost.cpp):
//   calibrated  (default) per kernel, the roofline with the hardware profile's measured
//               efficiency tables; the launch queue and host overheads; CUDA-graph padding;
//               tensor- and pipeline-parallel collectives (serve/parallel.hpp, hw/cost_model.hpp)
//   roofline    for teaching: every op at its datasheet floor, max(FLOPs / peak FLOP/s, bytes /
//               peak HBM bandwidth) (collectives at peak link bandwidth), summed; no efficiency
//               losses, no launch or host time, pipeline stages one after another
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/core/registry.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/sched/batch_scheduler.hpp"

namespace servesim {

class StepCaches;  // serve/parallel.hpp

class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  // Wall time of one iteration of `shape` (as the scheduler planned it) on the replica.
  virtual StepTime step_time(const BatchShape& shape) = 0;
  // The steps of a decode run (Replica::advance_decode_run): decode-only shapes equal but for
  // decode_kv_tokens. begin_decode_run(shape), then decode_run_step(kv) for each step, equal bit
  // for bit to step_time(shape with decode_kv_tokens = kv); a model may keep what the steps share.
  virtual void begin_decode_run(const BatchShape& shape) { run_shape_ = shape; }
  virtual StepTime decode_run_step(double decode_kv_tokens) {
    run_shape_.decode_kv_tokens = decode_kv_tokens;
    return step_time(run_shape_);
  }

 protected:
  BatchShape run_shape_;  // the decode run's shape (begin_decode_run)
};

// The model `scenario.cost_model.impl` names, for one replica of `parallel`. reference_path:
// the exact path (every kernel timed by estimate(), no cache or memo), for the tests that check
// the fast path against it. caches: the simulation's kernel-time caches and op-list memos, shared
// by its replicas (serve/parallel.hpp; none: the model keeps its own).
std::unique_ptr<StepCostModel> make_step_cost_model(const Scenario& scenario, const ParallelConfig& parallel,
                                                    bool reference_path, StepCaches* caches = nullptr);

struct StepCostEntry : RegistryEntry {
  std::unique_ptr<StepCostModel> (*make)(const Scenario& scenario, const ParallelConfig& parallel, bool reference_path,
                                         StepCaches* caches) = nullptr;
};
const Registry<StepCostEntry>& step_cost_models();

}  // namespace servesim
