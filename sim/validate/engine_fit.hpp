// An engine profile's host terms fitted to a user's own benchmark runs (`servesim calibrate engine
// FILE... -o PROFILE.json --base ENGINE`): the per-step, per-sequence and decode-step host work and
// the front end's latency per request, chosen so that servesim's replay of each file (against.hpp)
// gives its measured TTFT and TPOT, and each file's error when it is left out of the fit.
#pragma once
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/validate/against.hpp"

namespace servesim {

// The terms fitted, in the order of kHostTermKeys (seconds).
using HostTerms = std::array<double, 4>;
// Their keys under "host" in an engine profile (sim/io/engine_io.cpp): per step (every step), per
// sequence per step, more per step without a prefill (decode-only: the prefill-vs-decode term),
// and the front end's latency per request (TTFT and E2E only).
inline constexpr std::array<const char*, 4> kHostTermKeys = {"overhead_per_step_s", "overhead_per_seq_s",
                                                             "overhead_per_decode_step_s", "frontend_latency_s"};

struct EngineFitOptions {
  AgainstOptions against;  // how each file becomes a scenario (--scenario, --set, --format)
  std::string base = "vllm";  // the profile whose other settings the fit keeps (name or path)
  std::string name;           // the fitted profile's name ("" = base's name + "-fitted")
  std::string command;        // provenance: the command line
  std::string date;           // provenance: YYYY-MM-DD
  bool work_limit = true;     // refuse a fit past the work budget (analysis/work_estimate.hpp)
};

// One file's TTFT and TPOT against servesim's at some terms: the signed errors shown (p50, or the
// mean where the file has no p50; absent metrics are 0 with an empty statistic), and
// log(predicted / measured) of every TTFT and TPOT statistic the file has (mean, p50, p90, p95,
// p99), which the fit makes small: the spread of TTFT across a load (how many steps a request
// waits) is what tells the per-step term from the front end's latency.
struct EngineFitScore {
  std::string file;
  std::string ttft_statistic, tpot_statistic;
  double ttft_error = 0.0, tpot_error = 0.0;
  std::vector<double> log_errors;
};

struct EngineFitResult {
  HostTerms base{}, fitted{};
  std::array<bool, 4> moved{};  // whether the runs' TTFT or TPOT respond to the term at all
  std::vector<EngineFitScore> at_base, in_sample, left_out;  // per file; left_out empty for one file
  std::vector<HostTerms> left_out_terms;  // the fit without each file
  nlohmann::json profile;  // the base profile with the fitted terms and their provenance
};

// InputError naming the file and key for a file that cannot be read or replayed, or one without
// a TTFT or TPOT statistic.
EngineFitResult fit_engine_profile(const std::vector<std::string>& files, const EngineFitOptions& options);

}  // namespace servesim
