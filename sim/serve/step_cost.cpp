// The step cost models and their registry: see step_cost.hpp.
#include "sim/serve/step_cost.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "sim/serve/parallel.hpp"
#include "sim/serve/speculative_step.hpp"

namespace servesim {

namespace {

// The default: IterationTimer (kernel-time cache, op-list memos) or, on the reference path,
// estimate_iteration for every kernel; CUDA graphs and their padding as the engine captures them.
class CalibratedStepCost final : public StepCostModel {
 public:
  CalibratedStepCost(const Scenario& s, const ParallelConfig& parallel, bool reference_path, StepCaches* caches)
      : engine_(s.engine), launch_(s.engine.launch), parallel_(parallel), timer_(s, parallel, caches), reference_path_(reference_path) {
    apply_tp_workers(launch_, parallel.attention_tp());  // fixed for the replica: once, not per step
  }

  StepTime step_time(const BatchShape& planned) override {
    // Under attention DP the busiest rank's share, padded to its own captured graph sizes.
    BatchShape shape = attention_dp_rank(planned, parallel_);
    LaunchConfig launch = launch_;
    apply_cuda_graphs(launch, engine_.profile.cuda_graph_batch_sizes, shape, engine_.profile.cuda_graph_mode);
    // Host work is per real sequence, not padding.
    const std::int64_t batch_seqs = attention_dp_rank_seqs(planned.total_seqs(), parallel_);
    return reference_path_ ? timer_.time_uncached(shape, launch, batch_seqs) : timer_.time(shape, launch, batch_seqs);
  }
  // The padding and launch configuration once per run, not per step (attention DP: each step
  // split by step_time).
  void begin_decode_run(const BatchShape& planned) override {
    StepCostModel::begin_decode_run(planned);
    if (reference_path_ || parallel_.enable_attention_dp) return;
    BatchShape shape = planned;
    LaunchConfig launch = launch_;
    apply_cuda_graphs(launch, engine_.profile.cuda_graph_batch_sizes, shape, engine_.profile.cuda_graph_mode);
    padded_seqs_ = shape.decode_seqs - planned.decode_seqs;
    timer_.begin_decode_run(shape, launch, planned.total_seqs());
  }
  StepTime decode_run_step(double decode_kv_tokens) override {
    if (reference_path_ || parallel_.enable_attention_dp) return StepCostModel::decode_run_step(decode_kv_tokens);
    // apply_cuda_graphs' padding: each padded slot is an empty decode (add_decode(0): one token).
    // Token counts are whole numbers far below 2^53, so one addition of the slot count gives the
    // same double as the padding's one-by-one additions.
    return timer_.decode_run_step(decode_kv_tokens + static_cast<double>(padded_seqs_));
  }

 private:
  const EngineConfig& engine_;
  LaunchConfig launch_;  // the engine's, with this replica's tensor-parallel host term
  ParallelConfig parallel_;
  IterationTimer timer_;
  bool reference_path_;
  std::int64_t padded_seqs_ = 0;  // empty decodes CUDA-graph padding adds to the decode run's batch
};

// The datasheet floor of every op (KernelTime::roofline_s, the same floor `servesim roofline`
// prints), summed over the op list of one GPU of the tensor-parallel group.
class RooflineStepCost final : public StepCostModel {
 public:
  RooflineStepCost(const Scenario& s, const ParallelConfig& parallel) : s_(s), parallel_(parallel) {}

  StepTime step_time(const BatchShape& planned) override {
    const BatchShape shape = attention_dp_rank(planned, parallel_);
    // (Without attention DP this model has always priced MoE layers without expert parallelism.)
    build_iteration_ops(s_.model, shape, s_.precision, ops_, s_.engine.profile.kernels, parallel_.attention_tp(),
                        parallel_.enable_attention_dp ? parallel_.moe_routing() : MoeRouting{});
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
  ParallelConfig parallel_;
  std::vector<Op> ops_;  // reused across iterations
};

// cost_model.interpolate_decode: a decode-only step (no prefill; its shape is the batch size n and
// the KV tokens kv) priced by linear interpolation in kv between the exact model's prices at the
// two neighbouring grid points. The points are the numbers whose significand has 8 bits,
// (128 + i) * 2^(e - 7) for i in [0, 128): neighbours are 2^-8 to 2^-7 of kv apart, so a decode
// run of n sequences (kv grows by n per step) reuses one pair for ~kv / (128 n) steps, and a
// point, once priced, serves every later step of that batch size. Why it is close: within a
// cell only decode attention changes, smoothly in its context; the step's other ops are fixed
// by n. A cell is checked once, when first used: its midpoint is priced exactly, and where the
// line between the points misses it by more than kMidpointTolerance (a kink inside the cell:
// an attention grid node, the launch queue's max), or the points differ in kernel count or
// launch-bound flag, the cell's steps are priced exactly. With one kink or a quadratic bend in a
// cell the line's worst miss is at most twice its miss at the midpoint, so a step is within
// 2 x kMidpointTolerance of the exact price (tests/unit/test_interpolated_decode.cpp measures it
// on every bundled scenario). Below kv = 256 (points under 2 tokens apart) steps are priced
// exactly. Deterministic: a point's price and a cell's check depend only on (n, point), not on
// the order steps visit them.
class InterpolatedDecodeCost final : public StepCostModel {
 public:
  explicit InterpolatedDecodeCost(std::unique_ptr<StepCostModel> exact) : exact_(std::move(exact)) {}

  StepTime step_time(const BatchShape& shape) override {
    if (shape.prefill_seqs != 0 || shape.prefill_tokens != 0 || shape.decode_seqs <= 0) return exact_->step_time(shape);
    return decode(shape.decode_seqs, shape.decode_kv_tokens);
  }
  // A decode run's shapes are decode-only by contract: only the batch size is kept.
  void begin_decode_run(const BatchShape& shape) override { run_seqs_ = shape.decode_seqs; }
  StepTime decode_run_step(double decode_kv_tokens) override { return decode(run_seqs_, decode_kv_tokens); }

 private:
  static constexpr int kSignificandBits = 7;  // fraction bits a grid point keeps (2^7 points per octave)
  static constexpr double kMinKv = 256.0;     // 2^(kSignificandBits + 1): points >= 2 tokens apart from here
  static constexpr double kMaxKv = 0x1p52;    // whole token counts stay exact doubles below this
  static constexpr double kMidpointTolerance = 1e-4;  // relative miss of the line at a cell's midpoint

  enum class Cell : std::uint8_t { unchecked, line, exact };
  struct Point {
    bool priced = false;
    Cell cell = Cell::unchecked;  // the cell from this point to the next
    StepTime time;
  };
  struct Row {  // one batch size's points: points[i] is grid index first + i
    std::int64_t first = 0;
    std::vector<Point> points;
  };

  // The index of the grid point at or below kv (kMinKv <= kv < kMaxKv): octave and top
  // fraction bits of the double, read off its representation.
  static std::int64_t grid_index(double kv) {
    const auto bits = std::bit_cast<std::uint64_t>(kv);
    const auto octave = static_cast<std::int64_t>((bits >> 52) & 0x7ff) - 1023 - (kSignificandBits + 1);
    const auto fraction = static_cast<std::int64_t>((bits >> (52 - kSignificandBits)) & ((1u << kSignificandBits) - 1));
    return (octave << kSignificandBits) + fraction;
  }
  // grid_index's inverse: the double with that octave and those fraction bits, the rest zero.
  static double grid_kv(std::int64_t index) {
    const auto octave = static_cast<std::uint64_t>(index >> kSignificandBits) + 1023 + kSignificandBits + 1;
    const auto fraction = static_cast<std::uint64_t>(index & ((1 << kSignificandBits) - 1));
    return std::bit_cast<double>((octave << 52) | (fraction << (52 - kSignificandBits)));
  }

  StepTime exact(std::int64_t seqs, double kv) {
    BatchShape shape;
    shape.decode_seqs = seqs;
    shape.decode_kv_tokens = kv;
    return exact_->step_time(shape);
  }

  // Row `seqs` holding grid indices [lo, hi], grown with slack so a run's climbing kv seldom
  // moves it.
  Row& row_covering(std::int64_t seqs, std::int64_t lo, std::int64_t hi) {
    if (rows_.size() <= static_cast<std::size_t>(seqs)) rows_.resize(static_cast<std::size_t>(seqs) + 1);
    Row& row = rows_[static_cast<std::size_t>(seqs)];
    constexpr std::int64_t kSlack = 32;
    if (row.points.empty()) {
      row.first = std::max<std::int64_t>(0, lo - kSlack);
      row.points.resize(static_cast<std::size_t>(hi + kSlack - row.first));
    } else if (lo < row.first) {
      const std::int64_t first = std::max<std::int64_t>(0, lo - kSlack);
      row.points.insert(row.points.begin(), static_cast<std::size_t>(row.first - first), Point{});
      row.first = first;
    }
    const auto end = row.first + static_cast<std::int64_t>(row.points.size());
    if (hi >= end) row.points.resize(static_cast<std::size_t>(hi + kSlack - row.first));
    return row;
  }

  const StepTime& point(Row& row, std::int64_t seqs, std::int64_t index) {
    Point& p = row.points[static_cast<std::size_t>(index - row.first)];
    if (!p.priced) {
      p.time = exact(seqs, grid_kv(index));
      p.priced = true;
    }
    return p.time;
  }

  // The line from a to b at w in [0, 1].
  static StepTime between(const StepTime& a, const StepTime& b, double w) {
    const auto lerp = [w](double x, double y) { return x + w * (y - x); };
    StepTime t = a;
    t.time_s = lerp(a.time_s, b.time_s);
    t.gpu_s = lerp(a.gpu_s, b.gpu_s);
    t.launch_s = lerp(a.launch_s, b.launch_s);
    t.launch_wait_s = lerp(a.launch_wait_s, b.launch_wait_s);
    t.host_s = lerp(a.host_s, b.host_s);
    t.roofline_s = lerp(a.roofline_s, b.roofline_s);
    t.bytes = lerp(a.bytes, b.bytes);
    t.flops = lerp(a.flops, b.flops);
    t.comm_s = lerp(a.comm_s, b.comm_s);
    t.bubble_frac = lerp(a.bubble_frac, b.bubble_frac);
    return t;
  }

  // Whether the cell from a (at lo_kv) to b (at hi_kv) may be interpolated (see the class comment).
  bool line_fits(std::int64_t seqs, const StepTime& a, const StepTime& b, double lo_kv, double hi_kv) {
    if (a.kernels != b.kernels || a.launch_bound != b.launch_bound) return false;
    const StepTime mid = exact(seqs, 0.5 * (lo_kv + hi_kv));
    const double line_s = between(a, b, 0.5).time_s;
    return std::fabs(line_s - mid.time_s) <= kMidpointTolerance * mid.time_s;
  }

  StepTime decode(std::int64_t seqs, double kv) {
    // The last interpolated cell first: a decode run's steps climb through a cell ~kv / (128 n)
    // steps long. Same arithmetic as below, so the answer does not depend on the order.
    if (seqs == last_.seqs && kv > last_.lo_kv && kv < last_.hi_kv) {
      return between(*last_.lo, *last_.hi, (kv - last_.lo_kv) / (last_.hi_kv - last_.lo_kv));
    }
    if (!(kv >= kMinKv && kv < kMaxKv)) return exact(seqs, kv);
    const std::int64_t index = grid_index(kv);
    Row& row = row_covering(seqs, index, index + 1);
    last_.seqs = -1;  // row_covering may have moved the points
    const StepTime& a = point(row, seqs, index);
    const double lo_kv = grid_kv(index);
    if (kv == lo_kv) return a;
    const StepTime& b = point(row, seqs, index + 1);
    const double hi_kv = grid_kv(index + 1);
    Cell& cell = row.points[static_cast<std::size_t>(index - row.first)].cell;
    if (cell == Cell::unchecked) cell = line_fits(seqs, a, b, lo_kv, hi_kv) ? Cell::line : Cell::exact;
    if (cell == Cell::exact) return exact(seqs, kv);
    last_ = {seqs, lo_kv, hi_kv, &a, &b};
    return between(a, b, (kv - lo_kv) / (hi_kv - lo_kv));
  }

  struct LastCell {  // the cell decode() interpolated last (seqs -1: none)
    std::int64_t seqs = -1;
    double lo_kv = 0.0, hi_kv = 0.0;
    const StepTime* lo = nullptr;
    const StepTime* hi = nullptr;
  };

  std::unique_ptr<StepCostModel> exact_;
  std::vector<Row> rows_;        // by batch size
  LastCell last_;
  std::int64_t run_seqs_ = 0;    // the decode run's batch size (begin_decode_run)
};

}  // namespace

const Registry<StepCostEntry>& step_cost_models() {
  const auto entry = [](std::string name, std::string description, auto make) {
    return registry_entry<StepCostEntry>(std::move(name), std::move(description), {}, make);
  };
  static const Registry<StepCostEntry> registry(
      "cost model",
      {entry("calibrated",
             "cost model (default): per kernel, the roofline with the hardware profile's measured efficiency tables; "
             "launch queue and host overheads, CUDA-graph padding, tensor/pipeline-parallel collectives",
             [](const Scenario& s, const ParallelConfig& p, bool reference_path,
                StepCaches* caches) -> std::unique_ptr<StepCostModel> {
               return std::make_unique<CalibratedStepCost>(s, p, reference_path, caches);
             }),
       entry("roofline",
             "cost model, for teaching: every op at its datasheet floor, max(FLOPs / peak, bytes / HBM bandwidth), summed; "
             "no efficiency losses, launch or host time; pipeline stages one after another",
             [](const Scenario& s, const ParallelConfig& p, bool, StepCaches*) -> std::unique_ptr<StepCostModel> {
               return std::make_unique<RooflineStepCost>(s, p);
             })});
  return registry;
}

std::unique_ptr<StepCostModel> make_step_cost_model(const Scenario& s, const ParallelConfig& parallel, bool reference_path,
                                                    StepCaches* caches) {
  const StepCostEntry* e = step_cost_models().find(s.cost_model.impl);
  if (!e) throw std::logic_error(step_cost_models().unknown(s.cost_model.impl));  // the parser rejects unknown names first
  std::unique_ptr<StepCostModel> model = e->make(s, parallel, reference_path, caches);
  // Speculative decoding: the model prices the target's verify pass, the wrapper adds the drafter.
  if (s.engine.speculative.enabled()) model = make_speculative_step_cost(std::move(model), s, parallel);
  // On the reference path too: the exact-vs-fast tests compare the event loop's paths, not the pricing.
  if (s.cost_model.interpolate_decode) model = std::make_unique<InterpolatedDecodeCost>(std::move(model));
  return model;
}

}  // namespace servesim
