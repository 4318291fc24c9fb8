// Saturation, in rate (`servesim saturate`): the highest arrival rate at which the scenario meets
// its SLO (latency targets at the percentile and >= min_success_frac completed), found by
// bracketing then geometric bisection. (Saturation in batch, from the cost model alone, is
// sim/serve/saturation_batch.hpp.)
// Robust to noise: each probe runs R replications whose seeds are the same at every rate (common
// random numbers: the arrival gaps scale with 1/rate, the lengths do not change), and a rate
// passes when a majority of its replications meet the SLO.
#pragma once
#include <functional>
#include <vector>

#include "sim/analysis/summary.hpp"
#include "sim/dist/job_split.hpp"
#include "sim/io/load_data.hpp"
#include "sim/metrics/slo.hpp"

namespace servesim {

// Builds the scenario at `rate_per_s` with `seed`.
using RateScenarioFactory = std::function<Scenario(double rate_per_s, std::uint64_t seed)>;

// Where a search stands, before each probe (for progress lines).
struct SaturateProgress {
  int probes_done = 0;
  double next_rate_per_s = 0.0;
  double lo = 0.0, hi = 0.0;  // passing and failing rates found so far (0: none yet)
  double rel_tolerance = 0.01;
  // Share of the search done: probes so far over probes so far plus those the bracket still
  // needs (bisection steps to the tolerance; a guess of 4 while bracketing).
  double fraction() const;
};

struct SaturateOptions {
  int replications = 3;
  double start_rate_per_s = 1.0;
  // A guess of the stable rate (0: none; stable_rate_guess): the search starts at the rate of
  // start_rate_per_s x 2^k (k an integer) nearest to it instead of at start_rate_per_s. The rates
  // are those the search from start_rate_per_s would probe, so where the verdicts rise no higher
  // as the rate doubles (a pass below every fail) it finds the same bracket, and then the same
  // bisection and stable rate, with fewer probes on the way.
  double start_near_per_s = 0.0;
  double rel_tolerance = 0.01;  // stop when hi / lo - 1 is below this
  int max_probes = 40;
  // The lowest rate probed while halving down from a failing start (the scenario must still be
  // valid there: its arrivals within the simulated-time limit).
  double min_rate_per_s = 1e-4;
  bool parallel = true;
  // Replications run one after another and a probe stops once its majority is decided (two of
  // three agree); the probe that ends as the stable rate then runs the rest, so its means are over
  // all R. The same search and answer as R at every probe, with about a third fewer runs (plan:
  // its options are what run in parallel). A probe's `runs` is the replications it ran.
  bool decide_early = false;
  // When the halving down from a failing start would probe below this rate (0: never), it first
  // probes the lowest rate the halving can reach: if that fails too, no rate meets the SLO
  // (latency does not fall as the rate rises), known in one probe instead of the rest of the
  // halving (the slowest runs: one request at a time); if it passes, the halving goes on.
  double floor_first_below_per_s = 0.0;
  // With decide_early: a probe whose first replication meets the SLO with its binding latency at
  // most the target / this factor, or misses it at this factor x the target or more, is decided by
  // that replication alone (0: off): the other seeds would have to move that latency by the factor
  // to outvote it. The binding latency is the one with the least threshold / value over every
  // class's targets; without a latency target nothing is decided early this way.
  double decide_far_ratio = 0.0;
  // A replication stops as soon as its SLO miss is certain (sim/metrics/slo_settled.hpp: more of
  // its requests are past a target than the percentile lets past it). A first seed stopped so is
  // taken as a near miss (the next seeds run); where they would make its probe pass, it runs
  // again, stopping only at decide_far_ratio x the target, and decides as without stopping. The
  // same verdicts, so the same search, stable rate and figures at it (its probe's stopped
  // replications, and where no rate meets the SLO the first and lowest probes', run again to the
  // end); but a probe may run other seeds than without it (runs), and the other probes' load
  // figures (probe_points) cover the part of a run that ran: off (plan's --html and --load-csv)
  // where those are drawn. Without latency targets nothing stops.
  bool stop_settled_misses = false;
  std::function<void(const SaturateProgress&)> progress;  // optional; called before each probe
  // Optional: a probe's replications spread over processes (--mpi); every process takes the same
  // path through the search, since each gets every replication's outcome.
  JobSplit* split = nullptr;
};

struct SaturateProbe {
  double rate_per_s = 0.0;
  int passed = 0, runs = 0;
  double goodput_requests_per_s = 0.0, success_frac = 0.0, mean_batch = 0.0;  // means over replications
  double mean_context_tokens = 0.0;  // prompt + half the output, first replication
  double mean_output_tokens = 0.0;   // of the completed requests, first replication
  std::int64_t kv_capacity_tokens = 0;
  // Latency percentiles and throughput, means over the replications run (the load-curve page).
  double ttft_p50_s = 0.0, ttft_p99_s = 0.0, tpot_p50_s = 0.0, tpot_p99_s = 0.0, e2e_p50_s = 0.0, e2e_p99_s = 0.0;
  double requests_per_s = 0.0, output_tokens_per_s = 0.0;
  std::string miss;  // why the first failing replication missed the SLO (slo_miss); empty when all met
  bool identical = true;  // every replication gave the same figures (nothing drew from the seed)
};

struct SaturateResult {
  double stable_qps = 0.0;            // highest passing rate found (0: none down to the floor)
  double first_failing_qps = 0.0;     // the bracket's top (0 when nothing failed up to the ceiling)
  double batch_at_stable_qps = 0.0;   // mean batch size in the runs at stable_qps
  double goodput_at_stable_qps = 0.0;
  double mean_output_tokens_at_stable_qps = 0.0;  // the first replication's (the base seed's) completed requests
  // The saturation batch size (serve/saturation_batch.hpp, the same definition as the run
  // report's batch.saturation_size) at mean_context_tokens: beyond it, more batching buys little.
  // It ignores KV capacity; max_batch_size says what the cache allows.
  std::int64_t saturation_batch_size = 0;
  std::int64_t max_batch_size = 0;    // min(max_num_seqs, sequences the KV cache holds at that context)
  double mean_context_tokens = 0.0;
  std::vector<SaturateProbe> probes;  // in the order they ran
  // When no rate probed meets the SLO: one line saying so, with the lowest rate probed and what
  // missed there ("no rate meets the SLO: even at 0.000122 req/s ... TTFT p90 is 12 ms, above ...").
  std::string unmet;
  // Replications > 1 and every probe's replications identical: the scenario draws nothing from the
  // seed (a trace's arrivals and lengths), so a majority of R is one run R times.
  bool identical_replications = false;
};

// The lowest rate worth probing for `s` (at any rate): its arrivals must stay within the
// simulated-time limit, so num_requests at twice the mean span fit (1e-4 req/s at most).
double lowest_probe_rate(const Scenario& s);

// Why a run missed its SLO, in one phrase: the first target missed ("TTFT p90 is 12 ms, above its
// 1 ms target"; the class first when there are several) or the completed fraction.
std::string slo_miss(const WorkloadConfig& workload, const SloResult& slo);

SaturateResult saturate(const RateScenarioFactory& make, std::uint64_t base_seed, const SaturateOptions& options);

// The probes as load levels (the load page, --load-csv): each one's rate, its replications' mean
// latencies and throughput, and whether a majority of them met the SLO.
std::vector<LoadPoint> probe_points(const std::vector<SaturateProbe>& probes);

// A guess of the stable rate from the cost model alone, before any run (0: none, e.g. trace
// lengths, or no batch meets the TPOT target): continuous batching in balance at the workload's
// mean prompt and output lengths. At batch B each step decodes B tokens and prefills B x prompt /
// output prompt tokens (as many as arrive while it runs); the rate is B / (output x step time).
// The guess is the largest B (up to max_num_seqs and the KV cache) whose step stays within 0.8
// of the TPOT target (a margin for the p99), whose lone prompt prefill within the TTFT target and
// whose request within the E2E target. Only where a search starts (SaturateOptions::
// start_near_per_s): on bench/plan.sh's 88 options (llama-2-70b) it is 0.69x to 2.4x the stable
// rate found.
double stable_rate_guess(const Scenario& s);

// Probes a search is expected to take, for work estimates before it starts: the same guess of 4
// while bracketing as SaturateProgress::fraction, then bisection from a factor-2 bracket to the
// tolerance (11 at 1%; measured 9 to 15 on scenarios/plan-chat.json across GPUs).
int expected_probes(const SaturateOptions& options);
// Simulations a search is expected to run: expected_probes, each R replications, or with
// decide_early a majority of R (the replications agree but near the stable rate) and the rest of
// R once, for the stable rate's probe.
int expected_runs(const SaturateOptions& options);

// saturation_batch_size and max_batch_size for a scenario at a mean context.
void saturation_batch(const Scenario& s, double mean_context_tokens, std::int64_t kv_capacity_tokens, SaturateResult& out);

}  // namespace servesim
