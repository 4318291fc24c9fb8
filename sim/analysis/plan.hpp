// plan: for each (GPU, precision, tensor-parallel size[, expert-parallel size]) option, whether the
// model fits, the per-replica stable rate under the SLO (saturate), the replicas and GPUs needed for
// the target rate, and the cost at on-demand prices. Rows come back cheapest first, so the answer
// to "what should I buy" is the first row that meets the SLO.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/analysis/error_bands.hpp"
#include "sim/analysis/saturation_rate.hpp"
#include "sim/io/table.hpp"

namespace servesim {

struct PlanOption {
  std::string hw, quant;
  int tp = 1;
  int ep = 1;  // expert-parallel GPUs of the TP group (mixture-of-experts models)
};

// Scenario of `replicas` replicas of `option` behind the workload's router at `rate_per_s` in all
// and `seed`, the workload's requests shared among them (the user's workload as it is: a run of
// the configuration costs what one replica's does). Throws InputError when the option is impossible (model does not fit, dtype unsupported); plan
// records its message.
using PlanScenarioFactory =
    std::function<Scenario(const PlanOption& option, double rate_per_s, std::uint64_t seed, std::int64_t replicas)>;

struct PlanOptions {
  double target_rate_per_s = 1.0;
  SaturateOptions saturate;
  std::map<std::string, double> usd_per_gpu_hour;  // by hardware profile name
  std::map<std::string, std::string> unpriced;     // by name: why a GPU has no price (the row's note)
  // Optional: after each option's search, (options done, total), from the thread that ran it.
  std::function<void(std::size_t done, std::size_t total)> progress;
  // Optional: other processes evaluate part of the options (--mpi, --shard); null: all run here.
  JobSplit* split = nullptr;
};

// What a row's configuration (its replicas of the option) predicts at the target rate: one run of
// it, as the factory builds it, at the target rate and the plan's seed.
struct PlanPrediction {
  double ttft_p50_s = 0.0, ttft_p99_s = 0.0, tpot_p50_s = 0.0, tpot_p99_s = 0.0;
  // The SLO target with the least headroom, 1 - value / threshold at the SLO percentile (negative:
  // missed in this run), over every class's latency targets; its class when the workload has several.
  std::string binding_metric;  // ttft_s, tpot_s or e2e_s
  std::string binding_class;
  double binding_value_s = 0.0, binding_threshold_s = 0.0, binding_headroom_frac = 0.0;
  bool meets_slo = false;  // every class's targets and min_success_frac, in this run
};

struct PlanRow {
  PlanOption option;
  std::string engine;  // the engine profile (engine.profile) every option ran; set by the caller
  // What usd_per_gpu_hour rests on ("median of 3", "1 provider", "--price", "file", "owned") and
  // the providers quoted; set by the caller.
  std::string price_basis, price_providers;
  bool fits = false;
  bool meets_slo = false;
  bool emulated = false;  // the GPU lacks the quantization format: weights converted to 16 bits at run time
  std::string note;  // why it does not fit or meet the SLO, or what is missing (never a file name)
  double stable_qps_per_replica = 0.0;
  std::int64_t saturation_batch_size = 0, replicas = 0, gpus = 0;
  double mean_output_tokens = 0.0;  // measured in the search's run at the stable rate, base seed
  std::optional<PlanPrediction> at_target;  // when it meets the SLO (it has a replica count)
  // The search's probes of one replica, in the order they ran (the load page and --load-csv).
  std::vector<SaturateProbe> probes;
  // The other GPUs at the same precision and parallel sizes whose stable rate is within the
  // search's tolerance of this one's (stable_rates_tied): the search cannot order them.
  std::vector<std::string> tied_with;
  // What the rate rests on besides the datasheet, for rows that meet the SLO: the profile's kind
  // (measured or derived, HwProfile::Provenance), its datasheet peaks, and two steps priced by its
  // step cost model: one prefill of the search's mean prompt alone, and one decode step of its mean
  // batch at the stable rate at the mean context.
  std::string profile_kind;
  std::string tp_link;  // the link the TP group's collectives run over (empty at TP 1)
  double hbm_bandwidth_bytes_per_s = 0.0, peak_flops_per_s = 0.0;
  std::int64_t prefill_tokens = 0, decode_batch = 0, decode_context_tokens = 0;
  double prefill_step_s = 0.0, decode_step_s = 0.0, decode_comm_s = 0.0;  // decode_comm_s: its collectives
  // Set when a GPU of the same precision and parallel sizes, whose datasheet bandwidth and peak
  // FLOP/s are at most this one's, sustains a higher rate beyond the tolerance: why, in words.
  std::string datasheet_inversion;
  std::optional<double> usd_per_gpu_hour, usd_per_hour, usd_per_million_output_tokens;
  // servesim's error on measurements of this GPU and engine it was not fitted to, for the SLO's
  // metrics (slo_bands; set by the caller from data/validation/error_bands.json); a target
  // whose metric was never measured there is listed in bands.missing.
  SloBands bands;
};

struct PlanResult {
  // Options that meet the SLO, cheapest per output token first (at equal cost, the most headroom:
  // replicas x stable rate), unpriced after priced; then those that fit but miss it, then those
  // that do not fit, in the options' order.
  std::vector<PlanRow> rows;
  // rows[0] when it meets the SLO and has a price: the configuration to buy.
  std::optional<std::size_t> cheapest;
};

PlanResult plan(const std::vector<PlanOption>& options, const PlanScenarioFactory& make, std::uint64_t seed, const PlanOptions& o);

// Two stable rates the search cannot order: each is the bottom of a bracket [rate, rate x (1 +
// rel_tolerance)] holding the true one, and the brackets overlap (both rates > 0).
bool stable_rates_tied(double a_per_s, double b_per_s, double rel_tolerance);

// Every field, one row per option in the result's order ("cheapest" marks the answer).
Table plan_table(const PlanResult& r);

}  // namespace servesim
