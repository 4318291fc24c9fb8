// `servesim gen-trace SCENARIO.json --format azure|burstgpt|splitwise|jsonl --out FILE`: writes the
// scenario's request stream (arrivals, lengths, classes) as a trace in one of the formats the
// readers take. The project's sample traces in scenarios/traces/ are made this way.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/analysis/work_estimate.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/table_io.hpp"
#include "sim/io/trace_reader.hpp"
#include "sim/workload/workload.hpp"

namespace servesim::cli {

int cmd_gen_trace(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim gen-trace", "Write a scenario's request stream as a trace file");
  opts.add_options()("scenario", "scenario JSON file", cxxopts::value<std::string>())(
      "format", "azure, burstgpt, splitwise or jsonl", cxxopts::value<std::string>())(
      "out", "trace file to write", cxxopts::value<std::string>())("h,help", "show help");
  add_scenario_flags(opts);
  opts.parse_positional({"scenario"});
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("scenario")) throw InputError("servesim gen-trace", "", "missing SCENARIO.json");
  if (!p.count("format")) throw InputError("servesim gen-trace", "--format", "required (azure, burstgpt, splitwise, jsonl)");
  if (!p.count("out")) throw InputError("servesim gen-trace", "--out", "required");
  const std::string format = p["format"].as<std::string>();
  bool known = false;
  for (const auto& f : trace_formats()) known = known || f == format;
  if (!known) throw InputError("servesim gen-trace", "--format", "unknown format '" + format + "'");
  const std::string path = p["scenario"].as<std::string>();
  const Scenario s = scenario_source(p, path).load();
  // The trace is built in memory and written at the end (a failed run leaves no half-written
  // file): 1e7 rows are about 600 MB. Refused before generating when the scenario says how many;
  // a trace-driven workload (not counted ahead) is stopped at the limit.
  constexpr double kMaxRows = 1e7;
  if (const WorkEstimate e = estimate_work(s); e.bounded && e.requests > kMaxRows) {
    char asked[32];
    std::snprintf(asked, sizeof asked, "%.2g", e.requests);
    throw InputError(path, "workload.num_requests", std::string("gen-trace writes at most 1e7 requests; the workload has about ") + asked +
                                                        " (workload.num_requests, or duration_s x arrival rate)");
  }
  WorkloadGenerator gen(s.workload, s.seed);
  std::ostringstream os;
  if (format != "jsonl") os << trace_header_line(format) << "\n";
  const bool labelled = s.workload.classes.size() > 1;
  std::int64_t n = 0;
  while (auto r = gen.next()) {
    TraceRecord rec;
    rec.arrival_s = ns_to_seconds(r->arrival_ns);
    rec.prompt_tokens = r->prompt_tokens;
    rec.output_tokens = r->output_tokens;
    if (labelled) {
      rec.cls = s.workload.classes[r->cls].name;
      // Requests of one class share its system prompt: the prefix a prefix cache could reuse
      // (no length: a replay shares nothing unless workload.trace.prefix_tokens gives one).
      rec.prefix_id = rec.cls + "/system";
    }
    if (r->prefix_tokens > 0 && format == "jsonl") {
      // workload.shared_prefix: the prefix the request starts with, and its length. (A prompt
      // pool's whole-prompt repeats are not written: one prefix id per row.)
      rec.prefix_id = "prefix-" + std::to_string(r->prefix_id);
      rec.prefix_tokens = r->prefix_tokens;
    }
    os << trace_row_line(format, rec) << "\n";
    if (static_cast<double>(++n) > kMaxRows) throw InputError(path, "workload.num_requests", "gen-trace writes at most 1e7 requests: set workload.num_requests");
  }
  write_file(p["out"].as<std::string>(), os.str());
  std::cout << "wrote " << n << " requests to " << p["out"].as<std::string>() << "\n";
  return kExitOk;
}

}  // namespace servesim::cli
