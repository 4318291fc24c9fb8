// Saturation batch size: see saturation_batch.hpp.
#include "sim/serve/saturation_batch.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "sim/hw/cost_model.hpp"
#include "sim/serve/parallel.hpp"

namespace servesim {

double mean_tokens(const LengthDist& d) {
  const auto clamp = [&d](double v) {
    return d.max_tokens > 0 ? std::clamp(v, static_cast<double>(d.min_tokens), static_cast<double>(d.max_tokens)) : v;
  };
  switch (d.kind) {
    case LengthDist::Kind::fixed: return static_cast<double>(d.value_tokens);
    case LengthDist::Kind::uniform: return 0.5 * static_cast<double>(d.min_tokens + d.max_tokens);
    case LengthDist::Kind::normal: return clamp(d.mean_tokens);
    case LengthDist::Kind::lognormal: return d.mean_tokens;
    case LengthDist::Kind::zipf: {
      double num = 0.0, den = 0.0;
      for (std::int64_t k = d.min_tokens; k <= d.max_tokens; ++k) {
        const double w = std::pow(static_cast<double>(k - d.min_tokens + 1), -d.zipf_s);
        num += w * static_cast<double>(k);
        den += w;
      }
      return den > 0.0 ? num / den : 0.0;
    }
    case LengthDist::Kind::empirical: {
      double num = 0.0, den = 0.0;
      for (std::size_t i = 0; i < d.tokens.size() && i < d.weights.size(); ++i) {
        num += d.weights[i] * static_cast<double>(d.tokens[i]);
        den += d.weights[i];
      }
      return den > 0.0 ? num / den : 0.0;
    }
    case LengthDist::Kind::trace: return 0.0;  // the trace gives lengths: see decode_saturation
  }
  return 0.0;
}

namespace {
// Mean prompt and output lengths of the first rows of a trace (a sample: traces can be huge).
std::pair<double, double> trace_mean_lengths(const TraceConfig& t) {
  constexpr std::int64_t kSampleRows = 10000;
  const std::unique_ptr<TraceRows> reader = t.open();
  double prompt = 0.0, output = 0.0;
  std::int64_t n = 0;
  while (n < kSampleRows) {
    const auto row = reader->next();
    if (!row) break;
    prompt += static_cast<double>(row->prompt_tokens);
    output += static_cast<double>(row->output_tokens);
    ++n;
  }
  return n > 0 ? std::pair{prompt / static_cast<double>(n), output / static_cast<double>(n)} : std::pair{0.0, 0.0};
}
}  // namespace

Saturation decode_saturation(const Scenario& s, double context_tokens) {
  const auto context = static_cast<std::int64_t>(std::llround(context_tokens));
  std::vector<Op> ops;
  const auto throughput = [&](std::int64_t batch) {
    BatchShape shape;
    for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(context);
    const StepTime t = estimate_iteration(s.model, s.hw, s.precision, s.engine.profile.kernels, s.parallel, shape,
                                          s.engine.launch, batch, ops);
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
  std::pair<double, double> from_trace{0.0, 0.0};
  double weight_sum = 0.0, context = 0.0;
  for (const RequestClass& c : w.classes) {
    const bool trace_lengths = c.prompt_tokens.kind == LengthDist::Kind::trace || c.output_tokens.kind == LengthDist::Kind::trace;
    if (trace_lengths && from_trace.first == 0.0 && w.trace) from_trace = trace_mean_lengths(*w.trace);
    const double prompt = c.prompt_tokens.kind == LengthDist::Kind::trace ? from_trace.first : mean_tokens(c.prompt_tokens);
    const double output = c.output_tokens.kind == LengthDist::Kind::trace ? from_trace.second : mean_tokens(c.output_tokens);
    context += c.weight * (prompt + 0.5 * output);
    weight_sum += c.weight;
  }
  context = static_cast<double>(w.shared_prefix.prefix_tokens) + (weight_sum > 0.0 ? context / weight_sum : 0.0);
  return decode_saturation(s, context);
}

}  // namespace servesim
