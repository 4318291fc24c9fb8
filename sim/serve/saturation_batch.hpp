// Saturation, in batch: from the cost model, the decode batch size beyond which one doubling of
// the batch raises decode throughput (tokens/s) by less than 5% for this model, GPU and context.
// Saturation in rate (the highest arrival rate that meets the SLO, `servesim saturate`) is a
// property of whole simulations: sim/analysis/saturation_rate.hpp.
#pragma once
#include <cstdint>

#include "sim/config/scenario.hpp"

namespace servesim {

struct Saturation {
  std::int64_t batch_size = 0;
  double context_tokens = 0.0;  // KV tokens per sequence assumed in each decode step
};

// Expected value of a length distribution (lognormal, normal: the mean before clamping; trace: 0).
double mean_tokens(const LengthDist& d);

// Decode throughput b / step_time(b) at powers of two b = 1, 2, 4, ...; the answer is the first b
// whose doubling gains less than 5% (capped at 65536), with the engine's kernel plan on one
// replica (tensor/pipeline parallel as the scenario says). Context: the workload's mean prompt
// (shared prefix included) plus half its mean output, weighted over request classes, i.e. the
// mean context over a request's decode steps (trace lengths: the mean of its first 10,000 rows);
// later turns of sessions are not counted.
Saturation decode_saturation(const Scenario& s);
Saturation decode_saturation(const Scenario& s, double context_tokens);

}  // namespace servesim
