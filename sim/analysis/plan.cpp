// See plan.hpp. Options are independent, so they run across cores (each saturate also spreads its
// replications); rows keep the options' order.
#include "sim/analysis/plan.hpp"

#include <cmath>

#include <tbb/parallel_for.h>

#include "sim/core/error.hpp"

namespace servesim {

Table plan(const std::vector<PlanOption>& options, const PlanScenarioFactory& make, std::uint64_t seed, const PlanOptions& o) {
  struct Outcome {
    std::string error;
    SaturateResult sat;
    double mean_output_tokens = 0.0;
  };
  std::vector<Outcome> outcomes(options.size());
  tbb::parallel_for(std::size_t{0}, options.size(), [&](std::size_t i) {
    const PlanOption& opt = options[i];
    Outcome& out = outcomes[i];
    try {
      make(opt, o.target_rate_per_s, seed);  // fits at all?
      out.sat = saturate([&](double rate, std::uint64_t s) { return make(opt, rate, s); }, seed, o.saturate);
      out.mean_output_tokens = 0.0;
      // Mean output length from a run at the stable rate (the workload's, not the GPU's, property).
      if (out.sat.stable_qps > 0.0) {
        const Scenario sc = make(opt, out.sat.stable_qps, seed);
        out.mean_output_tokens = metric(summarize_run(sc, simulate(sc)), "mean_output_tokens");
      }
    } catch (const InputError& e) {
      out.error = e.what();
    }
  });
  Table t;
  // The ep column only when some option uses expert parallelism: dense plans keep their columns.
  bool any_ep = false;
  for (const PlanOption& opt : options) any_ep = any_ep || opt.ep > 1;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const PlanOption& opt = options[i];
    const Outcome& out = outcomes[i];
    t.set(i, "hw", opt.hw);
    t.set(i, "quant", opt.quant);
    t.set(i, "tp", static_cast<std::int64_t>(opt.tp));
    if (any_ep) t.set(i, "ep", static_cast<std::int64_t>(opt.ep));
    t.set(i, "fits", out.error.empty());
    const auto price = o.usd_per_gpu_hour.find(opt.hw);
    if (price != o.usd_per_gpu_hour.end()) t.set(i, "usd_per_gpu_hour", price->second);
    if (!out.error.empty()) {
      t.set(i, "meets_slo", false);
      t.set(i, "note", out.error);
      continue;
    }
    t.set(i, "stable_qps_per_replica", out.sat.stable_qps);
    t.set(i, "saturation_batch_size", out.sat.saturation_batch_size);
    const bool meets = out.sat.stable_qps > 0.0;
    t.set(i, "meets_slo", meets);
    if (!meets) {
      t.set(i, "note", "no rate meets the SLO on one replica");
      continue;
    }
    const auto replicas = static_cast<std::int64_t>(std::ceil(o.target_rate_per_s / out.sat.stable_qps - 1e-9));
    const std::int64_t gpus = replicas * opt.tp;  // expert parallelism stays inside the TP group
    t.set(i, "replicas", replicas);
    t.set(i, "gpus", gpus);
    t.set(i, "mean_output_tokens", out.mean_output_tokens);
    if (price != o.usd_per_gpu_hour.end() && out.mean_output_tokens > 0.0) {
      const double tokens_per_hour = o.target_rate_per_s * out.mean_output_tokens * 3600.0;
      t.set(i, "usd_per_million_output_tokens", static_cast<double>(gpus) * price->second / tokens_per_hour * 1e6);
    } else {
      t.set(i, "note", "no price for " + opt.hw);
    }
  }
  return t;
}

}  // namespace servesim
