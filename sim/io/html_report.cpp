// HTML report pages; see html_report.hpp. Every number shown comes from the report, the
// histograms, the recorder or the cost model; nothing is invented for display.
#include "sim/io/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/hw/cost_model.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/svg_chart.hpp"

namespace servesim {

namespace {

using svg::escape;
using svg::format_number;

constexpr const char* kBlue = "#1f6fb4";
constexpr const char* kOrange = "#e8760a";
constexpr const char* kGreen = "#2a9d4b";
constexpr const char* kRed = "#c8322d";
constexpr const char* kPurple = "#7b4fb0";
constexpr const char* kGrey = "#7a7a7a";

const char* kCss = R"(
body{font-family:-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;margin:18px;color:#1b1b1b;background:#f4f5f7}
h1{font-size:20px;margin:0 0 4px} h2{font-size:15px;margin:22px 0 8px;color:#333}
.sub{color:#555;font-size:13px;margin-bottom:12px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(270px,1fr));gap:12px}
.card{background:#fff;border:1px solid #dcdfe4;border-radius:6px;padding:10px 14px;min-width:0}
.card h3{font-size:13px;margin:0 0 6px;color:#1f6fb4;text-transform:uppercase;letter-spacing:.04em}
.card table{border-collapse:collapse;width:100%;font-size:12.5px}
.card td{padding:2px 4px;vertical-align:top;overflow-wrap:anywhere} .card td:first-child{color:#555;white-space:nowrap}
details summary{cursor:pointer;color:#1f6fb4} details div{margin:2px 0 4px;color:#444}
.ok{color:#2a9d4b;font-weight:600} .bad{color:#c8322d;font-weight:600}
.grid{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #dcdfe4;border-radius:6px;max-width:100%;height:auto}
svg .ct{font-size:14px;font-weight:600;fill:#1b1b1b} svg .cs{font-size:11.5px;fill:#555}
svg .tk{font-size:11px;fill:#444} svg .al{font-size:12px;fill:#222} svg .lg{font-size:11.5px;fill:#222}
svg .mk{font-size:10px;fill:#333} svg .grid{stroke:#e6e8eb;stroke-width:1}
.foot{color:#777;font-size:11.5px;margin-top:18px}
)";

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string seconds(double s) {
  if (s == 0.0) return "0 s";
  if (std::fabs(s) < 1e-3) return fmt("%.3g µs", s * 1e6);
  if (std::fabs(s) < 1.0) return fmt("%.3g ms", s * 1e3);
  return fmt("%.4g s", s);
}

std::string count(double n, const std::string& noun) { return fmt("%.0f ", n) + noun + (n == 1.0 ? "" : "s"); }

std::string pct(double f) { return fmt("%.1f%%", 100.0 * f); }

void page_head(std::ostream& os, const std::string& title) {
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
        "<title>"
     << escape(title) << "</title>\n<style>" << kCss << "</style></head><body>\n";
}

using Rows = std::vector<std::pair<std::string, std::string>>;  // name, HTML (already escaped)

void card(std::ostream& os, const std::string& title, const Rows& rows) {
  os << "<div class=\"card\"><h3>" << escape(title) << "</h3><table>\n";
  for (const auto& [k, v] : rows) os << "<tr><td>" << escape(k) << "</td><td>" << v << "</td></tr>\n";
  os << "</table></div>\n";
}

double get(const nlohmann::json& j, std::initializer_list<const char*> path, double fallback = 0.0) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return fallback;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<double>() : fallback;
}

std::string str(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return "";
    p = &(*p)[k];
  }
  if (p->is_string()) return p->get<std::string>();
  return p->is_null() ? "" : p->dump();
}

const char* quantile_key(double percentile) {
  if (percentile <= 50.0) return "p50";
  if (percentile <= 95.0) return "p95";
  return "p99";
}

std::string metric_title(const std::string& m) {
  if (m == "ttft_s") return "TTFT";
  if (m == "tpot_s") return "TPOT";
  if (m == "itl_s") return "ITL";
  if (m == "e2e_s") return "E2E";
  return m;
}

// "p99 TTFT 1.2 s" against the SLO, as a table row with a verdict.
std::string slo_cell(const nlohmann::json& report, const SloLine& slo) {
  const double v = get(report, {"latency", slo.metric.c_str(), quantile_key(slo.percentile)}, NAN);
  const bool ok = std::isfinite(v) && v <= slo.threshold_s;
  return escape(seconds(v)) + " vs " + escape(seconds(slo.threshold_s)) + " <span class=\"" + (ok ? "ok\">meets" : "bad\">misses") +
         "</span>";
}

// CDF of a streamed histogram: its quantiles at 0.5% steps (within the histogram's 0.1% error).
svg::Series cdf_series(const LogHistogram& h, const std::string& name, const char* color) {
  svg::Series s{name, color, {}, false, false, false};
  if (h.count() == 0) return s;
  s.points.push_back({h.min(), 0.0});
  for (int i = 1; i <= 200; ++i) {
    const double q = i / 200.0;
    s.points.push_back({h.quantile(q), q});
  }
  return s;
}

std::string cdf_chart(const std::string& id, const std::string& title, const LogHistogram& h, const char* color,
                      const std::string& metric, const std::vector<SloLine>& slos) {
  svg::Chart c;
  c.id = id;
  c.title = title;
  c.subtitle = h.count() ? fmt("%.0f requests", static_cast<double>(h.count())) + ", p50 " + seconds(h.quantile(0.5)) + ", p99 " +
                               seconds(h.quantile(0.99))
                         : "no samples";
  c.x.label = "seconds";
  c.x.log = h.count() > 0 && h.min() > 0 && h.max() / h.min() > 30.0;
  c.y.label = "fraction of requests";
  c.y.min = 0.0;
  c.y.max = 1.0;
  c.series.push_back(cdf_series(h, metric_title(metric), color));
  c.hlines.push_back({0.99, "p99", kGrey});
  for (const auto& slo : slos) {
    if (slo.metric == metric) c.vlines.push_back({slo.threshold_s, "SLO p" + fmt("%g", slo.percentile) + " " + seconds(slo.threshold_s), kRed});
  }
  return svg::render(c);
}

// Mid-bucket time axis for the timeline.
double bucket_mid_s(const Timeline& t, std::size_t i) {
  return ns_to_seconds(t.bucket_width_ns()) * (static_cast<double>(i) + 0.5);
}

std::string timeline_charts(const RunRecorder& rec) {
  const Timeline& tl = rec.timeline();
  const auto& b = tl.buckets();
  const double width_s = ns_to_seconds(tl.bucket_width_ns());
  const std::string per = "per " + seconds(width_s) + " bucket";
  svg::Series tok{"output tokens/s", kBlue, {}, false, false, false};
  svg::Series req{"completed", kGreen, {}, false, false, false};
  svg::Series arr{"arrived", kGrey, {}, true, false, false};
  svg::Series q_mean{"mean", kOrange, {}, false, false, false}, q_max{"max", kRed, {}, true, false, false};
  svg::Series bs_mean{"mean", kBlue, {}, false, false, false}, bs_max{"max", kPurple, {}, true, false, false};
  svg::Series kv_mean{"mean", kGreen, {}, false, false, false}, kv_max{"max", kRed, {}, true, false, false};
  for (std::size_t i = 0; i < b.size(); ++i) {
    const double x = bucket_mid_s(tl, i);
    const double n = static_cast<double>(b[i].iterations);
    tok.points.push_back({x, static_cast<double>(b[i].output_tokens) / width_s});
    req.points.push_back({x, static_cast<double>(b[i].completed) / width_s});
    arr.points.push_back({x, static_cast<double>(b[i].arrived) / width_s});
    q_mean.points.push_back({x, n > 0 ? b[i].waiting_sum / n : 0.0});
    q_max.points.push_back({x, static_cast<double>(b[i].waiting_max)});
    bs_mean.points.push_back({x, n > 0 ? b[i].seqs_sum / n : 0.0});
    bs_max.points.push_back({x, static_cast<double>(b[i].seqs_max)});
    kv_mean.points.push_back({x, n > 0 ? 100.0 * b[i].kv_frac_sum / n : 0.0});
    kv_max.points.push_back({x, 100.0 * b[i].kv_frac_max});
  }
  // All timeline charts share the time axis; `y_max` pins percentages to 100.
  auto chart = [&](const char* id, const char* title, const std::string& what, const char* y_label,
                   std::vector<svg::Series> series, std::optional<double> y_max = std::nullopt) {
    svg::Chart c;
    c.id = id;
    c.title = title;
    c.subtitle = what + ", " + per;
    c.x.label = "simulated time (s)";
    c.y.label = y_label;
    c.y.max = y_max;
    c.series = std::move(series);
    return svg::render(c);
  };
  return chart("chart-throughput", "Throughput over time", "tokens sampled per second", "output tokens/s", {tok}) +
         chart("chart-requests", "Arrivals and completions over time", "requests per second", "requests/s", {arr, req}) +
         chart("chart-queue", "Queue length over time", "waiting requests after each scheduling step", "requests waiting",
               {q_mean, q_max}) +
         chart("chart-batch", "Batch size over time", "sequences per iteration", "sequences", {bs_mean, bs_max}) +
         chart("chart-kv", "KV-cache usage over time", "blocks in use after each scheduling step", "% of KV blocks", {kv_mean, kv_max},
               100.0);
}

const char* phase_color(RequestPhase p) {
  switch (p) {
    case RequestPhase::queued: return "#b9c2cc";
    case RequestPhase::prefill: return kOrange;
    case RequestPhase::decode: return kBlue;
    case RequestPhase::preempted: return kRed;
    case RequestPhase::rejected: return "#000000";
  }
  return kGrey;
}

std::string gantt_chart(const RunRecorder& rec) {
  svg::Gantt g;
  g.id = "chart-gantt";
  g.title = "Request timeline (sample)";
  const auto& sample = rec.sample();
  if (!sample.empty()) {
    g.subtitle = "requests " + std::to_string(sample.front().id) + " to " + std::to_string(sample.back().id) +
                 " in arrival order (the middle of the run): queueing, prefill, decode and preemption";
  }
  g.x_label = "simulated time (s)";
  for (const RequestPhase p : {RequestPhase::queued, RequestPhase::prefill, RequestPhase::decode, RequestPhase::preempted}) {
    g.legend.push_back({request_phase_name(p), phase_color(p)});
  }
  for (const auto& r : sample) {
    svg::GanttRow row;
    row.label = "#" + std::to_string(r.id);
    for (const auto& s : r.spans) {
      const std::string tip = "request " + std::to_string(r.id) + " (" + std::to_string(r.prompt_tokens) + " in, " +
                              std::to_string(r.output_tokens) + " out): " + request_phase_name(s.phase) + " " +
                              seconds(ns_to_seconds(s.start_ns)) + " to " + seconds(ns_to_seconds(s.end_ns));
      row.bars.push_back({ns_to_seconds(s.start_ns), ns_to_seconds(s.end_ns), phase_color(s.phase), tip});
    }
    g.rows.push_back(std::move(row));
  }
  return svg::render(g);
}

// The model's ops for one batch shape on the hardware's roofline: x = FLOPs per byte, y = FLOP/s
// the cost model predicts (per-launch FLOPs over per-launch time, overheads included).
void add_op_marks(svg::Chart& c, const Scenario& s, const BatchShape& shape, const char* color, const char* phase, int& skipped) {
  std::vector<Op> ops;
  build_iteration_ops(s.model, shape, s.precision, ops);
  for (const Op& op : ops) {
    if (op.flops <= 0.0 || op.bytes <= 0.0) {
      ++skipped;
      continue;
    }
    const KernelTime k = estimate(op, s.hw, s.precision.weights);
    const double ai = op.flops / op.bytes;
    const double rate = op.flops / k.time_s;
    const std::string tip = std::string(phase) + " " + op.name + ": " + format_number(op.flops) + " FLOP, " + format_number(op.bytes) +
                            " B per launch (x" + std::to_string(op.count) + "), " + fmt("%.3g", ai) + " FLOP/B, " + seconds(k.time_s) +
                            ", " + bound_name(k.bound) + "-bound, " + pct(rate / s.hw.peak_flops(s.precision.weights)) + " of peak";
    c.marks.push_back({ai, rate, op.name, color, tip});
  }
}

// The roofline chart's frame: log-log, intensity against attained FLOP/s.
svg::Chart roofline_axes(const std::string& title, const std::string& subtitle) {
  svg::Chart c;
  c.id = "chart-roofline";
  c.title = title;
  c.subtitle = subtitle;
  c.width = 1140;
  c.height = 420;
  c.x.label = "arithmetic intensity (FLOP / byte)";
  c.x.log = true;
  c.y.label = "attained FLOP/s (cost model)";
  c.y.log = true;
  return c;
}

// The roof of `hw` at `dtype` (HBM slope, compute ceiling, the CUDA-core FP32 ceiling, the ridge)
// on log axes spanning the chart's marks and the ridge point.
void add_roof(svg::Chart& c, const HwProfile& hw, Dtype dtype) {
  double lo = 1e9, hi = 1e-9;
  for (const auto& m : c.marks) lo = std::min(lo, m.x), hi = std::max(hi, m.x);
  const double bw = hw.hbm_bandwidth_bytes_per_s;
  const double peak = hw.peak_flops(dtype);
  const double ridge = peak / bw;
  lo = std::pow(10.0, std::floor(std::log10(std::min(lo, ridge) / 2)));
  hi = std::pow(10.0, std::ceil(std::log10(std::max(hi, ridge) * 2)));
  c.x.min = lo;
  c.x.max = hi;
  c.y.max = std::pow(10.0, std::ceil(std::log10(peak * 3)));
  c.series.push_back({"roof: " + format_number(bw) + "B/s HBM, " + format_number(peak) + "FLOP/s " + dtype_name(dtype),
                      kGrey,
                      {{lo, lo * bw}, {ridge, peak}, {hi, peak}},
                      false, false, false});
  const double vec = hw.vector_fp32_flops_per_s;
  if (vec > 0.0) {
    c.series.push_back({"CUDA-core FP32 roof", "#b0b0b0", {{lo, std::min(lo * bw, vec)}, {vec / bw, vec}, {hi, vec}}, true, false, false});
  }
  c.vlines.push_back({ridge, "ridge " + fmt("%.0f", ridge) + " FLOP/B", kPurple});
}

std::string roofline_chart(const Scenario& s, const RunRecorder& rec, std::string& note) {
  const ShapeSums& sh = rec.shapes();
  BatchShape decode, prefill;
  const auto decode_b = sh.decode_iterations ? std::max<std::int64_t>(1, std::llround(static_cast<double>(sh.decode_seqs) / sh.decode_iterations)) : 1;
  const auto decode_ctx = sh.decode_seqs ? std::llround(sh.decode_kv_tokens / static_cast<double>(sh.decode_seqs)) : 512;
  for (std::int64_t i = 0; i < decode_b; ++i) decode.add_decode(decode_ctx);
  const auto prefill_b = sh.prefill_iterations ? std::max<std::int64_t>(1, std::llround(static_cast<double>(sh.prefill_seqs) / sh.prefill_iterations)) : 1;
  const auto prefill_len = sh.prefill_seqs ? std::max<std::int64_t>(1, std::llround(static_cast<double>(sh.prefill_tokens) / sh.prefill_seqs)) : 512;
  for (std::int64_t i = 0; i < prefill_b; ++i) prefill.add_prefill(prefill_len, 0, true);

  svg::Chart c = roofline_axes("Roofline: the model's ops on " + s.hw.display_name,
                                "mean decode batch " + std::to_string(decode_b) + " x context " + std::to_string(decode_ctx) +
                                    ", mean prefill batch " + std::to_string(prefill_b) + " x " + std::to_string(prefill_len) +
                                    " tokens; hover a point for details");
  int skipped = 0;
  add_op_marks(c, s, decode, kBlue, "decode", skipped);
  add_op_marks(c, s, prefill, kOrange, "prefill", skipped);
  add_roof(c, s.hw, s.precision.weights);
  c.series.push_back({"decode ops", kBlue, {}, false, false, false});
  c.series.push_back({"prefill ops", kOrange, {}, false, false, false});
  note = skipped ? std::to_string(skipped) + " ops without FLOPs (embedding lookup, KV writes) are off the chart." : "";
  return svg::render(c);
}

// A profile's provenance: its kind and the method's first sentence, the rest folded away (a
// derived profile's method runs to a page).
std::string provenance_cell(const std::string& kind, const std::string& method) {
  std::size_t cut = method.find(". ");
  if (cut == std::string::npos || cut > 200) cut = std::min<std::size_t>(method.size(), 200);
  else ++cut;  // keep the full stop
  const std::string head = "<b>" + escape(kind) + "</b>: " + escape(method.substr(0, cut));
  if (cut >= method.size()) return head;
  return head + "<details><summary>more</summary><div>" + escape(method.substr(cut)) + "</div></details>";
}

void page_foot(std::ostream& os, const std::string& extra) {
  os << "<p class=\"foot\">Generated by servesim " << SERVESIM_VERSION
     << ". Self-contained: no scripts, nothing loaded from the network. Hover chart elements for values." << extra << "</p>\n</body></html>\n";
}

}  // namespace

void write_run_html(std::ostream& os, const Scenario& s, const SimResult& res, const nlohmann::json& r, const RunRecorder& rec,
                    const std::vector<SloLine>& slos) {
  const std::string title = "servesim: " + s.name + " — " + s.model.name + " on " + s.hw.name;
  page_head(os, title);
  os << "<h1>" << escape(title) << "</h1>\n<div class=\"sub\">seed " << s.seed << ", " << get(r, {"requests", "arrived"})
     << " requests over " << escape(seconds(get(r, {"sim", "simulated_s"}))) << " simulated</div>\n";

  os << "<div class=\"cards\">\n";
  const auto& prov = r["hardware"]["provenance"];
  const Dtype gemm_dtype = w8a8_dtype(s.precision.quant).value_or(s.precision.weights);  // the peak the GEMMs run against
  Rows hw = {{"GPU", escape(s.hw.display_name) + " (" + escape(s.hw.name) + ")"},
             {"memory", escape(format_number(s.hw.memory_bytes)) + "B, HBM " + escape(format_number(s.hw.hbm_bandwidth_bytes_per_s)) + "B/s"},
             {"peak", escape(format_number(s.hw.peak_flops(gemm_dtype))) + "FLOP/s " + dtype_name(gemm_dtype)},
             {"provenance", provenance_cell(str(prov, {"kind"}), str(prov, {"method"}))}};
  if (prov.contains("sources") && prov["sources"].is_array() && !prov["sources"].empty()) {
    std::string src = "<details><summary>" + std::to_string(prov["sources"].size()) + " sources</summary>";
    for (const auto& x : prov["sources"]) src += "<div>" + escape(x.is_string() ? x.get<std::string>() : x.dump()) + "</div>";
    hw.push_back({"sources", src + "</details>"});
  }
  for (const char* k : {"gpu", "driver", "cuda", "date"}) {
    if (prov.contains(k)) hw.push_back({k, escape(str(prov, {k}))});
  }
  card(os, "Hardware", hw);
  card(os, "Model",
       {{"name", escape(s.model.name) + " (" + escape(s.model.family) + ")"},
        {"parameters", escape(format_number(s.model.total_params()))},
        {"layers / hidden", std::to_string(s.model.num_layers) + " / " + std::to_string(s.model.hidden_size)},
        {"heads (q / kv)", std::to_string(s.model.num_attention_heads) + " / " + std::to_string(s.model.num_kv_heads)},
        {"precision", escape(describe_precision(s.precision, s.model.is_moe() ? s.engine.profile.kernels.moe_quant_kernels[static_cast<std::size_t>(s.precision.quant)]
                                                                                : QuantKernel::auto_))},
        {"layout", escape(describe_layout(s.parallel)) + ", " + count(get(r, {"cluster", "replicas"}), "replica") + " on " +
                       count(get(r, {"cluster", "gpus"}), "GPU")},
        {"weights", escape(format_number(get(r, {"memory", "weight_bytes"}))) + "B"},
        {"KV per token", escape(format_number(get(r, {"memory", "kv_bytes_per_token"}))) + "B" +
                             (s.model.has_sliding_window() && s.engine.profile.kv_windowed_layers == KvWindowedLayers::full
                                  ? " (windowed layers hold the whole sequence: engine kv_cache_windowed_layers full)"
                                  : "")}});
  const EngineProfile& engine = s.engine.profile;
  Rows policy = {{"engine", escape(engine.display_name == engine.name ? engine.name : engine.name + " (" + engine.display_name + ")")},
                 {"scheduler", escape(str(r, {"scenario", "engine", "scheduler", "impl"}))},
                 {"max_num_seqs", std::to_string(s.engine.max_num_seqs)},
                 {"max_num_batched_tokens", std::to_string(s.engine.max_num_batched_tokens)},
                 {"block_size", std::to_string(s.engine.block_size)},
                 {"gpu_memory_utilization", fmt("%g", s.engine.gpu_memory_utilization)},
                 {"KV capacity", escape(format_number(get(r, {"kv_cache", "capacity_tokens"}))) + " tokens"},
                 {"CUDA graphs", s.engine.launch.cuda_graphs ? "on (decode)" : "off"},
                 {"requests", std::to_string(static_cast<long long>(get(r, {"requests", "arrived"})))},
                 {"arrivals", escape(describe_arrival(s.workload.arrival))}};
  for (const RequestClass& c : s.workload.classes) {
    const std::string tag = s.workload.classes.size() > 1 ? " (" + c.name + ")" : "";
    policy.push_back({"prompt tokens" + tag, escape(describe_lengths(c.prompt_tokens))});
    policy.push_back({"output tokens" + tag, escape(describe_lengths(c.output_tokens))});
  }
  card(os, "Policy and workload", policy);
  Rows km;
  for (const char* m : {"ttft_s", "tpot_s", "e2e_s"}) {
    km.push_back({metric_title(m) + " p50 / p99", escape(seconds(get(r, {"latency", m, "p50"}))) + " / " + escape(seconds(get(r, {"latency", m, "p99"})))});
  }
  for (const auto& slo : slos) km.push_back({"SLO " + metric_title(slo.metric) + " p" + fmt("%g", slo.percentile), slo_cell(r, slo)});
  if (slos.empty()) km.push_back({"SLO", "none set (no latency target)"});
  km.push_back({"throughput", fmt("%.2f", get(r, {"throughput", "requests_per_s"})) + " req/s, " +
                                  fmt("%.0f", get(r, {"throughput", "output_tokens_per_s"})) + " output tok/s"});
  km.push_back({"requests", fmt("%.0f", get(r, {"requests", "completed"})) + " completed, " + fmt("%.0f", get(r, {"requests", "rejected"})) +
                                " rejected, " + fmt("%.0f", get(r, {"requests", "preempted"})) + " preempted"});
  km.push_back({"KV cache", "peak " + pct(get(r, {"kv_cache", "peak_used_frac"})) + ", mean " + pct(get(r, {"kv_cache", "mean_used_frac"}))});
  km.push_back({"batch", "mean " + fmt("%.1f", get(r, {"batch", "mean_size"})) + ", max " + fmt("%.0f", get(r, {"batch", "max_size"}))});
  km.push_back({"GPU", "busy " + pct(get(r, {"gpu", "busy_frac"})) + ", HBM bandwidth " + pct(get(r, {"gpu", "hbm_bw_util_frac"}))});
  card(os, "Key metrics", km);
  os << "</div>\n";

  const RunMetrics& m = res.metrics;
  os << "<h2>Latency distributions</h2>\n<div class=\"grid\">\n";
  os << cdf_chart("chart-cdf-ttft", "TTFT: time to first token", m.ttft_s, kOrange, "ttft_s", slos);
  os << cdf_chart("chart-cdf-tpot", "TPOT: time per output token", m.tpot_s, kBlue, "tpot_s", slos);
  os << cdf_chart("chart-cdf-e2e", "E2E: end-to-end latency", m.e2e_s, kGreen, "e2e_s", slos);
  os << "</div>\n<h2>Over time</h2>\n<div class=\"grid\">\n" << timeline_charts(rec) << "</div>\n";
  os << "<h2>Queueing</h2>\n<div class=\"grid\">\n" << gantt_chart(rec) << "</div>\n";
  std::string note;
  os << "<h2>Roofline</h2>\n<div class=\"grid\">\n" << roofline_chart(s, rec, note) << "</div>\n";
  page_foot(os, note.empty() ? "" : " " + escape(note));
}

std::vector<SloLine> slo_lines(const Scenario& scenario) {
  std::vector<SloLine> slos;
  const SloConfig& slo = scenario.workload.classes.front().slo;
  const double pct = 100.0 * slo.percentile;
  if (slo.ttft_s > 0.0) slos.push_back({"ttft_s", pct, slo.ttft_s});
  if (slo.tpot_s > 0.0) slos.push_back({"tpot_s", pct, slo.tpot_s});
  if (slo.e2e_s > 0.0) slos.push_back({"e2e_s", pct, slo.e2e_s});
  return slos;
}

LoadPoint load_point_from_report(double load, const nlohmann::json& r) {
  LoadPoint p;
  p.load = load;
  p.ttft_p50_s = get(r, {"latency", "ttft_s", "p50"});
  p.ttft_p99_s = get(r, {"latency", "ttft_s", "p99"});
  p.tpot_p50_s = get(r, {"latency", "tpot_s", "p50"});
  p.tpot_p99_s = get(r, {"latency", "tpot_s", "p99"});
  p.e2e_p50_s = get(r, {"latency", "e2e_s", "p50"});
  p.e2e_p99_s = get(r, {"latency", "e2e_s", "p99"});
  p.requests_per_s = get(r, {"throughput", "requests_per_s"});
  p.output_tokens_per_s = get(r, {"throughput", "output_tokens_per_s"});
  return p;
}

namespace {
struct LoadMetric {
  const char* key;
  const char* title;
  double LoadPoint::*p50;
  double LoadPoint::*p99;
  const char* color;
};
constexpr LoadMetric kLoadMetrics[] = {{"ttft_s", "TTFT against load", &LoadPoint::ttft_p50_s, &LoadPoint::ttft_p99_s, kOrange},
                                       {"tpot_s", "TPOT against load", &LoadPoint::tpot_p50_s, &LoadPoint::tpot_p99_s, kBlue},
                                       {"e2e_s", "E2E latency against load", &LoadPoint::e2e_p50_s, &LoadPoint::e2e_p99_s, kGreen}};

std::vector<LoadPoint> by_load(std::vector<LoadPoint> pts) {
  std::stable_sort(pts.begin(), pts.end(), [](const LoadPoint& a, const LoadPoint& b) { return a.load < b.load; });
  return pts;
}

// One metric's p50 and p99 against load, the SLO's line for it and the marked load.
svg::Chart latency_chart(const std::string& id, const LoadMetric& mt, const std::vector<LoadPoint>& pts, const LoadPage& page,
                         const std::optional<double>& marked) {
  svg::Chart c;
  c.id = id;
  c.title = mt.title;
  c.x.label = page.load_label;
  c.y.label = "seconds";
  svg::Series p50{"p50", mt.color, {}, true, true, false}, p99{"p99", mt.color, {}, false, true, false};
  for (const auto& p : pts) p50.points.push_back({p.load, p.*mt.p50}), p99.points.push_back({p.load, p.*mt.p99});
  c.series = {p50, p99};
  for (const auto& slo : page.slos) {
    if (slo.metric == mt.key) c.hlines.push_back({slo.threshold_s, "SLO p" + fmt("%g", slo.percentile), kRed});
  }
  if (marked) c.vlines.push_back({*marked, page.marked_label, kPurple});
  return c;
}

// The summary card: the page's facts, the marked load, the SLO targets, the levels meeting it.
void load_summary(std::ostream& os, const LoadPage& page) {
  Rows facts;
  for (const auto& [k, v] : page.facts) facts.push_back({k, escape(v)});
  if (page.marked_load) facts.push_back({page.marked_label, escape(fmt("%.4g", *page.marked_load))});
  for (const auto& slo : page.slos) {
    facts.push_back({"SLO " + metric_title(slo.metric) + " p" + fmt("%g", slo.percentile), escape(seconds(slo.threshold_s))});
  }
  std::size_t meets = 0, judged = 0;
  for (const auto& p : page.points) {
    if (p.meets_slo) ++judged, meets += *p.meets_slo ? 1 : 0;
  }
  if (judged) facts.push_back({"levels meeting the SLO", std::to_string(meets) + " of " + std::to_string(judged)});
  os << "<div class=\"cards\">\n";
  card(os, "Summary", facts);
  os << "</div>\n";
}

// One configuration's latency, throughput and completed requests against load (saturate, sweep).
void single_load_charts(std::ostream& os, const LoadPage& page) {
  const std::vector<LoadPoint> pts = by_load(page.points);
  bool judged = false;
  for (const auto& p : pts) judged = judged || p.meets_slo.has_value();
  os << "<h2>Latency and throughput against load</h2>\n<div class=\"grid\">\n";
  for (const auto& mt : kLoadMetrics) os << svg::render(latency_chart(std::string("chart-load-") + mt.key, mt, pts, page, page.marked_load));
  svg::Chart c;
  c.id = "chart-load-throughput";
  c.title = "Throughput against load";
  c.x.label = page.load_label;
  c.y.label = "output tokens/s";
  svg::Series tok{"output tokens/s", kBlue, {}, false, true, false};
  svg::Series ok{"meets SLO", kGreen, {}, false, true, false}, bad{"misses SLO", kRed, {}, false, true, false};
  for (const auto& p : pts) {
    tok.points.push_back({p.load, p.output_tokens_per_s});
  }
  c.series = {tok};
  for (const auto& p : pts) {
    if (p.meets_slo) c.marks.push_back({p.load, p.output_tokens_per_s, "", *p.meets_slo ? kGreen : kRed,
                                        fmt("%.4g", p.load) + ": " + (*p.meets_slo ? "meets" : "misses") + " the SLO"});
  }
  if (judged) c.series.push_back(ok), c.series.push_back(bad);
  if (page.marked_load) c.vlines.push_back({*page.marked_load, page.marked_label, kPurple});
  os << svg::render(c);
  c = svg::Chart{};
  c.id = "chart-load-requests";
  c.title = "Completed requests against load";
  c.x.label = page.load_label;
  c.y.label = "requests/s";
  svg::Series rps{"completed req/s", kGreen, {}, false, true, false};
  for (const auto& p : pts) rps.points.push_back({p.load, p.requests_per_s});
  c.series = {rps};
  os << svg::render(c) << "</div>\n";
}

// Cost against latency, a point per configuration; the Pareto front joined and labelled.
void cost_chart(std::ostream& os, const LoadPage& page) {
  const std::vector<bool> front = pareto_front(page.costs);
  svg::Chart c;
  c.id = "chart-cost-latency";
  c.title = "Cost against latency";
  c.subtitle = page.costs_note;
  c.x.label = page.latency_label;
  c.y.label = page.cost_label;
  double lo = 0.0, hi = 0.0;
  std::vector<std::size_t> on_front;
  for (std::size_t i = 0; i < page.costs.size(); ++i) {
    const CostPoint& p = page.costs[i];
    lo = i == 0 ? p.cost : std::min(lo, p.cost), hi = std::max(hi, p.cost);
    c.marks.push_back({p.latency, p.cost, front[i] ? p.name : "", front[i] ? kPurple : kGrey,
                       (front[i] ? "Pareto front: " : "") + p.tooltip});
    if (front[i]) on_front.push_back(i);
  }
  c.y.log = lo > 0.0 && hi > 20.0 * lo;  // costs a decade or more apart
  std::stable_sort(on_front.begin(), on_front.end(), [&](std::size_t a, std::size_t b) { return page.costs[a].latency < page.costs[b].latency; });
  svg::Series line{"Pareto front (nothing both cheaper and faster)", kPurple, {}, true, false, false};
  for (const std::size_t i : on_front) line.points.push_back({page.costs[i].latency, page.costs[i].cost});
  c.series = {line, {"dominated", kGrey, {}, false, false, false}};
  c.vlines.push_back({1.0, "SLO target", kRed});
  os << "<h2>Cost against latency</h2>\n<div class=\"grid\">\n" << svg::render(c) << "</div>\n";
}

// Per configuration: its name and note, then TTFT and TPOT p50/p99 against load.
void curve_charts(std::ostream& os, const LoadPage& page) {
  os << "<h2>Latency against offered rate, per configuration</h2>\n";
  if (page.curves.empty()) os << "<div class=\"sub\">No configuration has a search to draw (none fits, or none has a saturation rate).</div>\n";
  for (std::size_t i = 0; i < page.curves.size(); ++i) {
    const LoadCurve& curve = page.curves[i];
    const std::vector<LoadPoint> pts = by_load(curve.points);
    os << "<h3>" << escape(curve.name) << "</h3>\n<div class=\"sub\">" << escape(curve.note) << "</div>\n<div class=\"grid\">\n";
    for (const auto& mt : kLoadMetrics) {
      if (std::string(mt.key) == "e2e_s") continue;
      os << svg::render(latency_chart("chart-load-" + std::string(mt.key) + "-" + std::to_string(i), mt, pts, page, curve.marked_load));
    }
    os << "</div>\n";
  }
}
}  // namespace

std::vector<bool> pareto_front(const std::vector<CostPoint>& points) {
  std::vector<bool> front(points.size(), true);
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (const CostPoint& q : points) {
      const CostPoint& p = points[i];
      if (q.latency <= p.latency && q.cost <= p.cost && (q.latency < p.latency || q.cost < p.cost)) {
        front[i] = false;
        break;
      }
    }
  }
  return front;
}

void write_load_html(std::ostream& os, const LoadPage& page) {
  page_head(os, page.title);
  std::size_t levels = page.points.size();
  for (const LoadCurve& c : page.curves) levels += c.points.size();
  os << "<h1>" << escape(page.title) << "</h1>\n<div class=\"sub\">";
  if (page.per_configuration) os << page.curves.size() << " configurations, ";
  os << levels << " load levels</div>\n";
  load_summary(os, page);
  if (!page.costs.empty()) cost_chart(os, page);
  if (!page.per_configuration) single_load_charts(os, page);
  if (page.per_configuration) curve_charts(os, page);
  page_foot(os, "");
}

void write_roofline_html(std::ostream& os, const RooflinePage& page) {
  page_head(os, page.title);
  os << "<h1>" << escape(page.title) << "</h1>\n<div class=\"sub\">" << page.points.size() << " ops on the roofline</div>\n";
  Rows facts;
  for (const auto& [k, v] : page.facts) facts.push_back({k, escape(v)});
  for (const auto& why : page.why) facts.push_back({"why", escape(why)});
  os << "<div class=\"cards\">\n";
  card(os, "Step", facts);
  os << "</div>\n<h2>Roofline</h2>\n<div class=\"grid\">\n";
  svg::Chart c = roofline_axes("Roofline: the step's ops on " + page.hw->display_name,
                                "each op at its arithmetic intensity and the FLOP/s the cost model gives it; hover a point for details");
  int skipped = 0;
  for (const RooflinePoint& p : page.points) {
    if (p.intensity <= 0.0 || p.flops_per_s <= 0.0) {
      ++skipped;
      continue;
    }
    c.marks.push_back({p.intensity, p.flops_per_s, p.name, kBlue, p.tip});
  }
  add_roof(c, *page.hw, page.dtype);
  c.series.push_back({"ops", kBlue, {}, false, false, false});
  os << svg::render(c) << "</div>\n";
  page_foot(os, skipped ? " " + std::to_string(skipped) + " ops without FLOPs (embedding lookup, KV writes) are off the chart." : "");
}

}  // namespace servesim
