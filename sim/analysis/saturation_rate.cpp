// See saturation_rate.hpp.
#include "sim/analysis/saturation_rate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "sim/analysis/run_jobs.hpp"
#include "sim/core/error.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/report_io.hpp"
#include "sim/metrics/slo.hpp"
#include "sim/metrics/slo_settled.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/saturation_batch.hpp"
#include "sim/serve/step_cost.hpp"

namespace servesim {

namespace {
// Latencies and throughput of a probe, for the load-curve page (SaturateProbe's fields, in order).
constexpr std::size_t kLoadFigures = 8;
const std::array<const char*, kLoadFigures> kLoadPaths = {
    "latency.ttft_s.p50", "latency.ttft_s.p99", "latency.tpot_s.p50", "latency.tpot_s.p99",
    "latency.e2e_s.p50",  "latency.e2e_s.p99",  "throughput.requests_per_s", "throughput.output_tokens_per_s"};
constexpr std::array<double SaturateProbe::*, kLoadFigures> kLoadFields = {
    &SaturateProbe::ttft_p50_s, &SaturateProbe::ttft_p99_s, &SaturateProbe::tpot_p50_s,     &SaturateProbe::tpot_p99_s,
    &SaturateProbe::e2e_p50_s,  &SaturateProbe::e2e_p99_s,  &SaturateProbe::requests_per_s, &SaturateProbe::output_tokens_per_s};

// What a probe needs from one replication: computed where it ran (another process with --mpi).
struct ReplicationOutcome {
  bool operator==(const ReplicationOutcome&) const = default;
  bool met = false;
  std::string miss;  // why it missed the SLO (slo_miss), empty when met
  double goodput_requests_per_s = 0.0, success_frac = 0.0, mean_batch = 0.0, mean_context_tokens = 0.0, mean_output_tokens = 0.0;
  std::int64_t kv_capacity_tokens = 0;
  std::array<double, kLoadFigures> load{};  // kLoadPaths' values
  double slo_ratio = 0.0;  // binding_ratio: how far the run is from its SLO (decide_far_ratio)
  // Stopped once its miss was settled (SaturateOptions::stop_settled_misses): met, miss and
  // slo_ratio (an upper bound) only, no other figure.
  bool settled = false;
};

// The least threshold / value over every class's latency targets, capped (a zero latency); 0 when
// no target is set.
double binding_ratio(const SloResult& slo) {
  constexpr double kCap = 1e9;
  double ratio = 0.0;
  bool any = false;
  for (const ClassSloResult& c : slo.classes) {
    for (const SloTarget& t : c.targets) {
      const double r = t.value_s > t.threshold_s / kCap ? t.threshold_s / t.value_s : kCap;
      ratio = any ? std::min(ratio, r) : r;
      any = true;
    }
  }
  return ratio;
}

// A replication stopped once its miss was settled (SloMissWatch): its verdict, and a bound of its
// binding ratio (the latency is past at_least_s).
ReplicationOutcome settled_outcome(const WorkloadConfig& w, const SettledMiss& m) {
  ReplicationOutcome out;
  out.settled = true;
  out.slo_ratio = m.threshold_s / m.at_least_s;
  const std::string metric = m.metric == "ttft_s" ? "TTFT" : m.metric == "tpot_s" ? "TPOT" : "E2E";
  char pct[16];
  std::snprintf(pct, sizeof pct, "%g", 100.0 * w.classes[m.cls].slo.percentile);
  out.miss = (w.classes.size() > 1 ? "class '" + w.classes[m.cls].name + "': " : std::string()) + metric + " p" + pct +
             " is at least " + format_duration(m.at_least_s) + ", above its " + format_duration(m.threshold_s) +
             " target (the run stopped once that was certain)";
  return out;
}

// One replication's outcome. settle_factor > 0: the run stops once it misses its SLO by that
// factor for certain (SloMissWatch).
ReplicationOutcome replicate(const Scenario& s, double settle_factor) {
  std::optional<SimResult> run;
  if (settle_factor > 0.0) {
    SloMissWatch watch(s, settle_factor, true);
    SimHooks hooks;
    hooks.observer = &watch;
    try {
      run = simulate(s, hooks);
    } catch (const RunSettled& settled) {
      return settled_outcome(s.workload, settled.miss);
    }
  } else {
    run = simulate(s);
  }
  const SimResult& r = *run;
  // The four figures a probe reads, as the report computes them (not the whole report: a plan
  // reads them from thousands of runs).
  std::vector<std::string> paths = {"slo.goodput_requests_per_s", "slo.success_frac", "batch.mean_size", "kv_cache.capacity_tokens"};
  paths.insert(paths.end(), kLoadPaths.begin(), kLoadPaths.end());
  const std::map<std::string, double> m = report_figures_at(s, r, paths);
  ReplicationOutcome out;
  // Pass/fail from the SLO evaluation itself: without a latency target the report's slo.met is
  // null, and a probe passes when enough requests complete (min_success_frac).
  const SloResult slo = evaluate_slo(s.workload, r.metrics);
  out.met = slo.met;
  out.slo_ratio = binding_ratio(slo);
  if (!out.met) out.miss = slo_miss(s.workload, slo);
  out.goodput_requests_per_s = m.at("slo.goodput_requests_per_s");
  out.success_frac = m.at("slo.success_frac");
  out.mean_batch = m.at("batch.mean_size");
  out.mean_output_tokens = mean_output_tokens(r.metrics);
  out.mean_context_tokens = mean_prompt_tokens(r.metrics) + 0.5 * out.mean_output_tokens;
  out.kv_capacity_tokens = static_cast<std::int64_t>(m.at("kv_cache.capacity_tokens"));
  for (std::size_t i = 0; i < kLoadFigures; ++i) {
    const auto v = m.find(kLoadPaths[i]);
    out.load[i] = v == m.end() ? 0.0 : v->second;  // a figure the run has none of (no TPOT of 1-token outputs)
  }
  return out;
}

const JobCodec<ReplicationOutcome> replication_codec = {
    [](const ReplicationOutcome& o) {
      nlohmann::json j = nlohmann::json::array({o.met, exact_number(o.goodput_requests_per_s), exact_number(o.success_frac),
                                                exact_number(o.mean_batch), exact_number(o.mean_context_tokens),
                                                exact_number(o.mean_output_tokens), o.kv_capacity_tokens, o.miss});
      for (const double v : o.load) j.push_back(exact_number(v));
      j.push_back(exact_number(o.slo_ratio));
      j.push_back(o.settled);
      return j;
    },
    [](const nlohmann::json& j, const JobOrigin& at) {
      const std::string what = "met, goodput, success fraction, mean batch, mean context, mean output, KV capacity, miss, "
                               "TTFT, TPOT and E2E p50/p99, requests/s, output tokens/s, SLO ratio, settled";
      const KeyRange rate{0.0, 1e9, false, false}, fraction{0.0, 1.0, false, false}, count{0.0, 1e15, false, false};
      ReplicationOutcome o;
      o.met = at.boolean(at.element(j, 0, 10 + kLoadFigures, "", what), "[0]");
      o.goodput_requests_per_s = at.number(j[1], rate, "[1]");
      o.success_frac = at.number(j[2], fraction, "[2]");
      o.mean_batch = at.number(j[3], count, "[3]");
      o.mean_context_tokens = at.number(j[4], count, "[4]");
      o.mean_output_tokens = at.number(j[5], count, "[5]");
      o.kv_capacity_tokens = at.integer(j[6], count, "[6]");
      o.miss = at.string(j[7], "[7]");
      for (std::size_t i = 0; i < kLoadFigures; ++i) {
        std::string key = "[";  // built by append: GCC 12 warns (-Wrestrict) on "[" + to_string(...) here
        key += std::to_string(8 + i);
        key += ']';
        o.load[i] = at.number(j[8 + i], count, key);
      }
      o.slo_ratio = at.number(j[8 + kLoadFigures], count, "[" + std::to_string(8 + kLoadFigures) + "]");
      o.settled = at.boolean(j[9 + kLoadFigures], "[" + std::to_string(9 + kLoadFigures) + "]");
      return o;
    }};

// Replications [from, to) of a probe at `rate`, in order; settle_factor > 0: each stops once it
// misses its SLO by that factor for certain (replicate).
std::vector<ReplicationOutcome> replications(const RateScenarioFactory& make, std::uint64_t base_seed, double rate, int from, int to,
                                             const SaturateOptions& o, double settle_factor) {
  std::vector<Scenario> runs;
  for (int i = from; i < to; ++i) runs.push_back(make(rate, replication_seed(base_seed, i)));
  return run_jobs<ReplicationOutcome>(
      runs.size(), [&](std::size_t i) { return replicate(runs[i], settle_factor); }, o.parallel, o.split, replication_codec);
}

// stop_settled_misses: a probe's runs stop once they miss by the target (only their verdict is read).
double verdict_settle_factor(const SaturateOptions& o) { return o.stop_settled_misses ? 1.0 : 0.0; }

// A probe's figures from the replications it ran (means over them).
SaturateProbe summarize(double rate, const std::vector<ReplicationOutcome>& results) {
  SaturateProbe p;
  p.rate_per_s = rate;
  p.runs = static_cast<int>(results.size());
  for (const ReplicationOutcome& r : results) {
    if (r.met) ++p.passed;
    p.goodput_requests_per_s += r.goodput_requests_per_s / p.runs;
    p.success_frac += r.success_frac / p.runs;
    p.mean_batch += r.mean_batch / p.runs;
    for (std::size_t i = 0; i < kLoadFigures; ++i) p.*kLoadFields[i] += r.load[i] / p.runs;
  }
  for (const ReplicationOutcome& r : results) {
    if (!r.met && p.miss.empty()) p.miss = r.miss;
    p.identical = p.identical && r == results.front();
  }
  p.mean_context_tokens = results[0].mean_context_tokens;
  p.mean_output_tokens = results[0].mean_output_tokens;
  p.kv_capacity_tokens = results[0].kv_capacity_tokens;
  return p;
}

// A replication whose binding SLO ratio is `factor` or more from 1 on its verdict's side: met with
// ratio >= factor, or missed with ratio <= 1 / factor (its latency that far past the target).
bool far_from_slo(const ReplicationOutcome& r, double factor) {
  return r.slo_ratio > 0.0 && (r.met ? r.slo_ratio >= factor : r.slo_ratio <= 1.0 / factor);
}

// The replications of a probe: all R at once, or (decide_early) one at a time until a majority of
// R is decided: passed > R / 2, or too few left to reach it.
// With stop_settled_misses the first seed too stops once it misses by the target, before it is
// known whether it misses by decide_far_ratio (which would decide the probe alone), and it is
// taken as a near miss: the next seeds run. Where they make the probe fail, that is its verdict
// either way; where they would make it pass, the first seed runs again, stopping only at
// decide_far_ratio x the target, and decides as without stopping. Most such probes fail with
// their second seed (178 of 210 among bench/plan.sh's 88 options), so stopping the first seed
// early saves more than the few reruns cost.
std::vector<ReplicationOutcome> probe_outcomes(const RateScenarioFactory& make, std::uint64_t base_seed, double rate,
                                               const SaturateOptions& o) {
  const double settle = verdict_settle_factor(o);
  if (!o.decide_early) return replications(make, base_seed, rate, 0, o.replications, o, settle);
  const bool far_test = o.decide_far_ratio > 1.0;
  std::vector<ReplicationOutcome> out;
  int passed = 0;
  for (int i = 0; i < o.replications; ++i) {
    out.push_back(replications(make, base_seed, rate, i, i + 1, o, settle).front());
    if (out.back().met) ++passed;
    const int left = o.replications - i - 1;
    if (2 * passed > o.replications || 2 * (passed + left) <= o.replications) break;
    if (i == 0 && far_test && far_from_slo(out.front(), o.decide_far_ratio)) break;
  }
  if (far_test && out.size() > 1 && out.front().settled && 2 * passed > o.replications) {
    const ReplicationOutcome first = replications(make, base_seed, rate, 0, 1, o, o.decide_far_ratio).front();
    if (far_from_slo(first, o.decide_far_ratio)) return {first};
    out.front() = first;
  }
  return out;
}
bool passes(const SaturateProbe& p) { return 2 * p.passed > p.runs; }
constexpr double kBracketingProbesGuess = 4.0;  // the bracket's end is unknown until it is found
// Geometric bisection steps that shrink [lo, hi] to hi / lo - 1 <= rel_tolerance.
double bisection_probes(double hi_over_lo, double rel_tolerance) {
  return hi_over_lo - 1.0 > rel_tolerance ? std::ceil(std::log2(std::log(hi_over_lo) / std::log1p(rel_tolerance))) : 0.0;
}
}  // namespace

std::vector<LoadPoint> probe_points(const std::vector<SaturateProbe>& probes) {
  std::vector<LoadPoint> out;
  for (const SaturateProbe& pr : probes) {
    LoadPoint pt;
    pt.load = pr.rate_per_s;
    pt.ttft_p50_s = pr.ttft_p50_s, pt.ttft_p99_s = pr.ttft_p99_s, pt.tpot_p50_s = pr.tpot_p50_s, pt.tpot_p99_s = pr.tpot_p99_s;
    pt.e2e_p50_s = pr.e2e_p50_s, pt.e2e_p99_s = pr.e2e_p99_s;
    pt.requests_per_s = pr.requests_per_s, pt.output_tokens_per_s = pr.output_tokens_per_s;
    pt.meets_slo = passes(pr);
    out.push_back(pt);
  }
  return out;
}

double lowest_probe_rate(const Scenario& s) {
  const double requests = static_cast<double>(s.workload.num_requests);
  return std::max(1e-4, requests > 0.0 ? 2.0 * requests / kMaxSimulatedTimeS : 0.0);
}

std::string slo_miss(const WorkloadConfig& w, const SloResult& slo) {
  for (std::size_t i = 0; i < slo.classes.size(); ++i) {
    const ClassSloResult& c = slo.classes[i];
    if (c.met || !c.defined) continue;
    const SloConfig& target = w.classes[i].slo;
    const std::string who = slo.classes.size() > 1 ? "class '" + c.name + "': " : "";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%g", 100.0 * target.percentile);
    for (const SloTarget& t : c.targets) {
      if (t.met) continue;
      const std::string metric = t.metric == "ttft_s" ? "TTFT" : t.metric == "tpot_s" ? "TPOT" : "E2E";
      return who + metric + " p" + pct + " is " + format_duration(t.value_s) + ", above its " + format_duration(t.threshold_s) +
             " target";
    }
    char done[96];
    std::snprintf(done, sizeof done, "%.4g%% of requests completed, below the %g%% it asks", 100.0 * c.success_frac,
                  100.0 * target.min_success_frac);
    return who + done;
  }
  return "";
}

void saturation_batch(const Scenario& s, double mean_context, std::int64_t kv_capacity_tokens, SaturateResult& out) {
  out.mean_context_tokens = mean_context;
  const auto ctx = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(mean_context)));
  out.max_batch_size = std::max<std::int64_t>(1, std::min<std::int64_t>(s.engine.max_num_seqs, kv_capacity_tokens / ctx));
  out.saturation_batch_size = decode_saturation(s, static_cast<double>(ctx)).batch_size;
}

double stable_rate_guess(const Scenario& s) {
  const WorkloadConfig& w = s.workload;
  double prompt = 0.0, output = 0.0, weights = 0.0;
  double tpot_s = 0.0, ttft_s = 0.0, e2e_s = 0.0;  // the tightest of each over the classes (0: none)
  const auto tightest = [](double& have, double target) {
    if (target > 0.0) have = have > 0.0 ? std::min(have, target) : target;
  };
  for (const RequestClass& c : w.classes) {
    if (c.prompt_tokens.kind == LengthDist::Kind::trace || c.output_tokens.kind == LengthDist::Kind::trace) return 0.0;
    prompt += c.weight * mean_tokens(c.prompt_tokens);
    output += c.weight * mean_tokens(c.output_tokens);
    weights += c.weight;
    tightest(tpot_s, c.slo.tpot_s);
    tightest(ttft_s, c.slo.ttft_s);
    tightest(e2e_s, c.slo.e2e_s);
  }
  if (weights <= 0.0 || output < 1.0) return 0.0;
  prompt = prompt / weights + static_cast<double>(w.shared_prefix.prefix_tokens);
  output /= weights;
  const double context = prompt + 0.5 * output;
  const MemoryPlan memory = plan_memory(s);
  const auto kv_seqs = static_cast<std::int64_t>(static_cast<double>(memory.kv_blocks * memory.kv_unit_tokens) / context);
  const std::int64_t max_batch = std::max<std::int64_t>(1, std::min(s.engine.max_num_seqs, kv_seqs));
  const std::unique_ptr<StepCostModel> cost = make_step_cost_model(s, s.parallel, false);
  BatchShape one_prompt;
  one_prompt.add_prefill(std::max<std::int64_t>(1, std::llround(prompt)), 0, true);
  const double prefill_s = cost->step_time(one_prompt).time_s;
  const auto ctx = std::max<std::int64_t>(1, std::llround(context));
  double best = 0.0;
  for (std::int64_t b = 1; b <= max_batch; b = std::max(b + 1, static_cast<std::int64_t>(std::ceil(1.1 * static_cast<double>(b))))) {
    const double batch = static_cast<double>(b);
    BatchShape step;
    for (std::int64_t i = 0; i < b; ++i) step.add_decode(ctx);
    const auto chunk = std::min<std::int64_t>(s.engine.max_num_batched_tokens - b, std::llround(batch * prompt / output));
    if (chunk > 0) step.add_prefill(chunk, 0, false);
    const double step_s = cost->step_time(step).time_s;
    const double rate = batch / (output * step_s);
    if (tpot_s > 0.0 && step_s > 0.8 * tpot_s) break;
    if (ttft_s > 0.0 && prefill_s > ttft_s) break;
    if (e2e_s > 0.0 && prefill_s + output * step_s > e2e_s) break;
    best = rate;
  }
  return best;
}

int expected_probes(const SaturateOptions& o) {
  return static_cast<int>(std::min<double>(o.max_probes, kBracketingProbesGuess + bisection_probes(2.0, o.rel_tolerance)));
}

int expected_runs(const SaturateOptions& o) {
  const int probes = expected_probes(o);
  if (!o.decide_early) return probes * o.replications;
  const int majority = o.replications / 2 + 1;
  return probes * majority + (o.replications - majority);
}

double SaturateProgress::fraction() const {
  double remaining = kBracketingProbesGuess;
  if (lo > 0.0 && hi > 0.0) remaining = bisection_probes(hi / lo, rel_tolerance);
  const double done = static_cast<double>(probes_done);
  return done / (done + std::max(1.0, remaining));
}

namespace {
// One search's state: its probes (and each one's replications), the bracket [lo, hi] (0: not
// found yet), the best passing probe and the probes left.
struct Search {
  const RateScenarioFactory& make;
  std::uint64_t base_seed;
  const SaturateOptions& o;
  SaturateResult out;
  std::vector<std::vector<ReplicationOutcome>> outcomes;  // per probe, in out.probes' order
  int budget;
  double lo = 0.0, hi = 0.0;
  SaturateProbe best;

  SaturateProbe run(double rate) {
    if (o.progress) o.progress({static_cast<int>(out.probes.size()), rate, lo, hi, o.rel_tolerance});
    outcomes.push_back(probe_outcomes(make, base_seed, rate, o));
    out.probes.push_back(summarize(rate, outcomes.back()));
    --budget;
    return out.probes.back();
  }
  // Double up from a passing rate until one fails.
  void double_up(const SaturateProbe& first) {
    lo = first.rate_per_s;
    best = first;
    while (budget > 0) {
      const SaturateProbe p = run(lo * 2.0);
      if (!passes(p)) {
        hi = p.rate_per_s;
        break;
      }
      lo = p.rate_per_s;
      best = p;
      if (lo > 1e6) break;
    }
  }
  // Halve down from a failing rate until one passes or the floor (min_rate_per_s) is reached;
  // floor_first_below_per_s probes the halving's last rate before going below it.
  void halve_down(const SaturateProbe& first) {
    hi = first.rate_per_s;
    std::optional<SaturateProbe> floor;
    while (budget > 0 && hi / 2.0 >= o.min_rate_per_s) {
      if (!floor && hi / 2.0 < o.floor_first_below_per_s) {
        double rate = hi;  // exactly the halving's rate: halving is exact in binary
        while (rate / 2.0 >= o.min_rate_per_s) rate /= 2.0;
        if (rate < hi / 2.0) {
          floor = run(rate);
          if (!passes(*floor)) break;
        }
      }
      const SaturateProbe p = floor && hi / 2.0 == floor->rate_per_s ? *floor : run(hi / 2.0);
      if (passes(p)) {
        lo = p.rate_per_s;
        best = p;
        break;
      }
      hi = p.rate_per_s;
    }
  }
  // Bisect geometrically inside [lo, hi] to the tolerance.
  void bisect() {
    while (lo > 0.0 && hi > 0.0 && hi / lo - 1.0 > o.rel_tolerance && budget > 0) {
      const double mid = std::sqrt(lo * hi);
      const SaturateProbe p = run(mid);
      if (passes(p)) {
        lo = mid;
        best = p;
      } else {
        hi = mid;
      }
    }
  }
  // decide_early: the stable rate's probe runs its remaining replications, so that its means (the
  // batch and goodput at the stable rate) are over all R, as without it.
  // Its settled replications (stop_settled_misses) too run to the end.
  void complete_best() {
    if (best.runs == 0) return;
    const auto at = static_cast<std::size_t>(
        std::find_if(out.probes.begin(), out.probes.end(), [&](const SaturateProbe& p) { return p.rate_per_s == best.rate_per_s; }) -
        out.probes.begin());
    run_out(at);
    if (best.runs < o.replications) {
      const std::vector<ReplicationOutcome> rest = replications(make, base_seed, best.rate_per_s, best.runs, o.replications, o, 0.0);
      outcomes[at].insert(outcomes[at].end(), rest.begin(), rest.end());
      out.probes[at] = summarize(best.rate_per_s, outcomes[at]);
    }
    best = out.probes[at];
  }
  // How many of probe `at`'s replications run up to its first miss (summarize's miss is that one's).
  std::size_t through_first_miss(std::size_t at) const {
    const std::vector<ReplicationOutcome>& runs = outcomes[at];
    const auto miss = std::find_if(runs.begin(), runs.end(), [](const ReplicationOutcome& r) { return !r.met; });
    return static_cast<std::size_t>(miss - runs.begin()) + 1;
  }
  // Probe `at`'s settled replications (of its first `first` ones) run again to the end, where its
  // figures are read: every one of the stable rate's probe (its means); when no rate meets the
  // SLO, the first probe's first seed (summarize reads its lengths and KV capacity) and the lowest
  // probe's up to its first miss (the one-line reason). Settled means certain: a rerun that meets the
  // SLO is a bug.
  void run_out(std::size_t at, std::size_t first = std::numeric_limits<std::size_t>::max()) {
    std::vector<ReplicationOutcome>& runs = outcomes[at];
    const double rate = out.probes[at].rate_per_s;
    bool rerun = false;
    for (std::size_t i = 0; i < std::min(first, runs.size()); ++i) {
      if (!runs[i].settled) continue;
      runs[i] = replications(make, base_seed, rate, static_cast<int>(i), static_cast<int>(i) + 1, o, 0.0).front();
      if (runs[i].met) throw std::logic_error("saturate: a replication settled as a miss met its SLO when run to the end");
      rerun = true;
    }
    if (rerun) out.probes[at] = summarize(rate, runs);
  }
};
}  // namespace

double first_probe_rate(const SaturateOptions& o) {
  if (o.start_near_per_s <= 0.0) return o.start_rate_per_s;
  // ldexp: start x 2^k exactly, the rate the doubling or halving from start would reach.
  int k = static_cast<int>(std::lround(std::log2(o.start_near_per_s / o.start_rate_per_s)));
  k = std::min(k, 40);
  while (k < 0 && std::ldexp(o.start_rate_per_s, k) < o.min_rate_per_s) ++k;  // the halving's last rate at the lowest
  return std::ldexp(o.start_rate_per_s, k);
}

SaturateResult saturate(const RateScenarioFactory& make, std::uint64_t base_seed, const SaturateOptions& o) {
  Search search{make, base_seed, o, {}, {}, o.max_probes, 0.0, 0.0, {}};
  // 1. Bracket: double up from a passing rate, or halve down from a failing one.
  const SaturateProbe first = search.run(first_probe_rate(o));
  if (passes(first)) {
    search.double_up(first);
  } else {
    search.halve_down(first);
  }
  const double lo = search.lo;
  if (lo > 0.0 && search.hi == 0.0) {
    // No rate failed: the workload ends before a queue can build (too few requests, or too short
    // a duration), so any "stable QPS" would only be where the search stopped.
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.3g", lo);
    throw InputError(make(lo, base_seed).file, "workload.num_requests",
                     std::string("every probed rate up to ") + rate +
                         " req/s met the SLO: the workload ends before a queue builds up, so it has no saturation rate; raise "
                         "workload.num_requests (or duration_s)");
  }
  // 2. Bisect geometrically inside [lo, hi].
  search.bisect();
  SaturateResult& out = search.out;
  if (search.lo == 0.0) {
    search.run_out(0, 1);  // the saturation batch's reference below
    search.run_out(out.probes.size() - 1, search.through_first_miss(out.probes.size() - 1));  // the line's miss
    const SaturateProbe& lowest = out.probes.back();
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.3g", lowest.rate_per_s);
    out.unmet = std::string("no rate meets the SLO: even at ") + rate + " req/s, the lowest probed, " + lowest.miss;
  }
  search.complete_best();
  const SaturateProbe& best = search.best;
  out.identical_replications = o.replications > 1;
  for (const SaturateProbe& p : out.probes) out.identical_replications = out.identical_replications && p.identical;
  out.stable_qps = search.lo;
  out.first_failing_qps = search.hi;
  out.batch_at_stable_qps = best.mean_batch;
  out.goodput_at_stable_qps = best.goodput_requests_per_s;
  out.mean_output_tokens_at_stable_qps = best.mean_output_tokens;
  const SaturateProbe& ref = best.runs > 0 ? best : out.probes.front();
  saturation_batch(make(ref.rate_per_s, base_seed), ref.mean_context_tokens, ref.kv_capacity_tokens, out);
  return std::move(search.out);
}

}  // namespace servesim
