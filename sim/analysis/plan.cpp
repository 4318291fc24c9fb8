// See plan.hpp. Options are independent, so they run across cores and processes (run_jobs.hpp;
// each saturate also spreads its replications over cores); the result is sorted afterwards, so it
// does not depend on timing.
#include "sim/analysis/plan.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "sim/analysis/run_jobs.hpp"
#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/describe.hpp"
#include "sim/metrics/slo.hpp"
#include "sim/serve/step_cost.hpp"

namespace servesim {

namespace {

// The run's latencies and, over every class's latency targets, the one with the least headroom.
PlanPrediction predict(const Scenario& s, const SimResult& r) {
  PlanPrediction p;
  const std::map<std::string, double> m =
      report_figures_at(s, r, {"latency.ttft_s.p50", "latency.ttft_s.p99", "latency.tpot_s.p50", "latency.tpot_s.p99"});
  p.ttft_p50_s = m.at("latency.ttft_s.p50");
  p.ttft_p99_s = m.at("latency.ttft_s.p99");
  p.tpot_p50_s = m.at("latency.tpot_s.p50");
  p.tpot_p99_s = m.at("latency.tpot_s.p99");
  const SloResult slo = evaluate_slo(s.workload, r.metrics);
  p.meets_slo = slo.met;
  bool first = true;
  for (const ClassSloResult& c : slo.classes) {
    for (const SloTarget& t : c.targets) {
      const double headroom = 1.0 - t.value_s / t.threshold_s;
      if (!first && headroom >= p.binding_headroom_frac) continue;
      first = false;
      p.binding_metric = t.metric;
      p.binding_class = slo.classes.size() > 1 ? c.name : "";
      p.binding_value_s = t.value_s;
      p.binding_threshold_s = t.threshold_s;
      p.binding_headroom_frac = headroom;
    }
  }
  return p;
}

// The profile's kind and peaks, and a prefill and a decode step as this option's replica prices them.
void price_steps(const Scenario& s, const SaturateResult& sat, PlanRow& row) {
  row.profile_kind = s.hw.provenance.kind;
  const int tp = static_cast<int>(s.parallel.tensor_parallel_size);
  if (tp > 1) row.tp_link = s.hw.interconnect.link(s.hw.interconnect.scope_for(tp)).name;
  row.hbm_bandwidth_bytes_per_s = s.hw.hbm_bandwidth_bytes_per_s;
  row.peak_flops_per_s = s.hw.peak_flops(s.precision.weights);
  row.prefill_tokens = std::max<std::int64_t>(1, std::llround(sat.mean_context_tokens - 0.5 * sat.mean_output_tokens_at_stable_qps));
  row.decode_batch = std::max<std::int64_t>(1, std::llround(sat.batch_at_stable_qps));
  row.decode_context_tokens = std::max<std::int64_t>(1, std::llround(sat.mean_context_tokens));
  const std::unique_ptr<StepCostModel> cost = make_step_cost_model(s, s.parallel, false);
  BatchShape prefill;
  prefill.add_prefill(row.prefill_tokens, 0, true);
  row.prefill_step_s = cost->step_time(prefill).time_s;
  BatchShape decode;
  for (std::int64_t i = 0; i < row.decode_batch; ++i) decode.add_decode(row.decode_context_tokens);
  const StepTime decode_time = cost->step_time(decode);
  row.decode_step_s = decode_time.time_s;
  row.decode_comm_s = decode_time.comm_s;
}

// A probe whose first seed's binding latency is within half its target, or twice it or more, is
// decided by that seed (SaturateOptions::decide_far_ratio): the bracketing probes and the first
// bisection steps mostly are. bench/plan.sh's 88-option case: 1461 -> 1275 simulations (-13%), its
// --json byte-identical (1.5: 1205 runs, also identical; 1.25 moved a stable rate by 1.1%).
constexpr double kDecideFarRatio = 2.0;

PlanRow evaluate(const PlanOption& opt, const PlanScenarioFactory& make, std::uint64_t seed, const PlanOptions& o) {
  PlanRow row;
  row.option = opt;
  const auto price = o.usd_per_gpu_hour.find(opt.hw);
  if (price != o.usd_per_gpu_hour.end()) row.usd_per_gpu_hour = price->second;
  try {
    const Scenario at_target = make(opt, o.target_rate_per_s, seed, 1);  // fits at all?
    row.emulated = at_target.quant_emulated;
    row.fits = true;
    SaturateOptions so = o.saturate;
    so.progress = nullptr;  // the plan reports per option
    so.split = nullptr;     // the options are what processes share
    so.decide_early = true;  // the options run in parallel, a probe's replications one by one
    so.decide_far_ratio = kDecideFarRatio;
    so.start_near_per_s = stable_rate_guess(at_target);
    const SaturateResult sat = saturate([&](double rate, std::uint64_t s) { return make(opt, rate, s, 1); }, seed, so);
    row.probes = sat.probes;
    row.stable_qps_per_replica = sat.stable_qps;
    row.saturation_batch_size = sat.saturation_batch_size;
    row.meets_slo = sat.stable_qps > 0.0;
    if (!row.meets_slo) {
      row.note = sat.unmet;  // no rate meets it: what the lowest rate probed gave
      return row;
    }
    row.replicas = static_cast<std::int64_t>(std::ceil(o.target_rate_per_s / sat.stable_qps - 1e-9));
    row.gpus = row.replicas * opt.tp;  // expert parallelism stays inside the TP group
    // The mean output length for the cost per token: the workload's property, not the GPU's, from
    // the base seed's run at the stable rate (the same requests for every option).
    row.mean_output_tokens = sat.mean_output_tokens_at_stable_qps;
    price_steps(make(opt, sat.stable_qps, seed, 1), sat, row);
    // The configuration at the target rate: what the row predicts.
    const Scenario config = make(opt, o.target_rate_per_s, seed, row.replicas);
    row.at_target = predict(config, simulate(config));
  } catch (const InputError& e) {
    row.note = e.message();  // the reason alone: the scenario file is plan's, not the user's
    return row;
  }
  if (!row.usd_per_gpu_hour) {
    const auto why = o.unpriced.find(opt.hw);
    row.note = "no price for " + opt.hw + (why == o.unpriced.end() ? " in the price list" : ": " + why->second);
  } else if (row.mean_output_tokens > 0.0) {
    row.usd_per_hour = static_cast<double>(row.gpus) * *row.usd_per_gpu_hour;
    const double tokens_per_hour = o.target_rate_per_s * row.mean_output_tokens * 3600.0;
    row.usd_per_million_output_tokens = *row.usd_per_hour / tokens_per_hour * 1e6;
  }
  return row;
}

// A row as it crosses processes (run_jobs.hpp); the option is the job's own, the band is set later.
nlohmann::json optional_number(const std::optional<double>& x) { return x ? exact_number(*x) : nlohmann::json(nullptr); }

nlohmann::json prediction_to_json(const PlanPrediction& p) {
  return {{"ttft_p50_s", exact_number(p.ttft_p50_s)},
          {"ttft_p99_s", exact_number(p.ttft_p99_s)},
          {"tpot_p50_s", exact_number(p.tpot_p50_s)},
          {"tpot_p99_s", exact_number(p.tpot_p99_s)},
          {"binding_metric", p.binding_metric},
          {"binding_class", p.binding_class},
          {"binding_value_s", exact_number(p.binding_value_s)},
          {"binding_threshold_s", exact_number(p.binding_threshold_s)},
          {"binding_headroom_frac", exact_number(p.binding_headroom_frac)},
          {"meets_slo", p.meets_slo}};
}

PlanPrediction prediction_from_json(JsonReader r) {
  constexpr double kMaxSeconds = 1e12;  // any simulated latency
  PlanPrediction p;
  p.ttft_p50_s = r.number_in("ttft_p50_s", 0.0, kMaxSeconds);
  p.ttft_p99_s = r.number_in("ttft_p99_s", 0.0, kMaxSeconds);
  p.tpot_p50_s = r.number_in("tpot_p50_s", 0.0, kMaxSeconds);
  p.tpot_p99_s = r.number_in("tpot_p99_s", 0.0, kMaxSeconds);
  p.binding_metric = r.string("binding_metric");
  p.binding_class = r.string("binding_class");
  p.binding_value_s = r.number_in("binding_value_s", 0.0, kMaxSeconds);
  p.binding_threshold_s = r.number_in("binding_threshold_s", 0.0, kMaxSeconds);
  p.binding_headroom_frac = r.number_in("binding_headroom_frac", -1e18, 1.0);
  p.meets_slo = r.boolean("meets_slo");
  r.finish();
  return p;
}

// A probe as the load page and --load-csv read it: the rate, passed / runs and the load figures.
constexpr std::array<double SaturateProbe::*, 9> kProbeFigures = {
    &SaturateProbe::rate_per_s, &SaturateProbe::ttft_p50_s, &SaturateProbe::ttft_p99_s,     &SaturateProbe::tpot_p50_s,
    &SaturateProbe::tpot_p99_s, &SaturateProbe::e2e_p50_s,  &SaturateProbe::e2e_p99_s,      &SaturateProbe::requests_per_s,
    &SaturateProbe::output_tokens_per_s};

nlohmann::json probes_to_json(const std::vector<SaturateProbe>& probes) {
  nlohmann::json out = nlohmann::json::array();
  for (const SaturateProbe& p : probes) {
    nlohmann::json j = nlohmann::json::array({p.passed, p.runs});
    for (const auto field : kProbeFigures) j.push_back(exact_number(p.*field));
    out.push_back(j);
  }
  return out;
}

std::vector<SaturateProbe> probes_from_json(const nlohmann::json& j, const JobOrigin& at) {
  if (!j.is_array()) at.fail("probes", "must be an array");
  std::vector<SaturateProbe> out;
  const KeyRange runs{0.0, 100.0, false, false}, figure{0.0, 1e15, false, false};
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string key = "probes[" + std::to_string(i) + "]";
    SaturateProbe p;
    p.passed = static_cast<int>(at.integer(at.element(j[i], 0, 2 + kProbeFigures.size(), key, "passed, runs, rate and load figures"), runs, key));
    p.runs = static_cast<int>(at.integer(j[i][1], runs, key));
    for (std::size_t f = 0; f < kProbeFigures.size(); ++f) p.*kProbeFigures[f] = at.number(j[i][2 + f], figure, key);
    out.push_back(p);
  }
  return out;
}

nlohmann::json row_to_json(const PlanRow& r) {
  return {{"fits", r.fits},
          {"meets_slo", r.meets_slo},
          {"emulated", r.emulated},
          {"note", r.note},
          {"stable_qps_per_replica", exact_number(r.stable_qps_per_replica)},
          {"saturation_batch_size", r.saturation_batch_size},
          {"replicas", r.replicas},
          {"gpus", r.gpus},
          {"mean_output_tokens", exact_number(r.mean_output_tokens)},
          {"usd_per_gpu_hour", optional_number(r.usd_per_gpu_hour)},
          {"usd_per_hour", optional_number(r.usd_per_hour)},
          {"usd_per_million_output_tokens", optional_number(r.usd_per_million_output_tokens)},
          {"at_target", r.at_target ? prediction_to_json(*r.at_target) : nlohmann::json(nullptr)},
          {"profile_kind", r.profile_kind},
          {"tp_link", r.tp_link},
          {"hbm_bandwidth_bytes_per_s", exact_number(r.hbm_bandwidth_bytes_per_s)},
          {"peak_flops_per_s", exact_number(r.peak_flops_per_s)},
          {"prefill_tokens", r.prefill_tokens},
          {"decode_batch", r.decode_batch},
          {"decode_context_tokens", r.decode_context_tokens},
          {"prefill_step_s", exact_number(r.prefill_step_s)},
          {"decode_step_s", exact_number(r.decode_step_s)},
          {"decode_comm_s", exact_number(r.decode_comm_s)},
          {"probes", probes_to_json(r.probes)}};
}

// Read back strictly: every key, its type and its range (rates as the scenario's, counts as
// plan's options can reach, dollars up to 1e15), nothing else.
PlanRow row_from_json(const nlohmann::json& j, const JobOrigin& at) {
  JsonReader r(j, at.file, at.key);
  const auto dollars = [&r](const std::string& key) -> std::optional<double> {
    if (r.has(key) && r.raw(key).is_null()) return std::nullopt;
    return r.number_in(key, 0.0, 1e15);
  };
  PlanRow row;
  row.fits = r.boolean("fits");
  row.meets_slo = r.boolean("meets_slo");
  row.emulated = r.boolean("emulated");
  row.note = r.string("note");
  row.stable_qps_per_replica = r.number_in("stable_qps_per_replica", 0.0, 1e9);
  row.saturation_batch_size = r.integer_in("saturation_batch_size", 0, 1 << 20);
  row.replicas = r.integer_in("replicas", 0, 1'000'000'000);
  row.gpus = r.integer_in("gpus", 0, 1'000'000'000'000);
  row.mean_output_tokens = r.number_in("mean_output_tokens", 0.0, 16777216.0);
  row.usd_per_gpu_hour = dollars("usd_per_gpu_hour");
  row.usd_per_hour = dollars("usd_per_hour");
  row.usd_per_million_output_tokens = dollars("usd_per_million_output_tokens");
  if (r.raw("at_target").is_null()) {
    row.at_target = std::nullopt;
  } else {
    row.at_target = prediction_from_json(r.object("at_target"));
  }
  row.profile_kind = r.string("profile_kind");
  row.tp_link = r.string("tp_link");
  row.hbm_bandwidth_bytes_per_s = r.number_in("hbm_bandwidth_bytes_per_s", 0.0, 1e15);  // the profile's range
  row.peak_flops_per_s = r.number_in("peak_flops_per_s", 0.0, 1e18);
  row.prefill_tokens = r.integer_in("prefill_tokens", 0, 16777216);
  row.decode_batch = r.integer_in("decode_batch", 0, 1 << 20);
  row.decode_context_tokens = r.integer_in("decode_context_tokens", 0, 16777216);
  row.prefill_step_s = r.number_in("prefill_step_s", 0.0, 1e12);
  row.decode_step_s = r.number_in("decode_step_s", 0.0, 1e12);
  row.decode_comm_s = r.number_in("decode_comm_s", 0.0, 1e12);
  row.probes = probes_from_json(r.raw("probes"), at);
  r.finish();
  return row;
}

// Sort key: meeting the SLO and priced, cheapest first; then meeting without a price; then
// missing the SLO; then not fitting.
int rank(const PlanRow& r) {
  if (r.meets_slo) return r.usd_per_million_output_tokens ? 0 : 1;
  return r.fits ? 2 : 3;
}

// Rows of different GPUs at the same precision and parallel sizes that both meet the SLO.
bool peers(const PlanRow& a, const PlanRow& b) {
  return &a != &b && a.option.quant == b.option.quant && a.option.tp == b.option.tp && a.option.ep == b.option.ep &&
         a.option.hw != b.option.hw && a.meets_slo && b.meets_slo;
}

// "sustains 25.9 req/s, less than a100-40gb-pcie's 27.4, though ...": `a` has at least b's
// datasheet and sustains less; what decides it, as each profile prices it: efficiency fits, the TP
// link, and a prefill and a decode step (each at its own mean batch: the batch a rate runs at is
// part of the answer).
std::string inversion_text(const PlanRow& a, const PlanRow& b) {
  const auto rate = [](double per_s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", per_s);
    return std::string(buf);
  };
  const auto decode = [](const PlanRow& r) {
    return format_duration(r.decode_step_s) + " (" + std::to_string(r.decode_batch) + " sequences at " +
           std::to_string(r.decode_context_tokens) + " tokens" +
           (r.decode_comm_s > 0.0 ? ", " + format_duration(r.decode_comm_s) + " of it collectives" : std::string()) + ")";
  };
  const std::string links = a.tp_link.empty() ? "" : "; TP over " + a.tp_link + " here, " + b.tp_link + " there";
  return "sustains " + rate(a.stable_qps_per_replica) + " req/s, less than " + b.option.hw + "'s " +
         rate(b.stable_qps_per_replica) + ", though its datasheet HBM bandwidth and peak FLOP/s are at least as high: " +
         "the profiles decide (efficiency fits " + a.profile_kind + " here, " + b.profile_kind + " there" + links + "): a prefill of " +
         std::to_string(a.prefill_tokens) + " tokens takes " + format_duration(a.prefill_step_s) + " here and " +
         format_duration(b.prefill_step_s) + " there, a decode step of the mean batch " + decode(a) + " and " + decode(b) +
         " (servesim roofline --hw NAME --tp N shows each op)";
}

// Ties (the search cannot order two rates) and inversions (a GPU with at least another's datasheet
// sustains less, beyond the tolerance), between peers.
void compare_peers(std::vector<PlanRow>& rows, double rel_tolerance) {
  for (PlanRow& a : rows) {
    const PlanRow* most = nullptr;  // the peer it trails the most
    for (const PlanRow& b : rows) {
      if (!peers(a, b)) continue;
      if (stable_rates_tied(a.stable_qps_per_replica, b.stable_qps_per_replica, rel_tolerance)) {
        a.tied_with.push_back(b.option.hw);
      } else if (a.stable_qps_per_replica < b.stable_qps_per_replica && a.hbm_bandwidth_bytes_per_s >= b.hbm_bandwidth_bytes_per_s &&
                 a.peak_flops_per_s >= b.peak_flops_per_s && (!most || b.stable_qps_per_replica > most->stable_qps_per_replica)) {
        most = &b;
      }
    }
    if (most) a.datasheet_inversion = inversion_text(a, *most);
  }
}

}  // namespace

PlanResult plan(const std::vector<PlanOption>& options, const PlanScenarioFactory& make, std::uint64_t seed, const PlanOptions& o) {
  PlanResult out;
  const JobCodec<PlanRow> codec = {row_to_json, row_from_json};
  JobHooks hooks;
  hooks.progress = o.progress;
  out.rows = run_jobs<PlanRow>(
      options.size(), [&](std::size_t i) { return evaluate(options[i], make, seed, o); }, true, o.split, codec, hooks);
  for (std::size_t i = 0; i < options.size(); ++i) out.rows[i].option = options[i];
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const PlanRow& a, const PlanRow& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (rank(a) != 0) return false;
    if (*a.usd_per_million_output_tokens != *b.usd_per_million_output_tokens) {
      return *a.usd_per_million_output_tokens < *b.usd_per_million_output_tokens;
    }
    // Same cost: the one with more headroom (rate the replicas sustain together) first.
    return static_cast<double>(a.replicas) * a.stable_qps_per_replica > static_cast<double>(b.replicas) * b.stable_qps_per_replica;
  });
  if (!out.rows.empty() && rank(out.rows.front()) == 0) out.cheapest = 0;
  compare_peers(out.rows, o.saturate.rel_tolerance);
  return out;
}

bool stable_rates_tied(double a, double b, double rel_tolerance) {
  return a > 0.0 && b > 0.0 && std::max(a, b) <= std::min(a, b) * (1.0 + rel_tolerance);
}

namespace {
void set_prediction_cells(Table& t, std::size_t i, const PlanPrediction& p) {
  t.set(i, "ttft_p50_s", p.ttft_p50_s);
  t.set(i, "ttft_p99_s", p.ttft_p99_s);
  t.set(i, "tpot_p50_s", p.tpot_p50_s);
  t.set(i, "tpot_p99_s", p.tpot_p99_s);
  if (!p.binding_metric.empty()) {
    t.set(i, "binding_target", p.binding_metric);
    if (!p.binding_class.empty()) t.set(i, "binding_class", p.binding_class);
    t.set(i, "binding_value_s", p.binding_value_s);
    t.set(i, "binding_threshold_s", p.binding_threshold_s);
    t.set(i, "binding_headroom_frac", p.binding_headroom_frac);
  }
  t.set(i, "meets_slo_at_target", p.meets_slo);
}
void set_step_cells(Table& t, std::size_t i, const PlanRow& row) {
  t.set(i, "profile_kind", row.profile_kind);
  t.set(i, "hbm_bandwidth_bytes_per_s", row.hbm_bandwidth_bytes_per_s);
  t.set(i, "peak_flops_per_s", row.peak_flops_per_s);
  t.set(i, "prefill_tokens", row.prefill_tokens);
  t.set(i, "prefill_step_s", row.prefill_step_s);
  t.set(i, "decode_batch", row.decode_batch);
  t.set(i, "decode_context_tokens", row.decode_context_tokens);
  t.set(i, "decode_step_s", row.decode_step_s);
  t.set(i, "decode_comm_s", row.decode_comm_s);
  if (!row.tp_link.empty()) t.set(i, "tp_link", row.tp_link);
  if (!row.datasheet_inversion.empty()) t.set(i, "datasheet_inversion", row.datasheet_inversion);
}
}  // namespace

Table plan_table(const PlanResult& r) {
  Table t;
  // The ep, emulated and binding_class columns only when some option uses expert parallelism or a
  // format its GPU lacks, or the workload has several classes: other plans keep their columns.
  bool any_ep = false, any_emulated = false, any_class = false;
  for (const PlanRow& row : r.rows) {
    any_ep = any_ep || row.option.ep > 1;
    any_emulated = any_emulated || row.emulated;
    any_class = any_class || (row.at_target && !row.at_target->binding_class.empty());
  }
  // Columns in reading order, whatever the first row holds; the note last.
  for (const char* c : {"cheapest", "hw", "quant", "emulated", "tp", "ep", "engine", "fits", "meets_slo", "replicas", "gpus",
                        "usd_per_hour", "usd_per_million_output_tokens", "stable_qps_per_replica", "tied_with", "saturation_batch_size",
                        "mean_output_tokens", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "binding_target",
                        "binding_class", "binding_value_s", "binding_threshold_s", "binding_headroom_frac",
                        "meets_slo_at_target", "profile_kind", "hbm_bandwidth_bytes_per_s", "peak_flops_per_s", "prefill_tokens",
                        "prefill_step_s", "decode_batch", "decode_context_tokens", "decode_step_s", "decode_comm_s", "tp_link", "datasheet_inversion",
                        "usd_per_gpu_hour", "price_basis", "price_providers", "error_band_median", "error_band_worst",
                        "error_band_basis", "note"}) {
    const std::string name = c;
    if ((any_ep || name != "ep") && (any_emulated || name != "emulated") && (any_class || name != "binding_class")) t.column(c);
  }
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const PlanRow& row = r.rows[i];
    t.set(i, "cheapest", r.cheapest == i);
    t.set(i, "hw", row.option.hw);
    t.set(i, "quant", row.option.quant);
    if (any_emulated) t.set(i, "emulated", row.emulated);
    t.set(i, "tp", static_cast<std::int64_t>(row.option.tp));
    if (any_ep) t.set(i, "ep", static_cast<std::int64_t>(row.option.ep));
    t.set(i, "engine", row.engine);
    t.set(i, "fits", row.fits);
    t.set(i, "meets_slo", row.meets_slo);
    if (row.meets_slo) {
      t.set(i, "replicas", row.replicas);
      t.set(i, "gpus", row.gpus);
    }
    if (row.usd_per_hour) t.set(i, "usd_per_hour", *row.usd_per_hour);
    if (row.usd_per_million_output_tokens) t.set(i, "usd_per_million_output_tokens", *row.usd_per_million_output_tokens);
    if (row.fits) {
      t.set(i, "stable_qps_per_replica", row.stable_qps_per_replica);
      t.set(i, "saturation_batch_size", row.saturation_batch_size);
    }
    if (row.meets_slo) t.set(i, "mean_output_tokens", row.mean_output_tokens);
    if (row.at_target) set_prediction_cells(t, i, *row.at_target);
    std::string tied;
    for (const std::string& hw : row.tied_with) tied += (tied.empty() ? "" : ",") + hw;
    if (!tied.empty()) t.set(i, "tied_with", tied);
    if (row.meets_slo) set_step_cells(t, i, row);
    if (row.usd_per_gpu_hour) t.set(i, "usd_per_gpu_hour", *row.usd_per_gpu_hour);
    if (!row.price_basis.empty()) t.set(i, "price_basis", row.price_basis);
    if (!row.price_providers.empty()) t.set(i, "price_providers", row.price_providers);
    // One band per SLO metric: its metric, n, median and worst |error|, and what it rests on.
    std::string text;
    for (const ErrorBand& b : row.bands.bands) text += (text.empty() ? "" : "; ") + describe_band(b);
    for (const std::string& m : row.bands.missing) text += (text.empty() ? "" : "; ") + missing_band_text(row.bands.feature, m) + " not validated";
    if (text.empty()) {
      text = row.bands.feature.empty() ? "not validated on this GPU and engine"
                                       : missing_band_text(row.bands.feature, "") + " not validated on this GPU and engine";
    }
    t.set(i, "error_bands", text);
    if (!row.bands.bands.empty()) {
      const ErrorBand& b = row.bands.bands.front();
      t.set(i, "error_band_metric", b.phase);
      t.set(i, "error_band_n", static_cast<std::int64_t>(b.n));
      t.set(i, "error_band_median", b.median_abs);
      t.set(i, "error_band_worst", b.worst_abs);
      t.set(i, "error_band_basis", b.engine + " on " + b.hw + ": " + b.source);
    }
    t.set(i, "note", row.note);
  }
  return t;
}

}  // namespace servesim
