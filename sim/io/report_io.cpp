// Report writer: the figures come from the table in report_metrics.cpp (computed from
// RunMetrics/MemoryPlan/SimResult, nothing recomputed); this file adds the names, time series and
// echoed inputs around them. Nothing depends on the machine: the same inputs give the same bytes
// (the wall time is printed by print_summary, not written).
#include "sim/io/report_io.hpp"

#include <cstdio>

#include "sim/io/describe.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/report_metrics.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/cold_start.hpp"
#include "sim/serve/replica.hpp"
#include "sim/metrics/slo.hpp"

namespace servesim {

namespace {

// A run's fields that are not figures (names and time series); the figures are the table's
// (report_metrics.cpp), written for the fleet and again for each replica.
// with_series: kv_cache.usage_series too (left out of the replicas of a large fleet, which keep none).
void run_sections(nlohmann::json& j, const ReportSource& source, bool with_series = true) {
  const RunMetrics& m = source.metrics;
  j["kv_cache"]["reservation"] = kv_reservation_name(source.scenario.engine.kv_reservation);
  if (with_series) {
    nlohmann::json usage = nlohmann::json::array();
    for (const auto& [t, v] : m.kv_usage.points()) usage.push_back({ns_to_seconds(t), v});
    j["kv_cache"]["usage_series"] = std::move(usage);
  }
  write_report_figures(j, source, FigureScope::run);
}

// Per SLO class; the fleet's SLO figures are the table's.
nlohmann::json slo_classes_json(const SloResult& r, const WorkloadConfig& w, const RunMetrics& m) {
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t i = 0; i < r.classes.size(); ++i) {
    const ClassSloResult& c = r.classes[i];
    const ClassMetrics& cm = m.classes[i];
    nlohmann::json targets = nlohmann::json::object();
    for (const auto& t : c.targets) targets[t.metric] = {{"threshold_s", t.threshold_s}, {"value_s", t.value_s}, {"met", t.met}};
    classes.push_back({{"name", c.name},
                       {"percentile", w.classes[i].slo.percentile},
                       {"min_success_frac", w.classes[i].slo.min_success_frac},
                       {"targets", targets},
                       {"arrived", cm.arrived},
                       {"completed", cm.completed},
                       {"rejected", cm.rejected},
                       {"timed_out", cm.timed_out},
                       {"slo_met_requests", cm.slo_met},
                       {"success_frac", c.success_frac},
                       {"slo_attained_frac", c.slo_attained_frac},
                       {"goodput_requests_per_s", c.goodput_requests_per_s},
                       {"latency",
                        {{"ttft_s", histogram_summary(cm.ttft_s)},
                         {"tpot_s", histogram_summary(cm.tpot_s)},
                         {"e2e_s", histogram_summary(cm.e2e_s)}}},
                       {"status", !c.defined ? "none" : c.met ? "met" : "not met"},
                       {"met", c.defined ? nlohmann::json(c.met) : nlohmann::json(nullptr)}});
  }
  return classes;
}

// Per arrival stage (workload.arrival.stages), as inference-perf reports each stage: its load,
// its requests' fates and latencies (by arrival stage, whenever they finish), and its
// throughput from the stage's start to its last completion.
nlohmann::json stages_json(const ArrivalConfig& a, const RunMetrics& m) {
  nlohmann::json stages = nlohmann::json::array();
  double start_s = 0.0;
  for (std::size_t k = 0; k < m.stages.size(); ++k) {
    const ArrivalStage& st = a.stages[k];
    const ClassMetrics& sm = m.stages[k];
    const double window_s = sm.completed > 0 ? ns_to_seconds(sm.last_finish_ns) - start_s : 0.0;
    const auto per_s = [window_s](double v) { return window_s > 0.0 ? v / window_s : 0.0; };
    stages.push_back({{"index", k},
                      {"impl", st.poisson ? "poisson" : "constant"},
                      {"rate_per_s", st.rate_per_s},
                      {"start_s", start_s},
                      {"duration_s", st.duration_s},
                      {"arrived", sm.arrived},
                      {"completed", sm.completed},
                      {"rejected", sm.rejected},
                      {"timed_out", sm.timed_out},
                      {"latency",
                       {{"ttft_s", histogram_summary(sm.ttft_s)},
                        {"tpot_s", histogram_summary(sm.tpot_s)},
                        {"e2e_s", histogram_summary(sm.e2e_s)}}},
                      {"throughput",
                       {{"requests_per_s", per_s(static_cast<double>(sm.completed))},
                        {"output_tokens_per_s", per_s(static_cast<double>(sm.output_tokens))}}}});
    start_s += st.duration_s + a.stage_gap_s;
  }
  return stages;
}

// The cluster view's names and the replicas (index, role, parallelism, then their run figures).
void cluster_sections(nlohmann::json& j, const Scenario& s, const SimResult& res, const ReportSource& fleet) {
  j["cluster"]["router"] = s.router.impl;
  j["cluster"]["interconnect"] = s.hw.interconnect.provenance;
  if (s.disaggregation.enabled) j["cluster"]["kv_transfer"]["link"] = res.kv_transfer_link;
  const bool replica_series = res.replicas.size() <= kMaxReplicasWithUsageSeries;
  if (!replica_series) {
    // Appended, not "..." + ...: g++ 12 warns (-Wrestrict, a false positive) on that form.
    j["cluster"]["replica_usage_series"] = std::string("left out above ")
                                               .append(std::to_string(kMaxReplicasWithUsageSeries))
                                               .append(" replicas; the fleet's is kv_cache.usage_series");
  }
  j["replicas"] = nlohmann::json::array();
  for (const ReplicaResult& r : res.replicas) {
    nlohmann::json rj = {{"index", r.spec.index},
                         {"role", replica_role_name(r.spec.role)},
                         {"tensor_parallel_size", r.spec.parallel.tensor_parallel_size},
                         {"pipeline_parallel_size", r.spec.parallel.pipeline_parallel_size},
                         {"gpus", r.spec.parallel.gpus_per_replica()}};
    const ReportSource own{s, r.metrics, r.spec.memory, 1.0, ns_to_seconds(r.metrics.end_ns), res, fleet.cold_start, fleet.slo};
    run_sections(rj, own, replica_series);
    j["replicas"].push_back(std::move(rj));
  }
}

// What the fleet's figures are computed from (the cold start and SLO evaluation are held here).
struct FleetSource {
  ColdStart cold;
  SloResult slo;
  ReportSource source;
  FleetSource(const Scenario& s, const SimResult& res)
      : cold(estimate_cold_start(s, res.memory.weight_bytes)),
        slo(evaluate_slo(s.workload, res.metrics)),
        source{s, res.metrics, res.memory, static_cast<double>(res.replicas.size()), ns_to_seconds(res.metrics.end_ns), res, cold, slo} {}
};

// One line per arrival stage: its load, completions and median latencies.
void print_stages(std::ostream& os, const nlohmann::json& stages) {
  char line[256];
  for (const auto& st : stages) {
    const auto& l = st["latency"];
    const auto p50 = [&l](const char* key) { return l[key]["p50"].get<double>(); };
    std::snprintf(line, sizeof line, "  stage %-4lld %s %.3g req/s for %.4g s: %lld completed; p50 ttft %.4f s, tpot %.4f s, e2e %.4f s\n",
                  st["index"].get<long long>(), st["impl"].get<std::string>().c_str(), st["rate_per_s"].get<double>(),
                  st["duration_s"].get<double>(), st["completed"].get<long long>(), p50("ttft_s"), p50("tpot_s"), p50("e2e_s"));
    os << line;
  }
}

}  // namespace

std::map<std::string, double> report_figures_at(const Scenario& s, const SimResult& res, const std::vector<std::string>& paths) {
  const FleetSource fleet(s, res);
  const auto wanted = [&paths](const std::string& figure) {
    for (const std::string& p : paths) {
      if (p == figure || (p.size() > figure.size() && p.compare(0, figure.size(), figure) == 0 && p[figure.size()] == '.')) return true;
    }
    return false;
  };
  nlohmann::json j = nlohmann::json::object();
  write_report_figures(j, fleet.source, FigureScope::run, wanted);
  write_report_figures(j, fleet.source, FigureScope::fleet, wanted);
  const std::map<std::string, double> flat = flatten_report(j);
  std::map<std::string, double> out;
  for (const std::string& p : paths) {
    if (const auto it = flat.find(p); it != flat.end()) out.emplace(p, it->second);
  }
  return out;
}

nlohmann::json make_report(const Scenario& s, const SimResult& res) {
  const RunMetrics& m = res.metrics;
  const FleetSource fs(s, res);
  const ReportSource& fleet = fs.source;
  const SloResult& slo = fs.slo;
  nlohmann::json j;
  j["schema"] = "servesim-report/1";
  j["scenario"] = scenario_to_json(s);
  j["model"] = model_to_json(s.model);
  j["hardware"] = {{"name", s.hw.name}, {"display_name", s.hw.display_name}, {"provenance", provenance_to_json(s.hw.provenance)},
                   {"field_origins", field_origins_json(s.hw)}};
  run_sections(j, fleet);
  write_report_figures(j, fleet, FigureScope::fleet);
  j["quantization"]["method"] = quant_name(s.precision.quant);
  if (s.precision.quant_scope != QuantScope::all) j["quantization"]["scope"] = quant_scope_name(s.precision.quant_scope);
  j["quantization"]["kv_cache_dtype"] = dtype_name(s.precision.kv_cache);
  // The engine's kernel for the routed experts and the activations it multiplies (only where the
  // engine names one: other reports keep their bytes).
  if (const QuantKernel k = s.engine.profile.kernels.moe_quant_kernels[static_cast<std::size_t>(s.precision.quant)];
      s.model.is_moe() && k != QuantKernel::auto_) {
    j["quantization"]["experts_kernel"] = quant_kernel_name(k);
    j["quantization"]["experts_activations"] = kernel_activation_name(s.precision.quant, k, s.precision.activations);
  }
  j["slo"]["status"] = slo.status();
  j["slo"]["classes"] = slo_classes_json(slo, s.workload, m);
  if (!m.stages.empty()) j["stages"] = stages_json(s.workload.arrival, m);  // only with stages: other reports keep their bytes
  cluster_sections(j, s, res, fleet);
  return j;
}

// The engine, precision and layout the answer is for: every output names the engine.
std::string engine_layout(const nlohmann::json& r) {
  const auto& sc = r["scenario"];
  if (!sc.contains("engine") || !sc["engine"].contains("profile")) return "";  // an older report
  const auto& prof = sc["engine"]["profile"];
  const auto& par = sc["parallel"];
  const std::string method = r["quantization"]["method"].get<std::string>(), dtype = sc["dtype"].get<std::string>();
  const std::string kv = r["quantization"]["kv_cache_dtype"].get<std::string>();
  const std::string scope = r["quantization"].contains("scope") ? r["quantization"]["scope"].get<std::string>() : "all";
  const auto& quant = r["quantization"];
  // The experts' activations where the engine's MoE kernel decides them (MXFP4 x bf16 or x MXFP8).
  const std::string experts = quant.contains("experts_kernel") ? " x " + quant["experts_activations"].get<std::string>() + " activations (" +
                                                                     quant["experts_kernel"].get<std::string>() + ")"
                                                               : std::string();
  const std::string precision = method == "none"          ? dtype
                                : scope == "experts"      ? method + " experts" + experts + " (" + dtype + " elsewhere)"
                                : experts.empty()         ? method
                                                          : method + " (experts" + experts + ")";
  const long long pp = par["pipeline_parallel_size"].get<long long>(), dp = par["data_parallel_size"].get<long long>();
  const std::string tp = std::to_string(par["tensor_parallel_size"].get<long long>());
  const bool adp = par.contains("enable_attention_dp") && par["enable_attention_dp"].get<bool>();
  return prof["name"].get<std::string>() + " (" + prof["display_name"].get<std::string>() + "); " + precision +
         (kv != dtype ? ", KV cache " + kv : "") + ", tp " + tp + (adp ? " as attention DP " + tp + " x experts over " + tp : "") +
         (pp > 1 ? " pp " + std::to_string(pp) : "") + ", " + std::to_string(dp) + (dp == 1 ? " replica" : " replicas");
}

namespace {
std::string engine_line(const nlohmann::json& r) {
  const std::string layout = engine_layout(r);
  return layout.empty() ? "" : "  engine     " + layout + "\n";
}
// When the arrivals outpace the configuration (requests.overloaded): the rates and what TTFT is
// made of; empty otherwise or in a report written before the flag.
std::string overload_line(const nlohmann::json& r) {
  const auto& req = r["requests"];
  if (!req.contains("overloaded") || !req["overloaded"].get<bool>()) return "";
  const double offered = req["offered_rate_per_s"].get<double>(), growth = req["queue_growth_frac"].get<double>();
  char line[320];
  std::snprintf(line, sizeof line,
                "  overload   arrivals (%.4g req/s) outpace what this configuration serves (about %.4g req/s): the queue grew all "
                "run, so TTFT is mostly waiting (queue p50 %.4g s of TTFT p50 %.4g s)\n",
                offered, offered / (1.0 + growth), r["latency"]["queue_s"]["p50"].get<double>(), r["latency"]["ttft_s"]["p50"].get<double>());
  return line;
}
// When the arrivals are not overloading the configuration on average but its tail TTFT is mostly
// waiting to start (a bursty trace: the queue builds in its peaks and drains between): the tail
// TTFT and queue figures, so a p99 of tens of seconds is not read as slow compute. Heavy tail:
// TTFT p99 at least 5x its p50 and 1 s or more, and the queue p99 at least half the TTFT p99.
std::string burst_line(const nlohmann::json& r) {
  const auto& req = r["requests"];
  if (!req.contains("overloaded") || req["overloaded"].get<bool>()) return "";
  const auto& ttft = r["latency"]["ttft_s"];
  const auto& queue = r["latency"]["queue_s"];
  if (!ttft.contains("p99") || !queue.contains("p99")) return "";
  const double ttft_p99 = ttft["p99"].get<double>(), queue_p99 = queue["p99"].get<double>();
  if (!(ttft_p99 >= 1.0 && ttft_p99 >= 5.0 * ttft["p50"].get<double>() && queue_p99 >= 0.5 * ttft_p99)) return "";
  char line[320];
  std::snprintf(line, sizeof line,
                "  bursts     TTFT p99 %.4g s is mostly waiting to start (queue p99 %.4g s, p50 %.4g s): arrivals outpace this "
                "configuration at times and the queue drains between (offered %.4g req/s on average)\n",
                ttft_p99, queue_p99, queue["p50"].get<double>(), req["offered_rate_per_s"].get<double>());
  return line;
}
// One line per request class when there are several: its status at its percentile, each target
// (value against threshold) and its completed fraction.
std::string slo_class_lines(const nlohmann::json& r) {
  const auto& classes = r["slo"]["classes"];
  if (classes.size() < 2) return "";
  std::string out;
  for (const auto& c : classes) {
    const std::string status = c["status"].get<std::string>();
    char head[96];
    std::snprintf(head, sizeof head, "    %-10s %s", c["name"].get<std::string>().c_str(),
                  status == "none" ? "no latency target" : status == "met" ? "met" : "NOT met");
    std::string line = head;
    char pct[32];
    std::snprintf(pct, sizeof pct, " at p%g", 100.0 * c["percentile"].get<double>());
    if (status != "none") line += pct;
    std::string targets;
    for (const auto& [metric, name] : {std::pair<const char*, const char*>{"ttft_s", "TTFT"}, {"tpot_s", "TPOT"}, {"e2e_s", "E2E"}}) {
      if (!c["targets"].contains(metric)) continue;
      const auto& t = c["targets"][metric];
      targets += (targets.empty() ? ": " : ", ") + std::string(name) + " " + format_duration(t["value_s"].get<double>()) +
                 (t["met"].get<bool>() ? " <= " : " > ") + format_duration(t["threshold_s"].get<double>());
    }
    char done[96];
    std::snprintf(done, sizeof done, "; %.2f%% of %lld completed, goodput %.3g req/s\n", 100.0 * c["success_frac"].get<double>(),
                  c["arrived"].get<long long>(), c["goodput_requests_per_s"].get<double>());
    out += line + targets + done;
  }
  return out;
}

// Speculative decoding, when it is on: the drafter and what its verify passes gave.
std::string speculative_line(const nlohmann::json& r) {
  if (!r.contains("speculative")) return "";
  const auto& sp = r["scenario"]["engine"]["speculative"];
  const auto& s = r["speculative"];
  char line[256];
  std::snprintf(line, sizeof line,
                "  speculate  %s (%s), k %lld, acceptance %.2f: %.2f tokens per verify pass (model %.2f), %.1f%% of drafts accepted\n",
                sp["method"].get<std::string>().c_str(), sp["drafter"].get<std::string>().c_str(),
                sp["num_speculative_tokens"].get<long long>(), sp["acceptance_rate"].get<double>(), s["tokens_per_step"].get<double>(),
                s["expected_tokens_per_step"].get<double>(), 100.0 * s["draft_acceptance_frac"].get<double>());
  return line;
}

// Attention DP, when on: the ranks, the busiest rank's batch and the MoE layers' token exchange
// (under attention DP the only collectives: gpu.comm_frac).
std::string attention_dp_line(const nlohmann::json& r) {
  if (!r["batch"].contains("attention_dp_rank_mean_size")) return "";
  const long long ranks = r["cluster"]["attention_dp_ranks"].get<long long>();
  char line[256];
  std::snprintf(line, sizeof line,
                "  attn DP    %lld ranks, experts over %lld GPUs: %.1f sequences per rank per iteration (busiest, mean), MoE token "
                "exchange %.1f%% of busy time\n",
                ranks, ranks, r["batch"]["attention_dp_rank_mean_size"].get<double>(), 100.0 * r["gpu"].value("comm_frac", 0.0));
  return line;
}

// KV offload tiers, when on: where prompt tokens were found and what loading them cost.
std::string offload_line(const nlohmann::json& r) {
  if (!r.contains("kv_offload")) return "";
  const auto& o = r["scenario"]["engine"]["kv_offload"];
  const auto& k = r["kv_offload"];
  char line[320];
  std::snprintf(line, sizeof line,
                "  offload    CPU %.3g GB at %.3g GB/s%s, %s loads: prompt hits GPU %.1f%% / CPU %.1f%% / disk %.1f%%, %.3g GB loaded in %.3g s\n",
                o["cpu_bytes"].get<double>() * 1e-9, o["cpu_bandwidth_bytes_per_s"].get<double>() * 1e-9,
                o.contains("disk_bytes") ? (", disk " + std::to_string(static_cast<long long>(o["disk_bytes"].get<double>() * 1e-9)) + " GB").c_str() : "",
                o["load"].get<std::string>().c_str(), 100.0 * k["gpu_hit_ratio"].get<double>(), 100.0 * k["cpu_hit_ratio"].get<double>(),
                100.0 * k["disk_hit_ratio"].get<double>(), k["load_bytes"].get<double>() * 1e-9, k["load_s"].get<double>());
  return line;
}
}  // namespace

void print_summary(std::ostream& os, const nlohmann::json& r, double wall_s) {
  char line[256];
  const auto& lat = r["latency"];
  const auto& req = r["requests"];
  std::snprintf(line, sizeof line, "servesim: %s | %s on %s (%s profile)\n", r["scenario"]["name"].get<std::string>().c_str(),
                r["model"]["name"].get<std::string>().c_str(), r["hardware"]["name"].get<std::string>().c_str(),
                r["hardware"]["provenance"]["kind"].get<std::string>().c_str());
  os << line;
  os << engine_line(r);
  // Which of the profile's numbers were measured on the GPU: a derived profile's answer is an
  // extrapolation and says so on the first lines.
  if (r["hardware"].contains("field_origins")) {  // reports written before it have none
    os << "  profile    " << field_origins_line(field_origins_from_json(r["hardware"]["field_origins"])) << "\n";
  }
  std::snprintf(line, sizeof line, "  requests   %lld arrived, %lld completed, %lld rejected, %lld timed out\n",
                req["arrived"].get<long long>(), req["completed"].get<long long>(), req["rejected"].get<long long>(),
                req["timed_out"].get<long long>());
  os << line;
  // Preemption events and the requests they hit differ (a request can be preempted twice).
  std::snprintf(line, sizeof line, "  preempted  %lld requests (%lld preemptions, %lld tokens recomputed)\n",
                req["preempted"].get<long long>(), req["preemptions"].get<long long>(), req["recomputed_tokens"].get<long long>());
  os << line;
  for (const char* key : {"ttft_s", "tpot_s", "itl_s", "e2e_s"}) {
    const auto& l = lat[key];
    std::snprintf(line, sizeof line, "  %-6s     mean %9.4f s  p50 %9.4f  p95 %9.4f  p99 %9.4f  jitter %.2f\n", key,
                  l["mean"].get<double>(), l["p50"].get<double>(), l["p95"].get<double>(), l["p99"].get<double>(),
                  l["jitter"].get<double>());
    os << line;
  }
  os << overload_line(r) << burst_line(r);
  const auto& t = r["throughput"];
  std::snprintf(line, sizeof line, "  throughput %.2f req/s, %.1f output tok/s, %.1f total tok/s\n",
                t["requests_per_s"].get<double>(), t["output_tokens_per_s"].get<double>(), t["total_tokens_per_s"].get<double>());
  os << line;
  const auto& kv = r["kv_cache"];
  std::snprintf(line, sizeof line, "  kv cache   %lld blocks x %lld tokens, peak %.1f%%, mean %.1f%% used\n",
                kv["capacity_blocks"].get<long long>(), kv["block_size"].get<long long>(),
                100.0 * kv["peak_used_frac"].get<double>(), 100.0 * kv["mean_used_frac"].get<double>());
  os << line;
  std::snprintf(line, sizeof line, "  kv waste   internal fragmentation %.1f%%, reservation waste %.1f%%, prefix hits %.1f%%\n",
                100.0 * kv["internal_fragmentation_frac"].get<double>(), 100.0 * kv["reservation_waste_frac"].get<double>(),
                100.0 * kv["prefix_hit_ratio"].get<double>());
  os << line;
  const auto& b = r["batch"];
  const auto& g = r["gpu"];
  std::snprintf(line, sizeof line, "  batch      mean %.1f, max %lld sequences, padding waste %.1f%%; GPU busy %.1f%% of the time (an iteration "
                "running, any batch), HBM bandwidth used %.1f%%\n",
                b["mean_size"].get<double>(), b["max_size"].get<long long>(), 100.0 * b["padding_waste_frac"].get<double>(),
                100.0 * g["busy_frac"].get<double>(), 100.0 * g["hbm_bw_util_frac"].get<double>());
  os << line;
  os << attention_dp_line(r) << speculative_line(r) << offload_line(r);
  const auto& c = r["cluster"];
  if (c["gpus"].get<long long>() > 1) {
    std::snprintf(line, sizeof line, "  cluster    %lld replicas on %lld GPUs, router %s\n", c["replicas"].get<long long>(),
                  c["gpus"].get<long long>(), c["router"].get<std::string>().c_str());
    os << line;
    if (c.contains("kv_transfer")) {
      const auto& t = c["kv_transfer"];
      std::snprintf(line, sizeof line, "  kv moves   %lld prefill->decode transfers over %s, mean %.3f ms, %.2f GB\n",
                    t["transfers"].get<long long>(), t["link"].get<std::string>().c_str(), 1e3 * t["mean_s"].get<double>(),
                    t["bytes"].get<double>() / 1e9);
      os << line;
    }
  }
  const auto& slo = r["slo"];
  const std::string status = slo["status"].get<std::string>();
  if (status == "none") {
    std::snprintf(line, sizeof line, "  slo        none set (no latency target); %.2f%% of requests completed\n",
                  100.0 * slo["success_frac"].get<double>());
  } else {
    std::snprintf(line, sizeof line, "  slo        %s: success %.2f%%, goodput %.2f req/s\n", status == "met" ? "met" : "NOT met",
                  100.0 * slo["success_frac"].get<double>(), slo["goodput_requests_per_s"].get<double>());
  }
  os << line << slo_class_lines(r);
  if (r.contains("stages")) print_stages(os, r["stages"]);
  const auto& sim = r["sim"];
  std::snprintf(line, sizeof line, "  sim        %llu events, %.3f simulated s in %.3f wall s\n", sim["events"].get<unsigned long long>(),
                sim["simulated_s"].get<double>(), wall_s);
  os << line;
}

}  // namespace servesim
