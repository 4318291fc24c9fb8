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
      output_(config.output_tokens, seed, "output_tokens"),
      prefix_rng_(seed, "shared_prefix"),
      priority_rng_(seed, "priority") {
  const std::int64_t turns = config_.sessions.turns;
  sessions_total_ = (config_.num_requests + turns - 1) / turns;
}

std::optional<RequestSpec> WorkloadGenerator::next() {
  if (sessions_started_ >= sessions_total_) return std::nullopt;
  RequestSpec r;
  if (config_.arrival.kind == ArrivalConfig::Kind::poisson) {
    clock_s_ += arrivals_.exponential(config_.arrival.rate_per_s);
    r.arrival_ns = seconds_to_ns(clock_s_);
  }
  r.prompt_tokens = prompt_.next();
  r.output_tokens = output_.next();
  r.stream_id = static_cast<std::uint32_t>(sessions_started_++);
  const SharedPrefixConfig& sp = config_.shared_prefix;
  if (sp.num_prefixes > 0) {
    r.prefix_id = static_cast<std::int32_t>(prefix_rng_.uniform_int(0, sp.num_prefixes - 1));
    r.prefix_tokens = sp.prefix_tokens;
    r.prompt_tokens += sp.prefix_tokens;
  }
  const auto& w = config_.priority_class_weights;
  if (w.size() > 1) {
    double total = 0.0;
    for (const double x : w) total += x;
    double u = priority_rng_.uniform() * total;
    std::size_t c = 0;
    while (c + 1 < w.size() && u >= w[c]) u -= w[c++];
    r.priority = static_cast<std::uint8_t>(c);
  }
  ++produced_;
  return r;
}

std::optional<RequestSpec> WorkloadGenerator::next_turn(const RequestSpec& done, TimeNs done_ns) {
  const std::int64_t turns = config_.sessions.turns;
  const std::int64_t index = static_cast<std::int64_t>(done.stream_id) * turns + done.turn + 1;
  if (done.turn + 1 >= turns || index >= config_.num_requests) return std::nullopt;
  RequestSpec r = done;
  r.turn = done.turn + 1;
  r.arrival_ns = done_ns + seconds_to_ns(config_.sessions.think_time_s);
  // The new prompt extends the conversation: everything before, including the answer.
  r.prompt_tokens = done.prompt_tokens + done.output_tokens + prompt_.next();
  r.output_tokens = output_.next();
  ++produced_;
  return r;
}

}  // namespace servesim
