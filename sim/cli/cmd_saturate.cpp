// `servesim saturate SCENARIO.json --slo ttft=..,tpot=..,e2e=..,p=.. [--replications R]
//  [--start-rate R] [--tolerance F] [--json] [--csv FILE] [--md FILE] [--html FILE] [--load-csv FILE] [--mpi]`:
// the highest arrival rate meeting the SLO (stable_qps) and the saturation batch size.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/analysis/saturation_rate.hpp"
#include "sim/analysis/work_estimate.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/distribute.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/plan_prices.hpp"
#include "sim/cli/progress.hpp"
#include "sim/core/error.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/table_io.hpp"
#include "sim/workload/workload.hpp"

namespace servesim::cli {

void check_saturable(const Scenario& s) {
  using K = ArrivalConfig::Kind;
  const K k = s.workload.arrival.kind;
  if (k != K::poisson && k != K::gamma && k != K::constant && k != K::on_off && k != K::trace) {
    throw InputError(s.file, "workload.arrival.impl",
                     "saturate varies rate_per_s (or a trace's time_scale): needs poisson, gamma, constant, on_off or trace arrivals");
  }
  bool bounded = s.workload.request_timeout_s > 0.0 || s.engine.scheduler.max_queue_size > 0;
  for (const auto& c : s.workload.classes) bounded = bounded || c.slo.has_latency_target();
  if (!bounded) {
    throw InputError(s.file, "slo", "saturate needs a latency target (--slo ttft=...,tpot=...,e2e=...), a request timeout or a queue limit: "
                                    "otherwise every rate eventually succeeds");
  }
}

namespace {

const IntegerFlag kReplications{"replications", "seeds per probed rate (majority must pass)", {1, 100}, "3"};
const NumberFlag& start_rate_flag() {  // on first use: the key registry is not read during static initialisation
  static const NumberFlag f{"start-rate", "first rate probed, req/s", find_scenario_key("workload.arrival.rate_per_s")->range, "1"};
  return f;
}
const NumberFlag kTolerance{"tolerance", "stop when the bracket is this tight (relative)", {0, 1, true, false}, "0.01"};

cxxopts::Options saturate_flags() {
  cxxopts::Options opts("servesim saturate", "Find the highest arrival rate that meets the SLO (stable QPS)");
  opts.add_options()("scenario", "scenario JSON file", cxxopts::value<std::string>())(
      "serial", "run on one thread (same output)")(
      "html", "also write a page of TTFT, TPOT and E2E p50/p99 and throughput against the probed rates (the SLO and the "
              "stable rate marked) to this file", cxxopts::value<std::string>())(
      "no-work-limit", kNoWorkLimitHelp)("h,help", "show help");
  kReplications.add(opts);
  start_rate_flag().add(opts);
  kTolerance.add(opts);
  add_scenario_flags(opts);
  add_output_flags(opts);
  add_load_csv_flag(opts);
  add_distribution_flags(opts, false);  // probes depend on the previous ones: no shards
  opts.parse_positional({"scenario"});
  return opts;
}

// The search's settings from the flags, each checked.
SaturateOptions search_options(const cxxopts::ParseResult& p, const Distribution& dist) {
  SaturateOptions o;
  o.replications = static_cast<int>(kReplications.read(p, "servesim saturate"));
  o.start_rate_per_s = start_rate_flag().read(p, "servesim saturate");
  o.rel_tolerance = kTolerance.read(p, "servesim saturate");
  o.parallel = !p.count("serial");
  o.split = dist.split.get();
  return o;
}

// How a probe sets its rate: workload.arrival.rate_per_s, or for trace arrivals the trace's
// time_scale, replaying the trace faster or slower than its own rate.
struct RateKnob {
  bool trace = false;
  double trace_rate_per_s = 0.0;  // the trace's arrivals per second at base_time_scale
  double base_time_scale = 1.0;
  std::int64_t trace_requests = 0;  // arrivals the workload takes from the trace
  double time_scale(double rate_per_s) const { return base_time_scale * trace_rate_per_s / rate_per_s; }
  std::string assignment(double rate_per_s) const {
    char buf[80];
    if (trace) {
      std::snprintf(buf, sizeof buf, "workload.trace.time_scale=%.17g", time_scale(rate_per_s));
    } else {
      std::snprintf(buf, sizeof buf, "workload.arrival.rate_per_s=%.17g", rate_per_s);
    }
    return buf;
  }
};

// The knob for `s`: for trace arrivals, the trace's rate (its arrivals up to the last, over the
// last one's time, as requests.offered_rate_per_s counts them) read from the workload itself.
RateKnob rate_knob(const Scenario& s) {
  RateKnob k;
  if (s.workload.arrival.kind != ArrivalConfig::Kind::trace) return k;
  k.trace = true;
  k.base_time_scale = s.workload.trace->time_scale;
  WorkloadGenerator arrivals(s.workload, s.seed);
  std::int64_t n = 0;
  TimeNs last_ns = 0;
  while (const auto r = arrivals.next()) {
    ++n;
    last_ns = r->arrival_ns;
  }
  if (n < 2 || last_ns <= 0) {
    throw InputError(s.workload.trace->path, "workload.trace",
                     "saturate scales the trace's arrival rate (time_scale), but its " + std::to_string(n) +
                         " requests arrive at one instant: there is no rate to scale");
  }
  k.trace_requests = n;
  k.trace_rate_per_s = static_cast<double>(n) / ns_to_seconds(last_ns);
  return k;
}

// The lowest rate to probe: the arrivals within the simulated-time limit (lowest_probe_rate) and,
// for a trace, a time_scale within its key's range and the last of its requests (at requests /
// rate seconds) within half the limit.
double lowest_rate(const Scenario& s, const RateKnob& k) {
  double lowest = lowest_probe_rate(s);
  if (k.trace) {
    const double scale_max = find_scenario_key("workload.trace.time_scale")->range.hi;
    lowest = std::max({lowest, k.trace_rate_per_s * k.base_time_scale / scale_max,
                       2.0 * static_cast<double>(k.trace_requests) / kMaxSimulatedTimeS});
  }
  return lowest;
}

// The scenario of one probe: the rate set, the seed given. A workload bounded by duration_s
// grows with the rate, so under the work limit each probe is checked again.
Scenario probe_scenario(const ScenarioSource& src, const RateKnob& knob, double rate, std::uint64_t seed, bool work_limit,
                        int replications) {
  Scenario s = src.load({knob.assignment(rate)}, static_cast<long long>(seed));
  if (work_limit) {
    char levers[128];
    std::snprintf(levers, sizeof levers, "workload.duration_s (the probe at %.4g req/s is one of many) or --replications", rate);
    check_work(s, static_cast<std::size_t>(replications), WorkBudget{}, src.path, levers, "--no-work-limit");
  }
  return s;
}

// One row per probed rate, in the order probed.
Table probe_table(const SaturateResult& r) {
  Table t;
  for (std::size_t i = 0; i < r.probes.size(); ++i) {
    const auto& pr = r.probes[i];
    t.set(i, "rate_per_s", pr.rate_per_s);
    t.set(i, "passed", static_cast<std::int64_t>(pr.passed));
    t.set(i, "runs", static_cast<std::int64_t>(pr.runs));
    t.set(i, "meets_slo", 2 * pr.passed > pr.runs);
    t.set(i, "success_frac", pr.success_frac);
    t.set(i, "goodput_requests_per_s", pr.goodput_requests_per_s);
    t.set(i, "mean_batch_size", pr.mean_batch);
  }
  return t;
}

// Each probe a load level (its replications' mean percentiles and throughput; meets the SLO when a
// majority of them did), the stable rate marked: the page's points and --load-csv's rows.
LoadCurve probe_curve(const SaturateResult& r, const Scenario& base) {
  LoadCurve curve;
  curve.config = load_config(base);
  curve.points = probe_points(r.probes);
  if (r.stable_qps > 0.0) curve.marked_load = r.stable_qps;
  curve.usd_per_hour = listed_usd_per_hour(base);
  return curve;
}

// --html: the probes against load, the SLO's latency targets as lines, the stable rate marked.
void write_load_page(const std::string& path, const LoadCurve& curve, const SaturateResult& r, const SaturateOptions& o,
                     const Scenario& base, const std::string& args) {
  LoadPage page;
  page.title = "saturate: " + base.model.name + " on " + base.hw.name;
  page.facts = {{"command", "servesim saturate " + args},
                {"scenario", base.file},
                {"probes", std::to_string(r.probes.size()) + " rates, " + std::to_string(o.replications) + " seeds each (majority decides)"}};
  page.points = curve.points;
  page.slos = slo_lines(base);
  page.marked_load = curve.marked_load;
  std::ostringstream os;
  write_load_html(os, page);
  write_file(path, os.str());
}

void print_result(const cxxopts::ParseResult& p, const SaturateResult& r, const SaturateOptions& o, const RateKnob& knob,
                  const Table& probes) {
  if (p.count("json")) {
    nlohmann::json j = {{"stable_qps", r.stable_qps},
                        {"first_failing_qps", r.first_failing_qps},
                        {"saturation_batch_size", r.saturation_batch_size},
                        {"max_batch_size", r.max_batch_size},
                        {"mean_context_tokens", r.mean_context_tokens},
                        {"batch_at_stable_qps", r.batch_at_stable_qps},
                        {"goodput_at_stable_qps", r.goodput_at_stable_qps},
                        {"replications", o.replications},
                        {"identical_replications", r.identical_replications},
                        {"probes", table_to_json(probes)}};
    if (knob.trace) {
      j["trace_rate_per_s"] = knob.trace_rate_per_s;
      j["time_scale_at_stable_qps"] = knob.time_scale(r.stable_qps);
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("stable_qps %.4g req/s (first failing %.4g), saturation_batch_size %lld (of %lld at mean context %.0f), "
                "mean batch at stable_qps %.1f\n",
                r.stable_qps, r.first_failing_qps, static_cast<long long>(r.saturation_batch_size),
                static_cast<long long>(r.max_batch_size), r.mean_context_tokens, r.batch_at_stable_qps);
    if (r.identical_replications) {
      std::printf("  the %d seeds of each probe gave identical runs: nothing this scenario simulates is drawn from the seed (a "
                  "trace's arrivals and lengths), so --replications 1 gives the same answer\n", o.replications);
    }
    if (knob.trace) {
      std::printf("  the trace replayed at %.3g x its own %.4g req/s: workload.trace.time_scale %.4g\n",
                  r.stable_qps / knob.trace_rate_per_s, knob.trace_rate_per_s, knob.time_scale(r.stable_qps));
    }
  }
}

// --csv: the probes; --md: the result's figures, then the probes.
void write_files(const cxxopts::ParseResult& p, const SaturateResult& r, const Table& probes, const std::string& title) {
  if (!p.count("csv") && !p.count("md")) return;
  Table summary;
  summary.set(0, "stable_qps", r.stable_qps);
  summary.set(0, "first_failing_qps", r.first_failing_qps);
  summary.set(0, "saturation_batch_size", r.saturation_batch_size);
  summary.set(0, "max_batch_size", r.max_batch_size);
  summary.set(0, "batch_at_stable_qps", r.batch_at_stable_qps);
  write_csv_if_asked(p, probes);
  if (p.count("md")) {
    std::ostringstream os;
    os << title << "\n\n";
    write_markdown(os, summary);
    os << "\nProbes:\n\n";
    write_markdown(os, probes);
    write_file(p["md"].as<std::string>(), os.str());
  }
}

}  // namespace

int cmd_saturate(const std::vector<std::string>& args) {
  cxxopts::Options opts = saturate_flags();
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("scenario")) throw InputError("servesim saturate", "", "missing SCENARIO.json (see --help)");
  const ScenarioSource src = scenario_source(p, p["scenario"].as<std::string>());
  const Scenario base = src.load();
  check_saturable(base);
  const RateKnob knob = rate_knob(base);
  const Distribution dist = distribution(p, "saturate", args);
  SaturateOptions o = search_options(p, dist);
  o.min_rate_per_s = lowest_rate(base, knob);
  if (knob.trace && !p.count("start-rate")) o.start_rate_per_s = knob.trace_rate_per_s;  // the trace as it is first
  const bool work_limit = !p.count("no-work-limit");
  if (work_limit) {
    // The search's expected probes, each R replications of the scenario; the scenarios of one
    // probe exist at a time.
    const auto reps = static_cast<std::size_t>(o.replications);
    check_work(base, reps * static_cast<std::size_t>(expected_probes(o)), WorkBudget{}, src.path,
               "workload.num_requests (or duration_s), --replications or --tolerance", "--no-work-limit", reps);
  }
  ProgressBar bar(true);
  o.progress = [&bar](const SaturateProgress& s) {
    char detail[96];
    std::snprintf(detail, sizeof detail, "probe %d at %.4g req/s", s.probes_done + 1, s.next_rate_per_s);
    bar.update(s.fraction(), detail);
  };
  const SaturateResult r = saturate(
      [&](double rate, std::uint64_t seed) { return probe_scenario(src, knob, rate, seed, work_limit, o.replications); }, base.seed, o);
  bar.finish();
  // An SLO no rate meets (a latency target below what one request alone takes) is the input's
  // problem: one line naming it, with what the lowest rate gave.
  if (!r.unmet.empty()) throw InputError(src.path, src.slo ? "--slo" : "slo", r.unmet);
  if (!dist.writes_output()) return kExitOk;
  const Table probes = probe_table(r);
  print_result(p, r, o, knob, probes);
  write_files(p, r, probes, "# saturate\n\n`servesim saturate " + join_args(dist.args) + "`");
  if (!p.count("load-csv") && !p.count("html")) return kExitOk;
  const LoadCurve curve = probe_curve(r, base);
  write_load_csv_if_asked(p, {curve});
  if (p.count("html")) write_load_page(p["html"].as<std::string>(), curve, r, o, base, join_args(dist.args));
  return kExitOk;
}

}  // namespace servesim::cli
