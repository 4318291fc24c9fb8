// The step cost models and their registry: see step_cost.hpp.
#include "sim/serve/step_cost.hpp"

#include <stdexcept>

#include "sim/serve/parallel.hpp"

namespace servesim {

namespace {

// The default: IterationTimer (kernel-time cache, op-list memo) or, on the reference path,
// estimate_iteration for every kernel; CUDA graphs and their padding as the engine captures them.
class CalibratedStepCost final : public StepCostModel {
 public:
  CalibratedStepCost(const Scenario& s, const ParallelConfig& parallel, bool reference_path)
      : engine_(s.engine), launch_(s.engine.launch), timer_(s, parallel), reference_path_(reference_path) {
    apply_tp_workers(launch_, parallel.tensor_parallel_size);  // fixed for the replica: once, not per step
  }

  StepTime step_time(const BatchShape& planned) override {
    BatchShape shape = planned;
    LaunchConfig launch = launch_;
    apply_cuda_graphs(launch, engine_.profile.cuda_graph_batch_sizes, shape);
    const std::int64_t batch_seqs = planned.total_seqs();  // host work is per real sequence, not padding
    return reference_path_ ? timer_.time_uncached(shape, launch, batch_seqs) : timer_.time(shape, launch, batch_seqs);
  }
  // The padding and launch configuration once per run, not per step.
  void begin_decode_run(const BatchShape& planned) override {
    StepCostModel::begin_decode_run(planned);
    if (reference_path_) return;
    BatchShape shape = planned;
    LaunchConfig launch = launch_;
    apply_cuda_graphs(launch, engine_.profile.cuda_graph_batch_sizes, shape);
    padded_seqs_ = shape.decode_seqs - planned.decode_seqs;
    timer_.begin_decode_run(shape, launch, planned.total_seqs());
  }
  StepTime decode_run_step(double decode_kv_tokens) override {
    if (reference_path_) return StepCostModel::decode_run_step(decode_kv_tokens);
    // apply_cuda_graphs' padding: each padded slot is an empty decode (add_decode(0): one token).
    // Token counts are whole numbers far below 2^53, so one addition of the slot count gives the
    // same double as the padding's one-by-one additions.
    return timer_.decode_run_step(decode_kv_tokens + static_cast<double>(padded_seqs_));
  }

 private:
  const EngineConfig& engine_;
  LaunchConfig launch_;  // the engine's, with this replica's tensor-parallel host term
  IterationTimer timer_;
  bool reference_path_;
  std::int64_t padded_seqs_ = 0;  // empty decodes CUDA-graph padding adds to the decode run's batch
};

// The datasheet floor of every op (KernelTime::roofline_s, the same floor `servesim roofline`
// prints), summed over the op list of one GPU of the tensor-parallel group.
class RooflineStepCost final : public StepCostModel {
 public:
  RooflineStepCost(const Scenario& s, const ParallelConfig& parallel)
      : s_(s), tp_(parallel.tensor_parallel_size) {}

  StepTime step_time(const BatchShape& shape) override {
    build_iteration_ops(s_.model, shape, s_.precision, ops_, s_.engine.profile.kernels, tp_);
    StepTime t;
    for (const Op& op : ops_) {
      const double n = static_cast<double>(op.count);
      const double floor_s = n * estimate(op, s_.hw, s_.precision.weights).roofline_s;
      t.gpu_s += floor_s;
      t.flops += n * op.flops;
      if (is_communication(op.kind)) {
        t.comm_s += floor_s;
      } else {
        t.bytes += n * op.bytes;
      }
      t.kernels += op.count;
    }
    t.roofline_s = t.gpu_s;
    t.time_s = t.gpu_s;
    return t;
  }

 private:
  const Scenario& s_;
  std::int64_t tp_;
  std::vector<Op> ops_;  // reused across iterations
};

}  // namespace

std::vector<PolicyInfo> list_step_cost_models() {
  return {
      {"calibrated",
       "cost model (default): per kernel, the roofline with the hardware profile's measured efficiency tables; "
       "launch queue and host overheads, CUDA-graph padding, tensor/pipeline-parallel collectives",
       {}},
      {"roofline",
       "cost model, for teaching: every op at its datasheet floor, max(FLOPs / peak, bytes / HBM bandwidth), summed; "
       "no efficiency losses, launch or host time; pipeline stages one after another",
       {}},
  };
}

bool is_step_cost_model(const std::string& name) { return has_name(list_step_cost_models(), name); }

std::unique_ptr<StepCostModel> make_step_cost_model(const Scenario& s, const ParallelConfig& parallel, bool reference_path) {
  if (s.cost_model.impl == "calibrated") return std::make_unique<CalibratedStepCost>(s, parallel, reference_path);
  if (s.cost_model.impl == "roofline") return std::make_unique<RooflineStepCost>(s, parallel);
  throw std::logic_error("unknown cost model " + s.cost_model.impl);  // the parser rejects unknown names first
}

}  // namespace servesim
