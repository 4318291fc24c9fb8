// Saturation batch size: see saturation.hpp.
#include "sim/serve/saturation.hpp"

#include <cmath>
#include <vector>

#include "sim/hw/cost_model.hpp"

namespace servesim {

double mean_tokens(const LengthDist& d) {
  switch (d.kind) {
    case LengthDist::Kind::fixed: return static_cast<double>(d.value_tokens);
    case LengthDist::Kind::uniform: return 0.5 * static_cast<double>(d.min_tokens + d.max_tokens);
    case LengthDist::Kind::lognormal: return d.mean_tokens;
  }
  return 0.0;
}

Saturation decode_saturation(const Scenario& s, double context_tokens) {
  const auto context = static_cast<std::int64_t>(std::llround(context_tokens));
  std::vector<Op> ops;
  const auto throughput = [&](std::int64_t batch) {
    BatchShape shape;
    for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(context);
    build_iteration_ops(s.model, shape, s.precision, ops);
    const StepTime t = estimate_step(ops, s.hw, s.precision.weights, s.engine.launch, batch);
    return static_cast<double>(batch) / t.time_s;
  };
  Saturation out;
  out.context_tokens = static_cast<double>(context);
  std::int64_t b = 1;
  double current = throughput(b);
  while (b < 65536) {
    const double next = throughput(2 * b);
    if (next < 1.05 * current) break;
    b *= 2;
    current = next;
  }
  out.batch_size = b;
  return out;
}

Saturation decode_saturation(const Scenario& s) {
  const WorkloadConfig& w = s.workload;
  const double context = static_cast<double>(w.shared_prefix.prefix_tokens) + mean_tokens(w.prompt_tokens) +
                         0.5 * mean_tokens(w.output_tokens);
  return decode_saturation(s, context);
}

}  // namespace servesim
