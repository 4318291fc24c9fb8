// `servesim calibrate engine`: on runs servesim wrote itself with known host terms, the fit finds
// those terms again; on the bundled example files it writes a profile that reads back, with its
// provenance and each file's error left out of the fit.
//
// Synthetic runs: four vllm bench serve result files of Llama-3.1-8B on h100-sxm, served with
// chunked prefill at a 512-token budget: one client with 256-token prompts (TTFT one step, every
// decode step decode-only), one client with 4096-token prompts (TTFT eight steps: the per-step
// term against the front end's latency), 16 clients, and a Poisson load (prefills sharing steps
// with decodes). Their measured figures are servesim's own replay of them on the `generic`
// engine with host terms set to per step 2.0 ms, per sequence 40 us, decode step 1.2 ms, front-end
// latency 6 ms (a serial host, so every term shows in the step time). The fit starts from
// generic's own terms (0.4 ms, 5 us, 0, 0).
// Bounds (data/validation/bounds.json), set before the first result: each fitted term within 10%
// of the one the files were written with (engine-fit/synthetic-terms), and every file's TTFT and
// TPOT within 1% after the fit (engine-fit/synthetic-files).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/validate/bounds.hpp"
#include "sim/validate/engine_fit.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {

constexpr HostTerms kTruth = {2.0e-3, 40e-6, 1.2e-3, 6e-3};
// The server's settings, the same for every run (and given to the fit).
const std::vector<std::string> kServer = {"engine.scheduler.impl=chunked-prefill", "engine.max_num_batched_tokens=512"};

struct Load {
  const char* name;
  nlohmann::json rate;  // "inf" or req/s
  nlohmann::json max_concurrency;
  int requests, prompt, output;
};

// A vllm bench serve result of `load` whose measured figures are servesim's replay of it on
// `profile`: mean / median / p99 of TTFT, TPOT, ITL and E2E, and the throughputs.
std::string synthetic_file(const std::string& dir, const Load& load, const std::string& profile) {
  nlohmann::json doc = {{"backend", "vllm"},      {"model_id", "meta-llama/Llama-3.1-8B-Instruct"},
                        {"num_prompts", load.requests}, {"request_rate", load.rate},
                        {"burstiness", 1.0},      {"max_concurrency", load.max_concurrency},
                        {"completed", load.requests}, {"failed", 0},
                        {"total_input_tokens", load.requests * load.prompt}, {"total_output_tokens", load.requests * load.output},
                        {"median_ttft_ms", 1.0}, {"median_tpot_ms", 1.0}};
  const std::string path = dir + "/" + load.name + ".json";
  write_file(path, doc.dump());
  AgainstOptions o;
  o.overrides = {"hardware=h100-sxm", "engine.profile=" + profile};
  o.overrides.insert(o.overrides.end(), kServer.begin(), kServer.end());
  const AgainstCase c = against_case(path, o);
  const SimResult res = simulate(c.scenario);
  const RunMetrics& m = res.metrics;
  const std::pair<const char*, const LogHistogram*> metrics[] = {{"ttft", &m.ttft_s}, {"tpot", &m.tpot_s}, {"itl", &m.itl_s}, {"e2el", &m.e2e_s}};
  for (const auto& entry : metrics) {
    const std::string name = entry.first;
    doc["mean_" + name + "_ms"] = 1e3 * entry.second->mean();
    doc["median_" + name + "_ms"] = 1e3 * entry.second->quantile(0.5);
    doc["p99_" + name + "_ms"] = 1e3 * entry.second->quantile(0.99);
  }
  doc["duration"] = ns_to_seconds(m.end_ns);
  doc["request_throughput"] = static_cast<double>(m.completed) / ns_to_seconds(m.end_ns);
  doc["output_throughput"] = static_cast<double>(m.output_tokens) / ns_to_seconds(m.end_ns);
  write_file(path, doc.dump(1));
  return path;
}

}  // namespace

TEST_CASE("calibrate engine recovers the host terms of runs servesim wrote with known ones") {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/servesim_engine_fit_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  nlohmann::json truth = load_json_file(data_dir() + "/scenarios/engines/generic.json");
  for (std::size_t j = 0; j < 4; ++j) truth["host"][kHostTermKeys[j]] = kTruth[j];
  truth["name"] = "truth";
  const std::string truth_path = dir + "/truth.json";
  write_file(truth_path, truth.dump());
  const Load loads[] = {{"c1_short", "inf", 1, 30, 256, 64},
                        {"c1_long", "inf", 1, 30, 4096, 64},
                        {"c16", "inf", 16, 120, 512, 128},
                        {"poisson8", 8.0, nullptr, 150, 1024, 96}};
  std::vector<std::string> files;
  for (const Load& l : loads) files.push_back(synthetic_file(dir, l, truth_path));

  EngineFitOptions o;
  o.against.overrides = {"hardware=h100-sxm"};
  o.against.overrides.insert(o.against.overrides.end(), kServer.begin(), kServer.end());
  o.base = "generic";
  o.command = "test";
  o.date = "2026-01-01";
  const EngineFitResult r = fit_engine_profile(files, o);
  for (std::size_t j = 0; j < 4; ++j) {
    const double rel = r.fitted[j] / kTruth[j] - 1.0;
    std::printf("%-28s written %9.4g  fitted %9.4g  (%+.1f%%; started at %.4g)\n", kHostTermKeys[j], kTruth[j], r.fitted[j], 100 * rel,
                r.base[j]);
    CAPTURE(kHostTermKeys[j]);
    CHECK(r.moved[j]);
    CHECK(std::abs(rel) <= validation_bound("engine-fit/synthetic-terms"));
  }
  for (const EngineFitScore& s : r.in_sample) {
    std::printf("%-60s fitted: TTFT %+.2f%%  TPOT %+.2f%%\n", s.file.c_str(), 100 * s.ttft_error, 100 * s.tpot_error);
    CHECK(std::abs(s.ttft_error) <= validation_bound("engine-fit/synthetic-files"));
    CHECK(std::abs(s.tpot_error) <= validation_bound("engine-fit/synthetic-files"));
  }
  REQUIRE(r.left_out.size() == files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::printf("%-60s left out: TTFT %+.2f%%  TPOT %+.2f%%  (terms %.3g ms, %.3g us, %.3g ms, %.3g ms)\n", files[i].c_str(),
                100 * r.left_out[i].ttft_error, 100 * r.left_out[i].tpot_error, 1e3 * r.left_out_terms[i][0], 1e6 * r.left_out_terms[i][1],
                1e3 * r.left_out_terms[i][2], 1e3 * r.left_out_terms[i][3]);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate engine on the example files: a profile that reads back, with provenance and left-out errors") {
  const std::string ex = std::string(servesim::test::reference_dir()) + "/examples/";
  const std::string out = test::write_temp("engine_fit_profile.json", "");
  const test::CommandResult r =
      test::run_cli("calibrate engine " + ex + "vllm-bench-concurrency16.json " + ex + "vllm-bench-rate2-detailed.json" +
                    " --set hardware=h100-sxm --set model=llama-3.1-8b --date 2026-01-02 -o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("frontend_latency_s") != std::string::npos);
  const nlohmann::json profile = load_json_file(out);
  CHECK(profile["name"] == "vllm-fitted");
  CHECK(profile["provenance"]["date"] == "2026-01-02");
  CHECK(profile["provenance"]["files"].size() == 2);
  CHECK(profile["provenance"]["left_out"].size() == 2);
  CHECK(profile["provenance"]["fitted_by"].get<std::string>().rfind("servesim calibrate engine ", 0) == 0);
  // The written profile runs: the same file replayed on it gives the fit's in-sample TPOT error.
  const test::CommandResult again = test::run_cli("validate --against " + ex + "vllm-bench-concurrency16.json --set hardware=h100-sxm "
                                                  "--set model=llama-3.1-8b --set engine.profile=" + out + " --json");
  REQUIRE(again.exit_code == 0);
  const nlohmann::json rows = nlohmann::json::parse(again.output)["rows"];
  double tpot_error = 0.0;
  for (const auto& row : rows) {
    if (row["metric"] == "tpot" && row["statistic"] == "p50") tpot_error = row["error_frac"].get<double>();
  }
  CHECK(tpot_error == doctest::Approx(profile["provenance"]["in_sample"][0]["tpot_p50_error_frac"].get<double>()));
  // Bad input: no files, a file that is not a result, a bad date.
  CHECK(test::run_cli("calibrate engine -o " + out).exit_code == 2);
  CHECK(test::run_cli("calibrate engine " + ex + "README.md -o " + out).exit_code == 2);
  const test::CommandResult date = test::run_cli("calibrate engine " + ex + "vllm-bench-concurrency16.json --set hardware=h100-sxm --date 5/1 -o " + out);
  CHECK(date.exit_code == 2);
  CHECK(date.output.find("--date: must be YYYY-MM-DD") != std::string::npos);
  std::remove(out.c_str());
}
