// Arrival processes, length distributions, request classes and trace replay.
#include "sim/workload/workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "sim/core/error.hpp"
#include "sim/workload/trace_bootstrap.hpp"

namespace servesim {

namespace {
std::vector<double> normalised_cdf(const std::vector<double>& weights) {
  std::vector<double> cdf(weights.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < weights.size(); ++i) cdf[i] = (sum += weights[i]);
  for (double& c : cdf) c /= sum;
  return cdf;
}
std::size_t draw_index(const std::vector<double>& cdf, double u) {
  const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
  return std::min<std::size_t>(static_cast<std::size_t>(it - cdf.begin()), cdf.size() - 1);
}
}  // namespace

LengthSampler::LengthSampler(const LengthDist& dist, std::uint64_t seed, const std::string& stream)
    : dist_(dist), rng_(seed, stream) {
  // Parameterised by the mean: for log L ~ N(mu, sigma^2), E[L] = exp(mu + sigma^2 / 2).
  if (dist_.kind == LengthDist::Kind::lognormal) log_mu_ = std::log(dist_.mean_tokens) - 0.5 * dist_.sigma * dist_.sigma;
  if (dist_.kind == LengthDist::Kind::zipf) {
    std::vector<double> w;
    for (std::int64_t k = dist_.min_tokens; k <= dist_.max_tokens; ++k) w.push_back(std::pow(static_cast<double>(k), -dist_.zipf_s));
    cdf_ = normalised_cdf(w);
  }
  if (dist_.kind == LengthDist::Kind::empirical) cdf_ = normalised_cdf(dist_.weights);
}

std::int64_t LengthSampler::clamp(double v) const {
  return static_cast<std::int64_t>(std::clamp(std::round(v), static_cast<double>(dist_.min_tokens), static_cast<double>(dist_.max_tokens)));
}

std::int64_t LengthSampler::next() {
  switch (dist_.kind) {
    case LengthDist::Kind::fixed: return dist_.value_tokens;
    case LengthDist::Kind::uniform: return rng_.uniform_int(dist_.min_tokens, dist_.max_tokens);
    case LengthDist::Kind::normal: return clamp(rng_.normal(dist_.mean_tokens, dist_.stddev_tokens));
    case LengthDist::Kind::lognormal: return clamp(std::exp(rng_.normal(log_mu_, dist_.sigma)));
    case LengthDist::Kind::zipf: return dist_.min_tokens + static_cast<std::int64_t>(draw_index(cdf_, rng_.uniform()));
    case LengthDist::Kind::empirical: return dist_.tokens[draw_index(cdf_, rng_.uniform())];
    case LengthDist::Kind::trace: break;
  }
  return dist_.value_tokens;
}

double gamma_variate(RngStream& rng, double shape) {
  if (shape < 1.0) {
    const double u = 1.0 - rng.uniform();  // (0, 1]
    return gamma_variate(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = rng.normal(0.0, 1.0);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

ArrivalProcess::ArrivalProcess(const ArrivalConfig& config, std::uint64_t seed) : c_(config), rng_(seed, "arrivals") {}

double ArrivalProcess::next_s() {
  using K = ArrivalConfig::Kind;
  switch (c_.kind) {
    case K::poisson: return clock_s_ += rng_.exponential(c_.rate_per_s);
    case K::gamma: {
      // Gaps ~ Gamma(k, theta) with k = 1/cv^2 and mean k*theta = 1/rate.
      const double k = 1.0 / (c_.cv * c_.cv);
      return clock_s_ += gamma_variate(rng_, k) / (k * c_.rate_per_s);
    }
    case K::constant: return static_cast<double>(count_++) / c_.rate_per_s;
    case K::on_off: {
      // A Poisson clock that runs only while "on": clock_s_ counts on-time; map it to wall time.
      clock_s_ += rng_.exponential(c_.rate_per_s);
      const double cycles = std::floor(clock_s_ / c_.on_s);
      return cycles * (c_.on_s + c_.off_s) + (clock_s_ - cycles * c_.on_s);
    }
    case K::ramp: {
      // Non-homogeneous Poisson by inversion: clock_s_ holds Lambda(t) = integral of the rate.
      clock_s_ += rng_.exponential(1.0);
      const double a = c_.start_rate_per_s, b = (c_.end_rate_per_s - c_.start_rate_per_s) / c_.ramp_s;
      const double lambda_ramp = a * c_.ramp_s + 0.5 * b * c_.ramp_s * c_.ramp_s;
      if (clock_s_ >= lambda_ramp) return c_.ramp_s + (clock_s_ - lambda_ramp) / c_.end_rate_per_s;
      if (std::abs(b) < 1e-300) return clock_s_ / a;
      // Solve a t + b t^2 / 2 = L for the root in [0, ramp_s] (stable form).
      return 2.0 * clock_s_ / (a + std::sqrt(std::max(0.0, a * a + 2.0 * b * clock_s_)));
    }
    case K::stages: return next_in_stages_s();
    case K::trace:
    case K::all_at_once:
    case K::concurrency: break;
  }
  return 0.0;
}

// Stage k starts when stage k-1 ends plus the gap; within a stage, constant arrivals come at
// i / rate (i = 0, 1, ...) and Poisson ones after exponential gaps, while before its end.
double ArrivalProcess::next_in_stages_s() {
  while (stage_ < c_.stages.size()) {
    const ArrivalStage& st = c_.stages[stage_];
    const double t = st.poisson ? clock_s_ + rng_.exponential(st.rate_per_s) : static_cast<double>(count_) / st.rate_per_s;
    if (t < st.duration_s) {
      clock_s_ = t;
      ++count_;
      return stage_start_s_ + t;
    }
    stage_start_s_ += st.duration_s + c_.stage_gap_s;
    clock_s_ = 0.0;
    count_ = 0;
    ++stage_;
  }
  stage_ = c_.stages.size() - 1;  // stage() stays a valid index
  return std::numeric_limits<double>::infinity();
}

WorkloadGenerator::WorkloadGenerator(const WorkloadConfig& config, std::uint64_t seed)
    : config_(config),
      seed_(seed),
      arrivals_(config.arrival, seed),
      class_rng_(seed, "class"),
      prefix_rng_(seed, "shared_prefix"),
      priority_rng_(seed, "priority") {
  std::vector<double> weights;
  for (std::size_t i = 0; i < config_.classes.size(); ++i) {
    const RequestClass& c = config_.classes[i];
    // The first class keeps the stream names of single-class workloads, so adding classes never
    // shifts an existing scenario's draws.
    const std::string suffix = i == 0 ? "" : "/" + c.name;
    prompt_.emplace_back(c.prompt_tokens, seed, "prompt_tokens" + suffix);
    output_.emplace_back(c.output_tokens, seed, "output_tokens" + suffix);
    weights.push_back(c.weight);
  }
  class_cdf_ = normalised_cdf(weights);
  if (config_.trace) {
    if (config_.trace->loop && config_.num_requests < 0 && config_.duration_s <= 0.0) {
      throw InputError(config_.trace->path, "workload.trace.loop",
                       "a looping trace never ends: set workload.num_requests or workload.duration_s");
    }
    if (!config_.trace->open) throw std::logic_error("workload.trace has no reader (the scenario parser sets TraceConfig::open)");
    trace_ = open_trace();
  }
  const std::int64_t turns = config_.sessions.turns;
  if (config_.num_requests >= 0) sessions_total_ = (config_.num_requests + turns - 1) / turns;
  const SharedPrefixConfig& sp = config_.shared_prefix;
  if (streams_run_concurrently(config_)) {
    // Prefix-major, then one Fisher-Yates shuffle from its own stream (random.shuffle in
    // inference-perf): the sending order is the pool's order, repeated.
    RngStream pool_rng(seed, "prompt_pool");
    for (std::int64_t p = 0; p < sp.num_prefixes * sp.prompts_per_prefix; ++p) {
      pool_.push_back({static_cast<std::int32_t>(p / sp.prompts_per_prefix), prompt_[0].next(),
                       kPoolStreamBase + static_cast<std::uint32_t>(p)});
    }
    for (std::size_t i = pool_.size(); i > 1; --i) {
      std::swap(pool_[i - 1], pool_[static_cast<std::size_t>(pool_rng.uniform_int(0, static_cast<std::int64_t>(i) - 1))]);
    }
  }
  if (config_.priority_class_weights.size() > 1) priority_cdf_ = normalised_cdf(config_.priority_class_weights);
}

WorkloadGenerator::~WorkloadGenerator() = default;

std::unique_ptr<TraceRows> WorkloadGenerator::open_trace() {
  std::unique_ptr<TraceRows> rows = config_.trace->open();
  return config_.trace->bootstrap ? bootstrap_rows(std::move(rows), seed_, trace_passes_++) : std::move(rows);
}

std::int64_t WorkloadGenerator::trace_rows_skipped() const {
  return trace_skipped_before_ + (trace_ ? trace_->skipped_rows() : 0);
}

std::uint32_t WorkloadGenerator::pick_class(const std::string& label) {
  if (config_.classes.size() == 1) return 0;
  if (!label.empty()) {
    for (std::size_t i = 0; i < config_.classes.size(); ++i) {
      if (config_.classes[i].name == label) return static_cast<std::uint32_t>(i);
    }
    throw InputError(config_.trace->path, "line " + std::to_string(trace_->line()),
                     "class '" + label + "' is not one of workload.classes");
  }
  return static_cast<std::uint32_t>(draw_index(class_cdf_, class_rng_.uniform()));
}

std::optional<RequestSpec> WorkloadGenerator::next() { return next_request(std::nullopt); }

std::optional<RequestSpec> WorkloadGenerator::next_sent_at(double sent_s) { return next_request(sent_s); }

std::optional<RequestSpec> WorkloadGenerator::next_request(std::optional<double> sent_s) {
  if (sessions_total_ >= 0 && sessions_started_ >= sessions_total_) return std::nullopt;
  std::optional<TraceRecord> row;
  if (trace_) {
    row = trace_->next();
    if (!row && config_.trace->loop && produced_ > 0) {
      // Times continue after the last row by the mean gap, so the loop seam is not a burst.
      const double next_offset_s = trace_last_s_ + trace_last_s_ / static_cast<double>(std::max<std::int64_t>(1, produced_));
      if (config_.num_requests < 0 && !(next_offset_s > trace_offset_s_)) {
        throw InputError(config_.trace->path, "workload.trace.loop",
                         "every row arrives at the same time, so looping never advances the clock and "
                         "workload.duration_s is never reached: set workload.num_requests");
      }
      trace_offset_s_ = next_offset_s;
      trace_skipped_before_ += trace_->skipped_rows();
      trace_ = open_trace();
      row = trace_->next();
    }
    if (!row) return std::nullopt;
  }
  double t_s = 0.0;
  if (sent_s) {
    t_s = *sent_s;
    if (trace_) trace_last_s_ = t_s;
  } else if (config_.arrival.kind == ArrivalConfig::Kind::trace) {
    t_s = trace_offset_s_ + row->arrival_s * config_.trace->time_scale;
    trace_last_s_ = t_s;
  } else {
    t_s = arrivals_.next_s();
    if (std::isinf(t_s)) return std::nullopt;  // the last stage is over
    if (trace_) trace_last_s_ = t_s;
  }
  if (config_.duration_s > 0.0 && t_s > config_.duration_s) return std::nullopt;
  if (!(t_s <= kMaxSimulatedTimeS)) {
    const std::string where = trace_ ? "line " + std::to_string(trace_->line()) : "workload.arrival";
    char at[32], limit[32];
    std::snprintf(at, sizeof at, "%.3g", t_s);
    std::snprintf(limit, sizeof limit, "%.3g", kMaxSimulatedTimeS);
    throw InputError(trace_ ? config_.trace->path : std::string(), where,
                     std::string("arrival at ") + at + " s" + (trace_ ? " (after workload.trace.time_scale)" : "") +
                         " is past the simulated-time limit of " + limit + " s (about a year)");
  }
  RequestSpec r;
  r.arrival_ns = seconds_to_ns(t_s);
  if (config_.arrival.kind == ArrivalConfig::Kind::stages) r.stage = arrivals_.stage();
  r.cls = pick_class(row ? row->cls : std::string());
  const RequestClass& c = config_.classes[r.cls];
  r.prompt_tokens = c.prompt_tokens.kind == LengthDist::Kind::trace ? row->prompt_tokens : prompt_[r.cls].next();
  r.output_tokens = c.output_tokens.kind == LengthDist::Kind::trace ? row->output_tokens : output_[r.cls].next();
  r.stream_id = static_cast<std::uint32_t>(sessions_started_++);
  const SharedPrefixConfig& sp = config_.shared_prefix;
  if (row && !row->prefix_id.empty()) take_trace_prefix(*row, r);
  if (!pool_.empty()) {
    const PooledPrompt& p = pool_[static_cast<std::size_t>((produced_) % static_cast<std::int64_t>(pool_.size()))];
    r.prefix_id = p.prefix_id;
    r.prefix_tokens = sp.prefix_tokens;
    r.prompt_tokens = sp.prefix_tokens + p.question_tokens;
    r.stream_id = p.stream_id;
  } else if (sp.num_prefixes > 0) {
    r.prefix_id = static_cast<std::int32_t>(prefix_rng_.uniform_int(0, sp.num_prefixes - 1));
    r.prefix_tokens = sp.prefix_tokens;
    r.prompt_tokens += sp.prefix_tokens;
  }
  r.stream_use = stream_use(r.turn);
  const auto& w = config_.priority_class_weights;
  if (w.size() > 1) r.priority = static_cast<std::uint8_t>(draw_index(priority_cdf_, priority_rng_.uniform()));
  ++produced_;
  return r;
}

// A trace row's prefix id with a length (the row's prefix_tokens, else workload.trace's): rows
// with one id start with the same tokens, so their full blocks hash alike in the prefix cache.
void WorkloadGenerator::take_trace_prefix(const TraceRecord& row, RequestSpec& r) {
  const std::int64_t tokens = row.prefix_tokens > 0 ? row.prefix_tokens : config_.trace->prefix_tokens;
  if (tokens <= 0) return;  // an id without a length: nothing known to share
  const std::string where = "line " + std::to_string(trace_->line());
  if (config_.shared_prefix.num_prefixes > 0) {
    throw InputError(config_.trace->path, where,
                     "prefix_id: the trace names its own prefixes, so the scenario's workload.shared_prefix must go");
  }
  if (tokens > r.prompt_tokens) {
    throw InputError(config_.trace->path, where,
                     "prefix_tokens: " + std::to_string(tokens) + " is longer than the request's prompt (" + std::to_string(r.prompt_tokens) +
                         " tokens)");
  }
  const auto [it, added] = trace_prefix_ids_.emplace(row.prefix_id, static_cast<std::int32_t>(trace_prefix_ids_.size()));
  r.prefix_id = it->second;
  r.prefix_tokens = tokens;
}

std::optional<RequestSpec> WorkloadGenerator::next_turn(const RequestSpec& done, TimeNs done_ns) {
  const std::int64_t turns = config_.sessions.turns;
  const std::int64_t index = static_cast<std::int64_t>(done.stream_id) * turns + done.turn + 1;
  if (done.turn + 1 >= turns || (config_.num_requests >= 0 && index >= config_.num_requests)) return std::nullopt;
  const double arrival_s = ns_to_seconds(done_ns) + config_.sessions.think_time_s;
  if (config_.duration_s > 0.0 && arrival_s > config_.duration_s) return std::nullopt;
  RequestSpec r = done;
  r.turn = done.turn + 1;
  r.arrival_ns = done_ns + seconds_to_ns(config_.sessions.think_time_s);
  // The new prompt extends the conversation: everything before, including the answer. (Sessions
  // need drawn lengths: the scenario parser rejects them with trace lengths.)
  r.prompt_tokens = done.prompt_tokens + done.output_tokens + prompt_[r.cls].next();
  r.output_tokens = output_[r.cls].next();
  r.stream_use = stream_use(r.turn);
  ++produced_;
  return r;
}

bool streams_run_concurrently(const WorkloadConfig& w) {
  return w.shared_prefix.num_prefixes > 0 && w.shared_prefix.prompts_per_prefix > 0;  // the pool of the constructor
}

StreamUse WorkloadGenerator::stream_use(std::int32_t turn) const {
  // A pool's prompt is sent again while its earlier copies may still run (the same stream_id);
  // a session's turns follow one another, each after the previous one completed.
  if (streams_run_concurrently(config_)) return StreamUse::concurrent;
  return turn + 1 < config_.sessions.turns ? StreamUse::later_turns : StreamUse::alone;
}

}  // namespace servesim
