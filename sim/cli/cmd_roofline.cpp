// `servesim roofline --model M --hw H --batch B --context C [--phase decode|prefill] [--prompt S]
//  [--quant Q] [--engine NAME] [--tp N] [--json] [--csv FILE] [--md FILE]`: the ops of the step
// `step` times (same options, same time), each against the roofline, and the time above it split
// into launch, small-shape and bandwidth parts, per op and in total.
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/analysis/roofline.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/query_options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/describe.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/table_io.hpp"

namespace servesim::cli {

namespace {

// Machine columns (JSON, CSV): seconds and raw counts.
Table raw_table(const RooflineResult& r) {
  Table t;
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    const RooflineOp& o = r.ops[i];
    t.set(i, "name", o.name);
    t.set(i, "count", o.count);
    t.set(i, "flops", o.flops);
    t.set(i, "bytes", o.bytes);
    t.set(i, "arithmetic_intensity", o.arithmetic_intensity);
    t.set(i, "bound", o.bound);
    t.set(i, "achieved_bound", o.achieved_bound);
    t.set(i, "roofline_time_s", o.roofline_time_s);
    t.set(i, "predicted_time_s", o.predicted_time_s);
    t.set(i, "peak_frac", o.peak_frac);
    t.set(i, "gap_launch_s", o.gap_launch_s);
    t.set(i, "gap_small_shape_s", o.gap_small_shape_s);
    t.set(i, "gap_bandwidth_s", o.gap_bandwidth_s);
    t.set(i, "achieved_flops_per_s", o.achieved_flops_per_s);
    t.set(i, "mfu_frac", o.mfu_frac);
    t.set(i, "achieved_bandwidth_bytes_per_s", o.achieved_bytes_per_s);
    t.set(i, "hbm_bandwidth_frac", o.hbm_bandwidth_frac);
  }
  return t;
}

std::string num(const char* f, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// People columns (text, markdown): readable units, the gap parts last.
Table readable_table(const RooflineResult& r) {
  Table t;
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    const RooflineOp& o = r.ops[i];
    t.set(i, "op", o.name);
    t.set(i, "count", o.count);
    t.set(i, "GFLOP", num("%.3f", o.flops / 1e9));
    t.set(i, "MB", num("%.3f", o.bytes / 1e6));
    t.set(i, "FLOP/B", num("%.1f", o.arithmetic_intensity));
    t.set(i, "roofline bound", o.bound);
    t.set(i, "roofline", format_duration(o.roofline_time_s));
    t.set(i, "predicted", format_duration(o.predicted_time_s));
    t.set(i, "of peak", num("%.0f%%", 100.0 * o.peak_frac));
    t.set(i, "MFU", num(o.mfu_frac < 0.1 ? "%.2f%%" : "%.1f%%", 100.0 * o.mfu_frac));
    t.set(i, "TB/s", num("%.2f", o.achieved_bytes_per_s / 1e12));
    t.set(i, "of HBM", num("%.0f%%", 100.0 * o.hbm_bandwidth_frac));
    t.set(i, "gap: launch", format_duration(o.gap_launch_s));
    t.set(i, "small shapes", format_duration(o.gap_small_shape_s));
    t.set(i, "bandwidth", format_duration(o.gap_bandwidth_s));
  }
  return t;
}

// The step and where its time goes, in three lines.
std::string summary(const std::string& head, const RooflineResult& r, const StepQuery& q) {
  const bool overlapped = q.engine && q.engine->launch.overlap_host;
  std::string s = head + ": step " + format_duration(r.step_time_s) + " = " +
                  step_split(r.step_time_s, r.host_s, r.launch_wait_s, overlapped) + "\n";
  if (q.engine) s += "  engine " + q.engine->name + " (" + q.engine->display_name + ")\n";
  s += "  GPU work " + format_duration(r.gpu_s) + " = roofline " + format_duration(r.roofline_s) + " (" +
       num("%.0f%%", r.gpu_s > 0.0 ? 100.0 * r.roofline_s / r.gpu_s : 0.0) + ") + launch " + format_duration(r.gap_launch_s) +
       " + small shapes " + format_duration(r.gap_small_shape_s) + " + bandwidth " + format_duration(r.gap_bandwidth_s) + "\n";
  s += "  ridge point " + num("%.1f", r.ridge_point_flops_per_byte) + " FLOP/byte (ops below it are memory-bound); attention " +
       num("%.0f%%", 100.0 * r.attention_share_frac) + " of GPU work\n";
  s += "  achieved over the step: " + num("%.3g", r.achieved_flops_per_s / 1e12) + " TFLOP/s = MFU " +
       num(r.mfu_frac < 0.1 ? "%.2f%%" : "%.1f%%", 100.0 * r.mfu_frac) + " of the " + num("%.4g", r.peak_flops_per_s / 1e12) +
       " TFLOP/s dense " + dtype_name(q.precision.weights) + " peak; " + num("%.3g", r.achieved_bytes_per_s / 1e12) + " TB/s = " +
       num("%.0f%%", 100.0 * r.hbm_bandwidth_frac) + " of the " + num("%.3g", r.hbm_bandwidth_bytes_per_s / 1e12) +
       " TB/s HBM datasheet (per op: MFU, TB/s and of HBM over its predicted time)\n";
  for (const std::string& why : r.why) s += "  why: " + why + "\n";
  return s;
}

// --html: the step's ops on the roofline, the step's figures and why lines in the card.
void write_page(const std::string& path, const std::string& head, const RooflineResult& r, const StepQuery& q,
                const std::vector<std::string>& args) {
  RooflinePage page;
  page.title = "roofline: " + head;
  page.hw = &q.hw;
  page.dtype = q.precision.weights;
  page.facts = {{"command", "servesim roofline " + join_args(args)},
                {"step", format_duration(r.step_time_s) + " (GPU " + format_duration(r.gpu_s) + ", roofline " + format_duration(r.roofline_s) + ")"},
                {"MFU", num("%.3g", 100.0 * r.mfu_frac) + "% (" + num("%.3g", r.achieved_flops_per_s / 1e12) + " of " +
                            num("%.4g", r.peak_flops_per_s / 1e12) + " TFLOP/s)"},
                {"bandwidth", num("%.3g", r.achieved_bytes_per_s / 1e12) + " TB/s (" + num("%.0f", 100.0 * r.hbm_bandwidth_frac) +
                                  "% of " + num("%.3g", r.hbm_bandwidth_bytes_per_s / 1e12) + " TB/s)"}};
  page.why = r.why;
  for (const RooflineOp& o : r.ops) {
    const double per_launch_s = o.count > 0 ? o.predicted_time_s / static_cast<double>(o.count) : 0.0;
    page.points.push_back({o.name, o.arithmetic_intensity, o.achieved_flops_per_s,
                           o.name + " x" + std::to_string(o.count) + ": " + num("%.3g", o.arithmetic_intensity) + " FLOP/B, " +
                               format_duration(per_launch_s) + " per launch, " + o.achieved_bound + "-bound, MFU " +
                               num("%.2g", 100.0 * o.mfu_frac) + "%, " + num("%.3g", o.achieved_bytes_per_s / 1e12) + " TB/s"});
  }
  std::ostringstream os;
  write_roofline_html(os, page);
  write_file(path, os.str());
}

}  // namespace

int cmd_roofline(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim roofline", "Per-op roofline of one iteration and the gap to the predicted time");
  add_query_options(opts);
  add_step_options(opts);
  opts.add_options()("h,help", "show help")(
      "html", "also write a page with the ops on the hardware's roofline (the run report's chart) to this file",
      cxxopts::value<std::string>());
  add_output_flags(opts);
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  const StepQuery q = load_query(p, "servesim roofline");
  const StepAsked s = read_step(p, q, "servesim roofline");
  const RooflineResult r = roofline(s.timed.ops, s.timed.step, q.hw, q.precision.weights, q.precision.quant);
  const Table raw = raw_table(r);
  const std::string head = q.model.name + " on " + q.hw.name + ", " + s.phase + ", batch " + std::to_string(s.batch) + ", context " +
                           std::to_string(s.context);
  if (p.count("json")) {
    nlohmann::json j = {{"model", q.model.name}, {"hw", q.hw.name}, {"phase", s.phase}, {"batch", s.batch}, {"context", s.context},
                        {"dtype", dtype_name(q.precision.weights)}, {"engine", q.engine ? q.engine->name : std::string("none")}, {"ridge_point_flops_per_byte", r.ridge_point_flops_per_byte},
                        {"step_time_s", r.step_time_s}, {"gpu_s", r.gpu_s}, {"roofline_s", r.roofline_s}, {"host_s", r.host_s},
                        {"launch_s", r.launch_s}, {"launch_wait_s", r.launch_wait_s}, {"attention_share_frac", r.attention_share_frac},
                        {"gap_totals", {{"launch_s", r.gap_launch_s}, {"small_shape_s", r.gap_small_shape_s}, {"bandwidth_s", r.gap_bandwidth_s}}},
                        {"flops", r.flops}, {"bytes", r.bytes}, {"peak_flops_per_s", r.peak_flops_per_s},
                        {"hbm_bandwidth_bytes_per_s", r.hbm_bandwidth_bytes_per_s}, {"achieved_flops_per_s", r.achieved_flops_per_s},
                        {"mfu_frac", r.mfu_frac}, {"achieved_bandwidth_bytes_per_s", r.achieved_bytes_per_s},
                        {"hbm_bandwidth_frac", r.hbm_bandwidth_frac}, {"why", r.why},
                        {"ops", table_to_json(raw)}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << summary(head, r, q) << "\n";
    write_text(std::cout, readable_table(r));
  }
  write_csv_if_asked(p, raw);
  if (p.count("html")) write_page(p["html"].as<std::string>(), head, r, q, args);
  if (p.count("md")) {
    std::ostringstream os;
    os << "# roofline: " << head << "\n\n`servesim roofline " << join_args(args) << "`\n\n```\n" << summary(head, r, q) << "```\n\n";
    write_markdown(os, readable_table(r));
    write_file(p["md"].as<std::string>(), os.str());
  }
  return kExitOk;
}

}  // namespace servesim::cli
