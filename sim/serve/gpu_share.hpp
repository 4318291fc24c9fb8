// Several model instances on one GPU inside `run` (parallel.instances_per_gpu): each instance is a
// replica with its share of the GPU's memory; while k of them run iterations at once, each
// iteration is stretched by the processor-sharing contention model (sim/hw/contention.hpp), the
// same model as `servesim contention`. Running that kernel-level model for every iteration would
// cost more than the rest of the simulation, so the slowdown is memoised per (k, batch bucket):
// k identical steps of the bucket's shape (decode at the workload's mean context, or a prefill of
// that many tokens) started together, against the same step alone.
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/model/ops.hpp"

namespace servesim {

class GpuShare {
 public:
  GpuShare(const Scenario& scenario, double mean_context_tokens);
  // Factor >= 1 by which an iteration of `shape` slows down while `running` instances (itself
  // included) run iterations on this GPU.
  double slowdown(std::int64_t running, const BatchShape& shape);
  std::int64_t busy = 0;  // instances of this GPU inside an iteration now

 private:
  const Scenario& scenario_;
  std::int64_t context_tokens_;
  std::map<std::pair<std::int64_t, std::int64_t>, double> factors_;  // (running, signed bucket) -> factor
};

}  // namespace servesim
