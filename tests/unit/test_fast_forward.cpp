// Fast-forward (iterations that end before any other event chained without the event queue, and
// runs of quiet decode steps committed without the policy: Replica::advance_decode_run) against
// the per-event loop (SimHooks::fast_forward off): the same report and event count on every
// bundled scenario and under every batch policy, cut to a few hundred requests. The reports
// are compared byte for byte: the quiet runs price every step with the same cost model calls
// and add to every sum in the same order, so no tolerance is needed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "../support.hpp"
#include "sim/io/report_io.hpp"
#include "sim/metrics/run_observer.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

const std::filesystem::path kRepo = std::filesystem::path(servesim::test::test_data_dir()).parent_path();

// Runs `s` both ways and returns the fast-forward run.
SimResult check_same_report(const Scenario& s, const std::string& label) {
  SimHooks per_step;
  per_step.fast_forward = false;
  const SimResult a = simulate(s);
  const SimResult b = simulate(s, per_step);
  const auto ja = make_report(s, a), jb = make_report(s, b);
  std::printf("fast-forward vs per-step, %s: %llu events (%llu in quiet decode runs), %lld completed, %s\n",
              label.c_str(), static_cast<unsigned long long>(a.events),
              static_cast<unsigned long long>(a.decode_run_steps), static_cast<long long>(a.metrics.completed),
              ja == jb ? "identical reports" : "REPORTS DIFFER");
  INFO(label);
  CHECK(ja.dump() == jb.dump());
  CHECK(a.events == b.events);
  CHECK(b.decode_run_steps == 0);
  return a;
}

std::vector<std::filesystem::path> bundled_scenarios() {
  std::vector<std::filesystem::path> paths;
  for (const auto* dir : {"scenarios", "scenarios/studies"}) {
    for (const auto& e : std::filesystem::directory_iterator(kRepo / dir)) {
      if (e.path().extension() == ".json") paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

TEST_CASE("fast-forward and per-step loop agree on every bundled scenario") {
  const auto paths = bundled_scenarios();
  REQUIRE(paths.size() >= 5);
  std::uint64_t quiet_steps = 0;
  for (const auto& p : paths) {
    // A trace-driven scenario ends with its trace; the rest are cut to 300 requests.
    const Scenario full = load_scenario(p.string(), {});
    std::vector<std::string> overrides;
    if (full.workload.num_requests > 300) overrides.push_back("workload.num_requests=300");
    const SimResult fast = check_same_report(load_scenario(p.string(), overrides), p.filename().string());
    quiet_steps += fast.decode_run_steps;
    if (p.filename() == "default.json") CHECK(fast.decode_run_steps > fast.metrics.iterations / 4);
  }
  CHECK(quiet_steps > 0);
}

TEST_CASE("fast-forward and per-step loop agree with prefix caching on (vLLM V1's default)") {
  // With prefix caching the decode window and quiet runs stay on (blocks a decode fills are
  // registered when their sequence leaves); fresh blocks may come from evicting cached ones.
  for (const auto& p : bundled_scenarios()) {
    std::vector<std::string> overrides = {"engine.enable_prefix_caching=true"};
    if (load_scenario(p.string(), {}).workload.num_requests > 300) overrides.push_back("workload.num_requests=300");
    const SimResult fast = check_same_report(load_scenario(p.string(), overrides), p.filename().string() + ", prefix caching");
    if (p.filename() == "default.json") CHECK(fast.decode_run_steps > fast.metrics.iterations / 4);
  }
  const std::string policies = (kRepo / "scenarios/policies.json").string();
  for (const PolicyEntry& policy : scheduler_policies()) {
    for (const char* preemption : {"recompute", "swap"}) {
      // A small cache: evictions and preemptions inside decode runs.
      const Scenario s = load_scenario(policies, {"workload.num_requests=300", "engine.scheduler.impl=" + policy.name,
                                                  std::string("engine.preemption_mode=") + preemption,
                                                  "engine.enable_prefix_caching=true", "engine.gpu_memory_utilization=0.25",
                                                  "workload.arrival.rate_per_s=20"});
      const SimResult fast = check_same_report(s, policy.name + ", " + preemption + ", prefix caching");
      CHECK(fast.metrics.prefix_evictions > 0);
      CHECK(fast.metrics.prefix_hit_tokens > 0);
      if (policy.name == "continuous") CHECK(fast.metrics.preemptions > 0);
    }
  }
}

TEST_CASE("fast-forward and per-step loop agree with interpolated decode steps too") {
  // cost_model.interpolate_decode prices a quiet run's steps through decode_run_step and the
  // per-step loop's through step_time: the same cells, the same points, the same report.
  for (const auto& p : bundled_scenarios()) {
    std::vector<std::string> overrides = {"cost_model.interpolate_decode=true"};
    if (load_scenario(p.string(), {}).workload.num_requests > 300) overrides.push_back("workload.num_requests=300");
    check_same_report(load_scenario(p.string(), overrides), p.filename().string() + ", interpolated decode");
  }
}

TEST_CASE("quiet decode runs: vidur's scenario (equal lengths, one arrival a second) is mostly quiet steps") {
  // The bench scenario cut to 300 requests: long runs of steps between arrivals and finishes.
  const Scenario s = load_scenario((kRepo / "bench/vidur.json").string(), {"workload.num_requests=300"});
  const SimResult fast = check_same_report(s, "bench/vidur.json");
  CHECK(fast.decode_run_steps > fast.metrics.iterations / 2);
}

TEST_CASE("fast-forward and per-step loop agree under every batch policy") {
  const std::string policies = (kRepo / "scenarios/policies.json").string();
  for (const PolicyEntry& policy : scheduler_policies()) {
    for (const char* preemption : {"recompute", "swap"}) {
      const Scenario s = load_scenario(policies, {"workload.num_requests=300", "engine.scheduler.impl=" + policy.name,
                                                  std::string("engine.preemption_mode=") + preemption});
      const SimResult fast = check_same_report(s, policy.name + ", " + preemption);
      // Only continuous batching (and token-level admission on it) says when its steps are quiet;
      // the others look at the batch every step and are stepped one by one.
      if (policy.name != "continuous" && policy.name != "token-level") CHECK(fast.decode_run_steps == 0);
    }
  }
}

// Every transition, in order, as text: what requests.csv, trace.json and the HTML timeline see.
struct TranscriptObserver final : RunObserver {
  std::string text;
  void line(const char* what, std::uint32_t id, TimeNs now) {
    text += what + std::to_string(id) + "@" + std::to_string(now) + "\n";
  }
  void on_arrival(std::uint32_t id, const Request&, TimeNs now) override { line("arrive ", id, now); }
  void on_admitted(std::uint32_t id, TimeNs now) override { line("admit ", id, now); }
  void on_prefill_done(std::uint32_t id, TimeNs now) override { line("prefilled ", id, now); }
  void on_finished(std::uint32_t id, const Request&, TimeNs now) override { line("finish ", id, now); }
  void on_iteration(const IterationRecord& it) override {
    text += "iteration " + std::to_string(it.start_ns) + "-" + std::to_string(it.end_ns) + " seqs " +
            std::to_string(it.seqs) + " kv " + std::to_string(it.kv_used_blocks) + "\n";
  }
};

TEST_CASE("fast-forward: observers see every iteration and transition as in the per-step loop") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 100;
  doc["workload"]["arrival"]["rate_per_s"] = 0.5;  // long quiet decode runs between arrivals
  const Scenario s = scenario_from(doc);
  TranscriptObserver fast_log, step_log;
  SimHooks fast, per_step;
  fast.observer = &fast_log;
  per_step.observer = &step_log;
  per_step.fast_forward = false;
  const SimResult a = simulate(s, fast), b = simulate(s, per_step);
  CHECK(a.events == b.events);
  CHECK(a.decode_run_steps > a.metrics.iterations / 2);  // most iterations come from quiet runs
  CHECK(a.metrics.iterations > 1000);  // decode runs long enough to chain
  CHECK(fast_log.text.size() > 10000);
  CHECK(fast_log.text == step_log.text);
}

namespace {

// The fleet variants the time windows are checked on: each router, equal-time arrivals and a full
// queue, timeouts and dropped requests, a batching window (wake-ups), prefix caching.
std::vector<std::pair<std::string, Scenario>> fleet_variants() {
  const std::string def = (kRepo / "scenarios/default.json").string();
  const std::vector<std::string> fleet = {"parallel.data_parallel_size=32", "workload.arrival.rate_per_s=320",
                                          "workload.num_requests=1200"};
  const auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), fleet.begin(), fleet.end());
    return load_scenario(def, extra);
  };
  std::vector<std::pair<std::string, Scenario>> out;
  for (const char* router : {"round_robin", "least_outstanding", "least_kv", "prefix_affinity"}) {
    const std::string r = std::string("router.impl=") + router;
    out.emplace_back(std::string("32 replicas, ") + router, with({r}));
    out.emplace_back(std::string("all at once, queue limit, ") + router,
                     with({r, "parallel.data_parallel_size=8", "workload.num_requests=400",
                           R"(workload.arrival={"impl":"all_at_once"})", "engine.scheduler.max_queue_size=30"}));
    out.emplace_back(std::string("timeouts, ") + router,
                     with({r, "workload.request_timeout_s=4", "engine.scheduler.max_waiting_time_s=1.5",
                           "workload.arrival.rate_per_s=900"}));
    out.emplace_back(std::string("dynamic batching, prefix caching, ") + router,
                     with({r, R"(engine.scheduler={"impl":"dynamic"})", "engine.enable_prefix_caching=true",
                           R"(workload.shared_prefix={"num_prefixes":4,"prefix_tokens":300})"}));
  }
  return out;
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t from = 0;
  for (std::size_t at; (at = text.find('\n', from)) != std::string::npos; from = at + 1) lines.push_back(text.substr(from, at - from));
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace

TEST_CASE("fleet time windows: the one-queue loop's report, its transitions, and the same on 2 and 4 threads") {
  // Windows change only the order of observer calls at one instant (replica by replica): the
  // report is the queue's byte for byte, the transitions the same set, and any thread count
  // gives the one-thread run's calls in the same order.
  for (const auto& variant : fleet_variants()) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in INFO's lambda.
    const std::string& label = variant.first;
    const Scenario& s = variant.second;
    INFO(label);
    TranscriptObserver queue_log, one_log, two_log, four_log;
    SimHooks queue, one, two, four;
    queue.windows = false;
    queue.observer = &queue_log;
    one.observer = &one_log;
    two.observer = &two_log;
    two.sim_threads = 2;
    four.observer = &four_log;
    four.sim_threads = 4;
    const SimResult q = simulate(s, queue), a = simulate(s, one), b = simulate(s, two), c = simulate(s, four);
    const std::string report = make_report(s, a).dump();
    std::printf("fleet windows, %s: %llu events (%llu in quiet decode runs), %lld completed, %lld rejected, %s\n",
                label.c_str(), static_cast<unsigned long long>(a.events), static_cast<unsigned long long>(a.decode_run_steps),
                static_cast<long long>(a.metrics.completed), static_cast<long long>(a.metrics.rejected),
                report == make_report(s, q).dump() ? "report identical to the queue's" : "REPORTS DIFFER");
    CHECK(report == make_report(s, q).dump());
    CHECK(a.events == q.events);
    CHECK(sorted_lines(one_log.text) == sorted_lines(queue_log.text));
    CHECK(report == make_report(s, b).dump());
    CHECK(report == make_report(s, c).dump());
    CHECK(one_log.text == two_log.text);
    CHECK(one_log.text == four_log.text);
    CHECK(a.decode_run_steps >= q.decode_run_steps);
  }
}
