// `servesim plan --model M --rate R --slo ... [--hw all|a,b] [--quant bf16,fp8,w4a16-awq,...]
//  [--tp 1,2,4,8|auto] [--engine NAME] [--workload SCENARIO.json] [--prices FILE] [--price GPU=USD,...]
//  [--own [--purchase GPU=USD,...] [--own-years Y] [--own-utilization U] [--own-usd-per-kwh P] [--own-pue X]
//  [--own-server-usd S]] [--json] [--csv FILE] [--md FILE] [--html FILE] [--load-csv FILE]
//  [--mpi | --shard K/N]`:
// for each GPU, precision and tensor-parallel size, whether the model fits, the replicas and GPUs
// needed for rate R under the SLO and the cost. The text answer's first line names the cheapest
// configuration that meets the SLO; then the assumptions (workload, SLO, prices) and the table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "sim/analysis/plan.hpp"
#include "sim/analysis/work_estimate.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/distribute.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/plan_prices.hpp"
#include "sim/cli/progress.hpp"
#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/table_io.hpp"
#include "sim/model/quant.hpp"
#include "sim/serve/memory_plan.hpp"

namespace servesim::cli {

namespace {
const auto split = split_commas;

// --quant names: the 16-bit dtypes and every scheme; a typo exits 2 with the close ones.
void check_quant(const std::string& q) {
  if (q == "bf16" || q == "fp16" || parse_quant(q)) return;
  const std::vector<std::string> known = {"bf16", "fp16", "fp8", "int8", "w8a16", "w4a16-gptq", "w4a16-awq", "nvfp4", "fp4", "mxfp4"};
  std::string hint = did_you_mean(q, known);
  if (hint.empty()) hint = std::string(" (bf16, fp16, ") + kQuantNames + ")";
  throw InputError("servesim plan", "--quant", "unknown precision '" + q + "'" + hint);
}

std::string fmt_rate(double per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", per_s);
  return buf;
}

std::string money(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, usd >= 100.0 ? "$%.0f" : "$%.2f", usd);
  return buf;
}

std::string config_name(const PlanRow& r) {
  std::string s = std::to_string(r.gpus) + " x " + r.option.hw + " (" + r.option.quant + ", tp " + std::to_string(r.option.tp);
  if (r.option.ep > 1) s += ", ep " + std::to_string(r.option.ep);
  return s + ", " + std::to_string(r.replicas) + (r.replicas == 1 ? " replica)" : " replicas)");
}

// The pairs the bands file covers (its plain bands: the attention-DP ones have their own line),
// for the legend under the table.
std::string validated_pairs(const std::vector<ErrorBand>& bands) {
  std::set<std::string> pairs;
  for (const ErrorBand& b : bands) {
    if (b.feature.empty()) pairs.insert(b.hw + "/" + b.engine);
  }
  std::string out;
  for (const auto& pair : pairs) out += (out.empty() ? "" : ", ") + pair;
  return out;
}

// Milliseconds with three significant digits at most ("0.85", "41.2", "1710").
std::string ms_text(double seconds) {
  const double ms = seconds * 1e3;
  char buf[32];
  std::snprintf(buf, sizeof buf, ms >= 100.0 ? "%.0f" : ms >= 10.0 ? "%.1f" : "%.2f", ms);
  return buf;
}

// "TPOT p99 41%": the binding target at the SLO percentile and its headroom (its class first
// when the workload has several).
std::string binding_text(const PlanPrediction& p, double percentile) {
  if (p.binding_metric.empty()) return "-";
  const std::string metric = p.binding_metric == "ttft_s" ? "TTFT" : p.binding_metric == "tpot_s" ? "TPOT" : "E2E";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%s p%g %.0f%%", p.binding_class.empty() ? "" : (p.binding_class + " ").c_str(), metric.c_str(),
                100.0 * percentile, 100.0 * p.binding_headroom_frac);
  return buf;
}

// --own's inputs; defaults from https://www.aiinframap.com/tools/chips/h100-vs-h200-vs-b200-tco (electricity
// $0.08/kWh, PUE 1.2 "typical modern AI-DC", 70% utilization) and a 3-year depreciation cycle
// (https://www.fp4.dev/silicon/h100-h200-b200-tco/); no server share by default (said in the header).
const NumberFlag kOwnYears{"own-years", "years the owned GPUs are amortized over", {0, 100, true, false}, "3"};
const NumberFlag kOwnUtilization{"own-utilization", "share of the hours the owned GPUs serve", {0, 1, true, false}, "0.7"};
const NumberFlag kOwnUsdPerKwh{"own-usd-per-kwh", "electricity price, USD per kWh", {0, 100, false, false}, "0.08"};
const NumberFlag kOwnPue{"own-pue", "facility power over IT power (PUE)", {1, 10, false, false}, "1.2"};
const NumberFlag kOwnServerUsd{"own-server-usd", "the server's cost per GPU beyond the GPU (CPU, memory, chassis, network), USD",
                               {0, 1e9, false, false}, "0"};

// The price of each GPU a plan tries, and what the header says about them.
struct PlanCosts {
  bool own = false;
  OwnInputs inputs;
  std::string list_path, read_on;
  std::map<std::string, GpuPrice> gpus;  // by --hw name
};

PlanCosts plan_costs(const cxxopts::ParseResult& p, const std::vector<std::string>& hws) {
  PlanCosts c;
  const std::string path =
      p.count("prices") ? p["prices"].as<std::string>() : resolve_data_ref("hwprofiles", "prices", "servesim plan", "--prices");
  const PriceList list = load_price_list(path);
  c.list_path = p.count("prices") ? path : "hwprofiles/prices.json";
  c.read_on = list.read_on;
  c.own = p.count("own") > 0;
  const std::map<std::string, double> overrides = p.count("price") ? parse_gpu_prices(p["price"].as<std::string>(), "--price")
                                                                    : std::map<std::string, double>{};
  const std::map<std::string, double> purchases =
      p.count("purchase") ? parse_gpu_prices(p["purchase"].as<std::string>(), "--purchase") : std::map<std::string, double>{};
  if (c.own && !overrides.empty()) throw InputError("servesim plan", "--price", "prices renting; with --own give --purchase");
  if (!c.own && !purchases.empty()) throw InputError("servesim plan", "--purchase", "prices owning: give --own too");
  for (const auto* m : {&overrides, &purchases}) {
    for (const auto& [gpu, usd] : *m) {
      if (std::find(hws.begin(), hws.end(), gpu) == hws.end()) {
        throw InputError("servesim plan", m == &overrides ? "--price" : "--purchase", gpu + " is not among the GPUs tried (--hw)");
      }
    }
  }
  if (!c.own) {
    for (const NumberFlag* f : {&kOwnYears, &kOwnUtilization, &kOwnUsdPerKwh, &kOwnPue, &kOwnServerUsd}) {
      if (p.count(f->name)) throw InputError("servesim plan", "--" + f->name, "prices owning: give --own too");
    }
  }
  c.inputs = {kOwnYears.read(p, "servesim plan"), kOwnUtilization.read(p, "servesim plan"), kOwnUsdPerKwh.read(p, "servesim plan"),
              kOwnPue.read(p, "servesim plan"), kOwnServerUsd.read(p, "servesim plan")};
  for (const std::string& hw : hws) c.gpus[hw] = c.own ? own_price(hw, list, purchases, c.inputs) : rent_price(hw, list, overrides);
  return c;
}

// The header's cost lines: the basis, each GPU's price and what it rests on, the unpriced.
void print_costs(const PlanCosts& c, double rate) {
  if (c.own) {
    std::printf("cost:      owning: per GPU (purchase + $%.0f server share) / (%g years x 8760 h) + W / 1000 x $%g/kWh x PUE %g, "
                "over %g%% utilisation (--own-years, --own-server-usd, --own-usd-per-kwh, --own-pue, --own-utilization; "
                "--purchase GPU=USD); per million output tokens at %g req/s\n",
                c.inputs.server_usd_per_gpu, c.inputs.years, c.inputs.usd_per_kwh, c.inputs.pue, 100.0 * c.inputs.utilization, rate);
  } else {
    std::printf("cost:      GPUs x price per GPU-hour: per GPU the median of named providers' on-demand list prices (%s, read %s; "
                "--price GPU=USD to use yours, --own to buy); per million output tokens at %g req/s\n",
                c.list_path.c_str(), c.read_on.c_str(), rate);
  }
  std::string priced, unpriced;
  for (const auto& [gpu, price] : c.gpus) {
    if (price.usd_per_gpu_hour) priced += (priced.empty() ? "" : "; ") + price.detail;
    if (!price.usd_per_gpu_hour) unpriced += (unpriced.empty() ? "" : "; ") + gpu + " (" + price.unpriced + ")";
  }
  std::printf("prices:    %s\n", priced.empty() ? "none" : priced.c_str());
  if (!unpriced.empty()) std::printf("unpriced:  %s\n", unpriced.c_str());
}

// The assumptions above the table: workload, engine, SLO, search, cost basis, what each row predicts.
void print_assumptions(const Scenario& workload, double rate, const std::string& workload_name, const SaturateOptions& search,
                       const PlanCosts& costs) {
  const RequestClass& c = workload.workload.classes.front();
  std::printf("workload:  %s arrivals; prompts %s; outputs %s  [%s; --workload to change]\n",
              describe_arrival(workload.workload.arrival).c_str(), describe_lengths(c.prompt_tokens).c_str(),
              describe_lengths(c.output_tokens).c_str(), workload_name.c_str());
  std::printf("engine:    %s (%s) [--engine NAME to change]\n", workload.engine.profile.name.c_str(),
              workload.engine.profile.display_name.c_str());
  std::printf("slo:       %s\n", describe_slo(c.slo).c_str());
  std::printf("search:    one replica's highest rate meeting the SLO, to %g%% (--tolerance), %d seeds per probed rate "
              "(--replications); rates of the same precision and TP this close are tied (=)\n",
              100.0 * search.rel_tolerance, search.replications);
  print_costs(costs, rate);
  std::printf("latency:   each row's replicas simulated at %g req/s: TTFT and TPOT p50/p99 in ms; binding = the SLO target with "
              "the least headroom (1 - value / target)\n\n", rate);
}

// One table row for an option that fits.
void set_row_cells(Table& t, std::size_t n, const PlanRow& row, bool cheapest, bool any_ep, double percentile) {
  t.set(n, " ", std::string(cheapest ? "->" : ""));
  t.set(n, "gpu", row.option.hw);
  t.set(n, "quant", row.option.quant + (row.emulated ? "*" : ""));
  t.set(n, "tp", static_cast<std::int64_t>(row.option.tp));
  if (any_ep) t.set(n, "ep", static_cast<std::int64_t>(row.option.ep));
  t.set(n, "replicas", row.meets_slo ? Cell(row.replicas) : Cell(std::string("-")));
  t.set(n, "gpus", row.meets_slo ? Cell(row.gpus) : Cell(std::string("-")));
  t.set(n, "$/hour", row.usd_per_hour ? Cell(money(*row.usd_per_hour)) : Cell(std::string("-")));
  t.set(n, "$/M out tok", row.usd_per_million_output_tokens ? Cell(money(*row.usd_per_million_output_tokens)) : Cell(std::string("-")));
  t.set(n, "price basis", row.price_basis.empty() ? std::string("-") : row.price_basis);
  char qps[32];
  std::snprintf(qps, sizeof qps, "%.3g%s", row.stable_qps_per_replica, row.tied_with.empty() ? "" : " =");
  t.set(n, "req/s per replica", std::string(qps));
  t.set(n, "slo", std::string(row.meets_slo ? "meets" : "misses"));
  const PlanPrediction* p = row.at_target ? &*row.at_target : nullptr;
  t.set(n, "TTFT p50/p99", p ? ms_text(p->ttft_p50_s) + "/" + ms_text(p->ttft_p99_s) : std::string("-"));
  t.set(n, "TPOT p50/p99", p ? ms_text(p->tpot_p50_s) + "/" + ms_text(p->tpot_p99_s) : std::string("-"));
  t.set(n, "binding (headroom)", p ? binding_text(*p, percentile) : std::string("-"));
  std::string band;
  for (const ErrorBand& b : row.bands.bands) band += (band.empty() ? "" : ", ") + describe_band(b);
  for (const std::string& m : row.bands.missing) band += (band.empty() ? "" : ", ") + missing_band_text(row.bands.feature, m) + " ?";
  if (band.empty()) band = row.bands.feature.empty() ? "?" : missing_band_text(row.bands.feature, "") + " not validated";
  t.set(n, "error (metric, n)", band);
}

// A row whose replicas, sized from one replica's stable rate, still miss the SLO together at the
// target rate (the router's split is not the search's single stream): said, not hidden.
std::string missed_at_target(const PlanRow& row, double rate) {
  const PlanPrediction& p = *row.at_target;
  char buf[192];
  std::snprintf(buf, sizeof buf, "its %lld replicas miss the SLO in the run at %g req/s (%s %s over %s)",
                static_cast<long long>(row.replicas), rate, p.binding_metric.c_str(), format_duration(p.binding_value_s).c_str(),
                format_duration(p.binding_threshold_s).c_str());
  return buf;
}

// Under the table, the pairs marked = : "a100-40gb-pcie = a100-80gb-sxm (bf16 tp 1: 13.4, 13.4 req/s)".
void print_ties(const PlanResult& r, double rel_tolerance) {
  std::string pairs;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    for (std::size_t j = i + 1; j < r.rows.size(); ++j) {
      const PlanRow &a = r.rows[i], &b = r.rows[j];
      if (std::find(a.tied_with.begin(), a.tied_with.end(), b.option.hw) == a.tied_with.end() || a.option.quant != b.option.quant ||
          a.option.tp != b.option.tp || a.option.ep != b.option.ep) {
        continue;
      }
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s = %s (%s tp %d: %.3g, %.3g req/s)", a.option.hw.c_str(), b.option.hw.c_str(),
                    a.option.quant.c_str(), a.option.tp, a.stable_qps_per_replica, b.stable_qps_per_replica);
      pairs += (pairs.empty() ? "" : "; ") + std::string(buf);
    }
  }
  if (pairs.empty()) return;
  std::printf("= tied: stable rates within the search tolerance (%g%%), which the search cannot order; ranked by cost: %s\n",
              100.0 * rel_tolerance, pairs.c_str());
}

// Under the legend when some option runs attention DP: what its bands are, and every one there is.
void print_attention_dp_legend(const PlanResult& r, const std::vector<ErrorBand>& bands) {
  if (std::none_of(r.rows.begin(), r.rows.end(), [](const PlanRow& row) { return row.bands.feature == kAttentionDpFeature; })) return;
  std::string known;
  for (const ErrorBand& b : bands) {
    if (b.feature != kAttentionDpFeature) continue;
    ErrorBand plain = b;  // the line says attention DP and development once
    plain.feature.clear();
    known += (known.empty() ? "" : "; ") + b.hw + "/" + b.engine + " " + describe_band(plain);
  }
  std::printf("attention DP (parallel.enable_attention_dp at TP > 1): those options' bands are over the published attention-DP rows "
              "alone, development data (modelling choices saw them), never the bands above; \"attention DP ... ?\" or \"not "
              "validated\" = no such measurement of that GPU and engine. Attention DP validated: %s\n",
              known.empty() ? "none" : known.c_str());
}

// The answer, the assumptions, the options that fit (cheapest first, the answer marked) and,
// below the table, why the others were left out.
void print_plan(const PlanResult& r, const Scenario& workload, double rate, const std::string& workload_name,
                const SaturateOptions& search, const std::vector<ErrorBand>& bands, const PlanCosts& costs) {
  if (r.cheapest) {
    const PlanRow& best = r.rows[*r.cheapest];
    std::printf("cheapest meeting the SLO: %s at %s/hour, %s per million output tokens\n", config_name(best).c_str(),
                money(*best.usd_per_hour).c_str(), money(*best.usd_per_million_output_tokens).c_str());
  } else {
    std::printf("no configuration tried meets the SLO at %g req/s with a known price (see the notes below)\n", rate);
  }
  print_assumptions(workload, rate, workload_name, search, costs);
  const double percentile = workload.workload.classes.front().slo.percentile;
  Table t;
  std::vector<std::string> notes, why;
  bool any_ep = false, any_emulated = false;
  for (const PlanRow& row : r.rows) any_ep = any_ep || row.option.ep > 1;
  std::size_t n = 0;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const PlanRow& row = r.rows[i];
    std::string label = row.option.hw + " " + row.option.quant + " tp " + std::to_string(row.option.tp) +
                        (row.option.ep > 1 ? " ep " + std::to_string(row.option.ep) : "");
    if (!row.fits) {
      notes.push_back(label + ": " + row.note);
      continue;
    }
    set_row_cells(t, n++, row, r.cheapest == i, any_ep, percentile);
    any_emulated = any_emulated || row.emulated;
    if (!row.note.empty()) notes.push_back(label + ": " + row.note);
    if (row.at_target && !row.at_target->meets_slo) notes.push_back(label + ": " + missed_at_target(row, rate));
    if (!row.datasheet_inversion.empty()) why.push_back(label + ": " + row.datasheet_inversion);
  }
  if (n > 0) write_text(std::cout, t);
  if (any_emulated) std::printf("* emulated: the GPU lacks the format; weights are converted to 16 bits at run time\n");
  print_ties(r, search.rel_tolerance);
  if (!why.empty()) std::printf("\nfaster on paper, slower here:\n");
  for (const auto& line : why) std::printf("  %s\n", line.c_str());
  // The band is the median |error| of servesim against measurements of that GPU and engine it
  // was not fitted to; "?" says no such measurement exists, which is not the same as accurate.
  std::printf("\nerror: servesim's median |error| on each SLO metric, over n measurements of that GPU and engine (docs/validation.md; "
              "fewer than 5: few rows); ? = not validated. Validated: %s (--engine NAME)\n",
              bands.empty() ? "none" : validated_pairs(bands).c_str());
  print_attention_dp_legend(r, bands);
  if (!notes.empty()) {
    std::printf("%snot shown or incomplete:\n", n > 0 ? "\n" : "");
    for (const auto& note : notes) std::printf("  %s\n", note.c_str());
  }
}
// --engine NAME: engine.profile=NAME for every option, the same as --set engine.profile=NAME (a
// typo exits 2 with the close names before anything runs; giving both is refused, not ordered).
void apply_engine_flag(const cxxopts::ParseResult& p, ScenarioSource& src) {
  if (!p.count("engine")) return;
  const std::string name = p["engine"].as<std::string>();
  resolve_data_ref("scenarios/engines", name, "servesim plan", "--engine");
  for (const std::string& o : src.overrides) {
    if (o.rfind("engine.profile=", 0) == 0) {
      throw InputError("servesim plan", "--engine", "also set by --set " + o + ": give one of them");
    }
  }
  src.overrides.push_back("engine.profile=" + nlohmann::json(name).dump());
}

// The scenario key for an arrival rate, printed so that it reads back as the same double.
std::string rate_assignment(double rate_per_s) {
  char key[80];
  std::snprintf(key, sizeof key, "workload.arrival.rate_per_s=%.17g", rate_per_s);
  return key;
}

// The rate is the scenario's workload.arrival.rate_per_s: the same range, named as the flag (built
// on first use: the key registry is not read during static initialisation).
const NumberFlag& rate_flag() {
  static const NumberFlag f{"rate", "target arrival rate, req/s", find_scenario_key("workload.arrival.rate_per_s")->range, ""};
  return f;
}
const IntegerFlag kReplications{"replications", "seeds per probed rate", {1, 100}, "3"};
const NumberFlag kTolerance{"tolerance", "saturate's relative tolerance", {0, 1, true, false}, "0.02"};

cxxopts::Options plan_flags() {
  cxxopts::Options opts("servesim plan", "The cheapest GPUs to serve a rate under an SLO: GPUs, replicas and cost per option");
  opts.add_options()("model", "model name or path", cxxopts::value<std::string>())(
      "hw", "hardware profiles: all or a,b,...", cxxopts::value<std::string>()->default_value("all"))(
      "quant", "precisions to try: bf16, fp16, fp8, int8, w8a16, w4a16-gptq, w4a16-awq, nvfp4 (or fp4), mxfp4 (comma-separated)",
      cxxopts::value<std::string>()->default_value("bf16"))(
      "tp", "tensor-parallel sizes to try (1, 2, 4, 8), or auto: only the smallest that fits each GPU and precision",
      cxxopts::value<std::string>()->default_value("1,2,4,8"))(
      "ep", "expert-parallel sizes to try for mixture-of-experts models (1, 2, 4, 8; each with the TP sizes it divides), "
            "or tp: expert parallelism over the whole TP group",
      cxxopts::value<std::string>()->default_value("1"))(
      "workload", "scenario whose workload and engine settings are used", cxxopts::value<std::string>()->default_value("plan-chat"))(
      "engine", "engine profile (scenarios/engines/NAME.json) or path: engine.profile of every option (default: the workload's, "
                "the default engine unless it names one)",
      cxxopts::value<std::string>())(
      "prices", "price list (default: bundled hwprofiles/prices.json)", cxxopts::value<std::string>())(
      "price", "your price per GPU-hour for some GPUs, overriding the list: GPU=USD[,GPU=USD...]", cxxopts::value<std::string>())(
      "own", "price owning the GPUs instead of renting them: purchase and server share over --own-years, power, utilisation")(
      "purchase", "purchase price per GPU for --own, overriding the list: GPU=USD[,GPU=USD...]", cxxopts::value<std::string>())(
      "html", "also write a page of cost against latency (the Pareto front marked) and each option's TTFT and TPOT p50/p99 "
              "against the rates its search probed, with the SLO lines, to this file", cxxopts::value<std::string>())(
      "no-work-limit", kNoWorkLimitHelp)("h,help", "show help");
  add_load_csv_flag(opts);
  rate_flag().add(opts);
  kReplications.add(opts);
  kTolerance.add(opts);
  for (const NumberFlag* f : {&kOwnYears, &kOwnUtilization, &kOwnUsdPerKwh, &kOwnPue, &kOwnServerUsd}) f->add(opts);
  add_scenario_flags(opts);
  add_output_flags(opts);
  add_distribution_flags(opts, true);
  return opts;
}

// --tp and --ep: GPU counts of 1, 2, 4 or 8 (`word` is the flag's other accepted value).
std::vector<int> parallel_sizes(const std::vector<std::string>& sizes, const std::string& flag, const std::string& word) {
  std::vector<int> out;
  for (const auto& s : sizes) {
    if (s != "1" && s != "2" && s != "4" && s != "8") throw InputError("servesim plan", flag, "sizes are 1, 2, 4 or 8 (or " + word + "), got '" + s + "'");
    out.push_back(std::stoi(s));
  }
  return out;
}

// The tensor- and expert-parallel sizes to try.
struct ParallelChoice {
  bool auto_tp = false;  // only the smallest TP that fits each GPU and precision
  std::vector<int> tps;
  bool ep_is_tp = false;  // expert parallelism over the whole TP group
  std::vector<int> eps;

  // The expert-parallel sizes that go with a TP size: those that divide it.
  std::vector<int> eps_for(int tp) const {
    if (ep_is_tp) return {tp};
    std::vector<int> out;
    for (int e : eps) {
      if (tp % e == 0) out.push_back(e);
    }
    return out;
  }
};

ParallelChoice parallel_choice(const cxxopts::ParseResult& p) {
  ParallelChoice c;
  c.auto_tp = p["tp"].as<std::string>() == "auto";
  c.tps = parallel_sizes(c.auto_tp ? std::vector<std::string>{"1", "2", "4", "8"} : split(p["tp"].as<std::string>()), "--tp", "auto");
  c.ep_is_tp = p["ep"].as<std::string>() == "tp";
  c.eps = parallel_sizes(c.ep_is_tp ? std::vector<std::string>{} : split(p["ep"].as<std::string>()), "--ep", "tp");
  return c;
}

// `replicas` replicas of `opt` at `rate_per_s`: the workload scenario with the option's keys set.
// Loading checks the dtype, the TP split of the heads and (plan_memory) that the model fits.
Scenario option_scenario(const ScenarioSource& src, const std::string& model, const PlanOption& opt, double rate_per_s,
                         std::uint64_t seed, std::int64_t replicas) {
  std::vector<std::string> keys = {"model=\"" + model + "\"", "hardware=\"" + opt.hw + "\"", rate_assignment(rate_per_s),
                                   "parallel.tensor_parallel_size=" + std::to_string(opt.tp)};
  if (opt.ep > 1) keys.push_back("parallel.expert_parallel_size=" + std::to_string(opt.ep));
  if (replicas > 1) keys.push_back("parallel.data_parallel_size=" + std::to_string(replicas));
  if (opt.quant == "bf16" || opt.quant == "fp16") {
    keys.push_back("dtype=\"" + opt.quant + "\"");
  } else {
    keys.push_back("quantization.method=\"" + opt.quant + "\"");
  }
  Scenario s = src.load(keys, static_cast<long long>(seed));
  plan_memory(s);  // throws InputError when the model does not fit
  return s;
}

// Every (GPU, precision, TP, EP) to plan. With --tp auto, the smallest TP that loads; when none
// does, TP 1 is listed and plan reports why it does not fit.
std::vector<PlanOption> plan_options(const std::vector<std::string>& hws, const std::vector<std::string>& quants,
                                     const ParallelChoice& sizes, const PlanScenarioFactory& make, double rate_per_s) {
  std::vector<PlanOption> options;
  for (const auto& hw : hws) {
    for (const auto& q : quants) {
      if (!sizes.auto_tp) {
        for (int tp : sizes.tps) {
          for (int ep : sizes.eps_for(tp)) options.push_back({hw, q, tp, ep});
        }
        continue;
      }
      PlanOption chosen{hw, q, 1};
      for (int tp : sizes.tps) {
        try {
          make({hw, q, tp}, rate_per_s, 0, 1);
          chosen.tp = tp;
          break;
        } catch (const InputError&) {
        }
      }
      for (int ep : sizes.eps_for(chosen.tp)) options.push_back({hw, q, chosen.tp, ep});
    }
  }
  return options;
}

// Every option runs a search (expected_runs: its expected probes, each deciding its majority of
// R replications) and one run of its replicas at the target rate (as one run: the replicas share
// the workload's requests); the options run in parallel, one probe each.
// With --mpi or --shard, the options of the busiest process (the same on every rank).
void check_plan_work(const Scenario& assumed, std::size_t options, const Distribution& dist, const SaturateOptions& s) {
  const auto reps = static_cast<std::size_t>(s.replications);
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t here = dist.split ? dist.split->busiest_share(options) : options;
  SaturateOptions as_run = s;
  as_run.decide_early = true;  // plan() runs every search so
  check_work(assumed, here * (static_cast<std::size_t>(expected_runs(as_run)) + 1), WorkBudget{}, "servesim plan",
             "--hw, --quant, --tp, --ep (" + std::to_string(options) + " options), --replications or the --workload's num_requests",
             "--no-work-limit", std::min(here, cores) * reps);
}

// --json: the assumptions, the cheapest row (null when none meets the SLO) and every row.
nlohmann::json costs_json(const PlanCosts& c) {
  nlohmann::json gpus = nlohmann::json::object();
  for (const auto& [gpu, p] : c.gpus) {
    gpus[gpu] = {{"usd_per_gpu_hour", p.usd_per_gpu_hour ? nlohmann::json(*p.usd_per_gpu_hour) : nlohmann::json(nullptr)},
                 {"basis", p.basis}, {"providers", p.providers}, {"detail", p.detail}, {"unpriced", p.unpriced}};
  }
  nlohmann::json j = {{"mode", c.own ? "own" : "rent"}, {"list", c.list_path}, {"read_on", c.read_on}, {"gpus", gpus}};
  if (c.own) {
    j["own"] = {{"years", c.inputs.years}, {"utilization", c.inputs.utilization}, {"usd_per_kwh", c.inputs.usd_per_kwh},
                {"pue", c.inputs.pue}, {"server_usd_per_gpu", c.inputs.server_usd_per_gpu}};
  }
  return j;
}

nlohmann::json plan_json(const PlanResult& result, const Table& t, const Scenario& assumed, double rate,
                         const std::string& workload_ref, const SaturateOptions& search, const PlanCosts& costs) {
  const RequestClass& c = assumed.workload.classes.front();
  nlohmann::json j = {{"target_rate_per_s", rate},
                      {"workload", {{"scenario", workload_ref},
                                    {"arrival", describe_arrival(assumed.workload.arrival)},
                                    {"prompt_tokens", describe_lengths(c.prompt_tokens)},
                                    {"output_tokens", describe_lengths(c.output_tokens)}}},
                      {"engine", {{"name", assumed.engine.profile.name}, {"display_name", assumed.engine.profile.display_name}}},
                      {"slo", {{"ttft_s", c.slo.ttft_s}, {"tpot_s", c.slo.tpot_s}, {"e2e_s", c.slo.e2e_s},
                               {"percentile", c.slo.percentile}, {"min_success_frac", c.slo.min_success_frac}}},
                      {"search", {{"rel_tolerance", search.rel_tolerance}, {"replications", search.replications}}},
                      {"prices", costs_json(costs)},
                      {"cheapest", nullptr},
                      {"rows", table_to_json(t)}};
  if (result.cheapest) j["cheapest"] = j["rows"][*result.cheapest];
  return j;
}
// "h100-sxm bf16 tp 2" (", ep 2" with expert parallelism).
std::string option_label(const PlanOption& o) {
  return o.hw + " " + o.quant + " tp " + std::to_string(o.tp) + (o.ep > 1 ? " ep " + std::to_string(o.ep) : "");
}

// A row's answer in a line, under its charts.
std::string row_answer(const PlanRow& row) {
  if (!row.meets_slo) return "no rate meets the SLO: " + row.note;
  char buf[160];
  std::snprintf(buf, sizeof buf, "stable %.3g req/s per replica: %lld %s, %lld GPUs", row.stable_qps_per_replica,
                static_cast<long long>(row.replicas), row.replicas == 1 ? "replica" : "replicas", static_cast<long long>(row.gpus));
  std::string text = buf;
  if (row.usd_per_hour) text += ", " + money(*row.usd_per_hour) + "/hour, " + money(*row.usd_per_million_output_tokens) + " per million output tokens";
  return row.usd_per_hour ? text : text + "; " + row.note;
}

// Every option that fits, in the table's order: its probes (one replica at each rate probed; the
// means of the replications run there), the stable rate and one replica's price per hour.
std::vector<LoadCurve> plan_curves(const PlanResult& r, const Scenario& base) {
  std::vector<LoadCurve> curves;
  for (const PlanRow& row : r.rows) {
    if (row.probes.empty()) continue;
    LoadCurve c;
    c.name = option_label(row.option);
    c.config = {base.model.name, row.option.hw, row.option.quant, row.engine, row.option.tp, row.option.ep, 1};
    c.points = probe_points(row.probes);
    if (row.meets_slo) c.marked_load = row.stable_qps_per_replica;
    if (row.usd_per_gpu_hour) c.usd_per_hour = *row.usd_per_gpu_hour * row.option.tp;
    c.note = row_answer(row);
    curves.push_back(std::move(c));
  }
  return curves;
}

// The cost chart's points: each priced row's cost per million output tokens against its binding
// latency at the target rate, as a share of that SLO target (1 = at the target).
std::vector<CostPoint> plan_cost_points(const PlanResult& r, double percentile) {
  std::vector<CostPoint> out;
  for (const PlanRow& row : r.rows) {
    if (!row.at_target || !row.usd_per_million_output_tokens) continue;
    const PlanPrediction& p = *row.at_target;
    const std::string tip = config_name(row) + ": " + money(*row.usd_per_million_output_tokens) + " per million output tokens, " +
                            money(*row.usd_per_hour) + "/hour; binding " + binding_text(p, percentile) + "; TTFT p50/p99 " +
                            ms_text(p.ttft_p50_s) + "/" + ms_text(p.ttft_p99_s) + " ms, TPOT " + ms_text(p.tpot_p50_s) + "/" +
                            ms_text(p.tpot_p99_s) + " ms";
    out.push_back({option_label(row.option), 1.0 - p.binding_headroom_frac, *row.usd_per_million_output_tokens, tip});
  }
  return out;
}

// --html: the cost chart (Pareto front marked), then each option's latency against offered rate.
void write_plan_page(const std::string& path, const PlanResult& r, const std::vector<LoadCurve>& curves, const Scenario& assumed,
                     double rate, const std::string& args) {
  const double percentile = assumed.workload.classes.front().slo.percentile;
  LoadPage page;
  page.title = "plan: " + assumed.model.name + " at " + fmt_rate(rate) + " req/s";
  page.facts = {{"command", "servesim plan " + args},
                {"engine", assumed.engine.profile.name},
                {"answer", r.cheapest ? "cheapest meeting the SLO: " + config_name(r.rows[*r.cheapest]) : "none meets the SLO with a price"}};
  page.slos = slo_lines(assumed);
  page.marked_label = "stable rate";
  page.per_configuration = true;
  page.curves = curves;
  page.costs = plan_cost_points(r, percentile);
  page.cost_label = "$ per million output tokens";
  page.latency_label = "binding latency / its SLO target";
  page.costs_note = "each priced option at " + fmt_rate(rate) + " req/s with its replicas; hover a point for its figures";
  std::ostringstream os;
  write_load_html(os, page);
  write_file(path, os.str());
}

// What the caller knows of every row: the engine, the error bands of its GPU and engine for the
// SLO's metrics, and its price's basis.
void annotate_rows(PlanResult& result, const Scenario& base, const std::vector<ErrorBand>& bands, const PlanCosts& costs) {
  const SloConfig& slo = base.workload.classes.front().slo;
  for (PlanRow& row : result.rows) {
    row.engine = base.engine.profile.name;
    // An option that runs attention DP (at TP 1 it is the plain engine) is judged by the
    // attention-DP bands alone: the plain ones never measured it.
    const bool attention_dp = base.parallel.enable_attention_dp && row.option.tp > 1;
    row.bands = slo_bands(bands, row.option.hw, base.engine.profile.name, slo.ttft_s > 0.0, slo.tpot_s > 0.0, slo.e2e_s > 0.0,
                          attention_dp ? kAttentionDpFeature : "");
    const GpuPrice& price = costs.gpus.at(row.option.hw);
    row.price_basis = price.usd_per_gpu_hour ? price.basis : "";
    row.price_providers = price.providers;
  }
}
// Each option's search: --replications and --tolerance; its rates are max(0.05, rate / 8) x 2^k
// (the probes of the search as it started there). Without a guess (plan() starts each option at
// the grid rate nearest stable_rate_guess) it starts at the grid's rate nearest the target from
// below, where most options' stable rates lie within a few doublings either way, and the slow
// low-rate probes (one request at a time) run only for options that need more than 8 replicas.
// Below that, an option is first probed at the lowest rate, so one that no rate serves is known in
// one more probe. A run stops once its miss is certain (only its verdict is read), unless the
// load page or CSV draws every probe's latencies.
SaturateOptions plan_search(const cxxopts::ParseResult& p, double rate, const Scenario& base) {
  SaturateOptions s;
  s.replications = static_cast<int>(kReplications.read(p, "servesim plan"));
  s.rel_tolerance = kTolerance.read(p, "servesim plan");
  const double grid_per_s = std::max(0.05, rate / 8.0);
  s.start_rate_per_s = grid_per_s;
  while (s.start_rate_per_s * 2.0 <= rate) s.start_rate_per_s *= 2.0;
  s.floor_first_below_per_s = grid_per_s;
  s.min_rate_per_s = lowest_probe_rate(base);
  s.stop_settled_misses = !p.count("html") && !p.count("load-csv");
  return s;
}
}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  cxxopts::Options opts = plan_flags();
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("model")) throw InputError("servesim plan", "--model", "required");
  if (!p.count("rate")) throw InputError("servesim plan", "--rate", "required");
  if (!p.count("slo")) throw InputError("servesim plan", "--slo", "required (e.g. ttft=1s,tpot=100ms,p=0.99)");
  const double rate = rate_flag().read(p, "servesim plan");
  const std::string workload_ref = p["workload"].as<std::string>();
  ScenarioSource src = scenario_source(p, resolve_data_ref("scenarios", workload_ref, "servesim plan", "--workload"));
  apply_engine_flag(p, src);
  // Names are checked before anything runs: a typo exits 2 with the close names, not a table row.
  const std::string model = p["model"].as<std::string>();
  resolve_data_ref("models", model, "servesim plan", "--model");
  std::vector<std::string> hws = p["hw"].as<std::string>() == "all" ? bundled_names("hwprofiles") : split(p["hw"].as<std::string>());
  for (const auto& hw : hws) resolve_data_ref("hwprofiles", hw, "servesim plan", "--hw");
  const std::vector<std::string> quants = split(p["quant"].as<std::string>());
  for (const auto& q : quants) check_quant(q);
  const ParallelChoice sizes = parallel_choice(p);
  const PlanScenarioFactory make = [&](const PlanOption& opt, double r, std::uint64_t seed, std::int64_t replicas) {
    return option_scenario(src, model, opt, r, seed, replicas);
  };
  const std::vector<PlanOption> options = plan_options(hws, quants, sizes, make, rate);

  const Distribution dist = distribution(p, "plan", args);
  PlanOptions o;
  o.target_rate_per_s = rate;
  o.split = dist.split.get();
  const PlanCosts costs = plan_costs(p, hws);
  for (const auto& [gpu, price] : costs.gpus) {
    if (price.usd_per_gpu_hour) o.usd_per_gpu_hour[gpu] = *price.usd_per_gpu_hour;
    if (!price.usd_per_gpu_hour) o.unpriced[gpu] = price.unpriced;
  }
  const Scenario base = src.load({"model=\"" + model + "\""});
  o.saturate = plan_search(p, rate, base);
  const Scenario assumed = src.load({"model=\"" + model + "\"", rate_assignment(rate)});
  if (!p.count("no-work-limit")) check_plan_work(assumed, options.size(), dist, o.saturate);

  ProgressBar bar(true);
  o.progress = [&bar](std::size_t done, std::size_t total) {
    bar.update(static_cast<double>(done) / static_cast<double>(total), std::to_string(done) + "/" + std::to_string(total) + " options");
  };
  PlanResult result = plan(options, make, base.seed, o);
  const std::vector<ErrorBand> bands = load_error_bands(default_error_bands_path());
  annotate_rows(result, base, bands, costs);
  bar.finish();
  if (!dist.writes_output()) return kExitOk;
  const Table t = plan_table(result);
  write_csv_if_asked(p, t);
  const std::vector<LoadCurve> curves = plan_curves(result, base);
  write_load_csv_if_asked(p, curves);
  if (p.count("html")) write_plan_page(p["html"].as<std::string>(), result, curves, assumed, rate, join_args(dist.args));
  if (p.count("md")) {
    std::ostringstream os;
    os << "# plan\n\n`servesim plan " << join_args(dist.args) << "`\n\n";
    write_markdown(os, t);
    write_file(p["md"].as<std::string>(), os.str());
  }
  if (p.count("json")) {
    std::cout << plan_json(result, t, assumed, rate, workload_ref, o.saturate, costs).dump(2) << "\n";
  } else {
    print_plan(result, assumed, rate, workload_ref, o.saturate, bands, costs);
  }
  return kExitOk;
}

}  // namespace servesim::cli
