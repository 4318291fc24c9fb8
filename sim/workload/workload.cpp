// Arrival processes and length distributions.
#include "sim/workload/workload.hpp"

#include <algorithm>
#include <cmath>

namespace servesim {

LengthSampler::LengthSampler(const LengthDist& dist, std::uint64_t seed, const char* stream)
    : dist_(dist), rng_(seed, stream) {
  // Parameterised by the mean: for log L ~ N(mu, sigma^2), E[L] = exp(mu + sigma^2 / 2).
  if (dist_.kind == LengthDist::Kind::lognormal) log_mu_ = std::log(dist_.mean_tokens) - 0.5 * dist_.sigma * dist_.sigma;
}

std::int64_t LengthSampler::next() {
  switch (dist_.kind) {
    case LengthDist::Kind::fixed: return dist_.value_tokens;
    case LengthDist::Kind::uniform: return rng_.uniform_int(dist_.min_tokens, dist_.max_tokens);
    case LengthDist::Kind::lognormal: {
      const double v = std::exp(rng_.normal(log_mu_, dist_.sigma));
      const double clamped = std::clamp(std::round(v), static_cast<double>(dist_.min_tokens),
                                        static_cast<double>(dist_.max_tokens));
      return static_cast<std::int64_t>(clamped);
    }
  }
  return dist_.value_tokens;
}

WorkloadGenerator::WorkloadGenerator(const WorkloadConfig& config, std::uint64_t seed)
    : config_(config),
      arrivals_(seed, "arrivals"),
      prompt_(config.prompt_tokens, seed, "prompt_tokens"),
      output_(config.output_tokens, seed, "output_tokens") {}

std::optional<RequestSpec> WorkloadGenerator::next() {
  if (produced_ >= config_.num_requests) return std::nullopt;
  RequestSpec r;
  if (config_.arrival.kind == ArrivalConfig::Kind::poisson) {
    clock_s_ += arrivals_.exponential(config_.arrival.rate_per_s);
    r.arrival_ns = seconds_to_ns(clock_s_);
  }
  r.prompt_tokens = prompt_.next();
  r.output_tokens = output_.next();
  ++produced_;
  return r;
}

}  // namespace servesim
