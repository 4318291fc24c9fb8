// See work_estimate.hpp.
#include "sim/analysis/work_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <thread>

#include "sim/core/error.hpp"

namespace servesim {

namespace {

// Measured on scenarios/default.json (Release build, one core): an all_at_once run of 1e6
// requests peaks 157 MB above a 1-request run and simulates 4.5e7 sequence-steps/s. Each
// simulation's scenario (its hardware profile and tables) costs about 1 MB and 1 to 2 ms of CPU
// to build since hardware profiles are cached (WorkBudget::setup_sequence_steps, 1e5, leans
// high): a sweep of 500 seeds of a 1-request llama-2-70b TP 4 scenario took 0.40 s user + sys on
// h100-sxm and 0.80 s on a100-80gb-sxm (GEMM tables; 0.44 s of it system time for the 600 MB of
// 500 scenarios held at once), holding 0.15 and 1.2 MB per scenario (2026-12-06; 4.6 s and 6.1 s
// before the cache).
constexpr double kBytesPerRequest = 200.0;
constexpr double kBytesPerScenario = 1e6;
// Assumed output length of trace rows (not read ahead of the run).
constexpr double kTraceOutputTokens = 512.0;

double mean_tokens(const LengthDist& d) {
  using K = LengthDist::Kind;
  const double hi = d.max_tokens > 0 ? static_cast<double>(d.max_tokens) : std::numeric_limits<double>::infinity();
  switch (d.kind) {
    case K::fixed: return static_cast<double>(d.value_tokens);
    case K::normal:
    case K::lognormal: return std::clamp(d.mean_tokens, static_cast<double>(d.min_tokens), hi);
    case K::uniform:
    case K::zipf: return 0.5 * static_cast<double>(d.min_tokens + d.max_tokens);
    case K::empirical: {
      double sum = 0.0, w = 0.0;
      for (std::size_t i = 0; i < d.tokens.size() && i < d.weights.size(); ++i) {
        sum += static_cast<double>(d.tokens[i]) * d.weights[i];
        w += d.weights[i];
      }
      return w > 0.0 ? sum / w : 0.0;
    }
    case K::trace: return kTraceOutputTokens;
  }
  return 0.0;
}

// Mean arrival rate (requests/s); 0 when the arrivals have none (trace, all_at_once).
double mean_rate_per_s(const ArrivalConfig& a) {
  using K = ArrivalConfig::Kind;
  switch (a.kind) {
    case K::poisson:
    case K::gamma:
    case K::constant: return a.rate_per_s;
    case K::on_off: return a.on_s + a.off_s > 0.0 ? a.rate_per_s * a.on_s / (a.on_s + a.off_s) : a.rate_per_s;
    case K::ramp: return std::max(a.start_rate_per_s, a.end_rate_per_s);
    case K::stages: {
      double requests = 0.0, span_s = 0.0;
      for (const ArrivalStage& st : a.stages) {
        requests += st.rate_per_s * st.duration_s;
        span_s += st.duration_s;
      }
      return span_s > 0.0 ? requests / span_s : 0.0;
    }
    case K::trace:
    case K::all_at_once:
    case K::concurrency: return 0.0;  // a closed loop's rate is the server's: num_requests bounds it
  }
  return 0.0;
}

// Requests the arrival process itself ends after (stages), or infinity.
double arrival_requests(const ArrivalConfig& a) {
  if (a.kind != ArrivalConfig::Kind::stages) return std::numeric_limits<double>::infinity();
  double requests = 0.0;
  for (const ArrivalStage& st : a.stages) requests += std::ceil(st.rate_per_s * st.duration_s);
  return requests;
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

}  // namespace

WorkEstimate estimate_work(const Scenario& s) {
  const WorkloadConfig& w = s.workload;
  WorkEstimate e;
  double requests = w.num_requests >= 0 ? static_cast<double>(w.num_requests) : std::numeric_limits<double>::infinity();
  const double rate = mean_rate_per_s(w.arrival);
  if (w.duration_s > 0.0 && rate > 0.0) requests = std::min(requests, rate * w.duration_s);
  requests = std::min(requests, arrival_requests(w.arrival));
  if (!(requests < std::numeric_limits<double>::infinity())) {
    e.bounded = false;  // a trace read to its end: as long as the file
    return e;
  }
  double weight = 0.0, output = 0.0;
  for (const RequestClass& c : w.classes) {
    weight += c.weight;
    output += c.weight * mean_tokens(c.output_tokens);
  }
  const double mean_output = weight > 0.0 ? output / weight : 0.0;
  e.requests = requests;
  e.sequence_steps = requests * (mean_output + 1.0);
  e.peak_bytes = requests * kBytesPerRequest;
  return e;
}

void check_work(std::span<const Scenario> runs, std::size_t copies, const WorkBudget& budget, const std::string& where,
                const std::string& levers, const std::string& override_flag, std::optional<std::size_t> built_at_once) {
  double steps = 0.0, request_bytes = 0.0, requests = 0.0;
  const double n = static_cast<double>(copies);
  for (const Scenario& s : runs) {
    const WorkEstimate e = estimate_work(s);
    steps += n * (e.sequence_steps + budget.setup_sequence_steps);
    requests += n * e.requests;
    request_bytes = std::max(request_bytes, e.peak_bytes);
  }
  const std::size_t simulations = runs.size() * copies;
  // The scenarios built at once (by default every one, before the runs) and the runs, in parallel
  // one per core, that hold their requests at once.
  const std::size_t built = std::min(simulations, built_at_once.value_or(simulations));
  const double bytes = kBytesPerScenario * static_cast<double>(built) +
                       request_bytes * static_cast<double>(std::min<std::size_t>(simulations, std::max(1u, std::thread::hardware_concurrency())));
  const std::string what = std::to_string(simulations) + (simulations == 1 ? " simulation" : " simulations") + " of about " +
                           sci(requests) + " requests in all";
  if (steps > budget.max_sequence_steps) {
    throw InputError(where, "", what + " would take about " + sci(steps) + " sequence-steps (requests x output tokens, and " +
                                            sci(budget.setup_sequence_steps) + " per simulation for its set-up), past the limit of " +
                                            sci(budget.max_sequence_steps) + " (about 20 s on one core): lower " + levers +
                                            ", or pass " + override_flag + " to run it anyway");
  }
  if (bytes > budget.max_bytes) {
    throw InputError(where, "", what + " would hold about " + sci(bytes / 1e9) + " GB at once, past the limit of " +
                                            sci(budget.max_bytes / 1e9) + " GB: lower " + levers + ", or pass " + override_flag +
                                            " to run it anyway");
  }
}

}  // namespace servesim
