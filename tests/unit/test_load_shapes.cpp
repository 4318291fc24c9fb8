// The loads benchmark harnesses send (issue 34): a closed loop of N clients (vllm bench serve
// --max-concurrency with rate inf, GenAI-Perf --concurrency, inference-perf's concurrent load),
// constant-rate and Poisson stages with figures per stage (inference-perf load.stages), and a
// trace's prefix ids shared in the prefix cache.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "sim/io/report_io.hpp"
#include "sim/serve/simulation.hpp"
#include "sim/workload/workload.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {

nlohmann::json closed_loop(std::int64_t clients, double think_s, std::int64_t requests) {
  nlohmann::json doc = test::base_scenario();
  doc["workload"]["num_requests"] = requests;
  doc["workload"]["arrival"] = {{"impl", "concurrency"}, {"clients", clients}, {"think_time_s", think_s}};
  doc["workload"]["prompt_tokens"] = {{"impl", "uniform"}, {"min_tokens", 64}, {"max_tokens", 512}};
  doc["workload"]["output_tokens"] = {{"impl", "uniform"}, {"min_tokens", 8}, {"max_tokens", 128}};
  return doc;
}

// Counts the requests between arrival and departure as the engine reports them, and keeps every
// arrival and finish time.
struct Outstanding final : RunObserver {
  std::int64_t now = 0, peak = 0, departed = 0;
  std::vector<TimeNs> arrivals, finishes;
  void on_arrival(std::uint32_t, const Request& r, TimeNs) override {
    peak = std::max(peak, ++now);
    arrivals.push_back(r.arrival_ns);
  }
  void on_rejected(std::uint32_t, const Request&, TimeNs t) override { leave(t); }
  void on_finished(std::uint32_t, const Request&, TimeNs t) override { leave(t); }
  void leave(TimeNs t) {
    --now;
    ++departed;
    finishes.push_back(t);
  }
};

SimResult run(const nlohmann::json& doc, RunObserver* observer = nullptr) {
  SimHooks hooks;
  hooks.observer = observer;
  return simulate(test::scenario_from(doc), hooks);
}

}  // namespace

TEST_CASE("closed loop: N clients start at t = 0 and never have more than N requests outstanding") {
  for (const std::int64_t clients : {1, 4, 32}) {
    Outstanding seen;
    const SimResult res = run(closed_loop(clients, 0.0, 400), &seen);
    std::printf("closed loop, %lld clients: %lld completed, peak outstanding %lld\n", static_cast<long long>(clients),
                static_cast<long long>(res.metrics.completed), static_cast<long long>(seen.peak));
    CHECK(res.metrics.completed == 400);
    CHECK(seen.peak == clients);  // reached (400 requests keep every client busy) and never passed
    CHECK(std::count(seen.arrivals.begin(), seen.arrivals.end(), TimeNs{0}) == clients);
  }
}

TEST_CASE("closed loop: each request after the first N is sent think_time_s after a departure") {
  const double think_s = 0.25;
  Outstanding seen;
  run(closed_loop(3, think_s, 60), &seen);
  REQUIRE(seen.arrivals.size() == 60);
  // Arrivals after the first three, in order, are the departures (in order) plus the think time:
  // one new request per departure, sent by the client whose request left.
  std::vector<TimeNs> sends(seen.arrivals.begin() + 3, seen.arrivals.end());
  for (std::size_t i = 0; i < sends.size(); ++i) CHECK(sends[i] == seen.finishes[i] + seconds_to_ns(think_s));
}

TEST_CASE("closed loop obeys Little's law: clients = throughput x (mean latency + think time)") {
  for (const double think_s : {0.0, 0.5}) {
    const std::int64_t clients = 16;
    const SimResult res = run(closed_loop(clients, think_s, 3000));
    const RunMetrics& m = res.metrics;
    // Over the whole run every client is always either waiting for its request or thinking, but
    // the last requests drain without successors: count the time up to the last completion.
    const double x = static_cast<double>(m.completed) / ns_to_seconds(m.end_ns);
    const double n = x * (m.e2e_s.mean() + think_s);
    std::printf("Little's law, 16 clients, think %.1f s: X %.2f req/s x (R %.4f s + Z) = %.3f (error %+.2f%%)\n", think_s, x,
                m.e2e_s.mean(), n, 100.0 * (n / 16.0 - 1.0));
    // The end effect (the last wave drains with fewer than N outstanding) is about one request
    // of N x 3000 / N: under 1%.
    CHECK(std::abs(n / static_cast<double>(clients) - 1.0) < 0.01);
  }
}

TEST_CASE("closed loop is deterministic and ends at num_requests or duration_s") {
  const nlohmann::json doc = closed_loop(8, 0.1, 200);
  const nlohmann::json a = make_report(test::scenario_from(doc), run(doc));
  const nlohmann::json b = make_report(test::scenario_from(doc), run(doc));
  CHECK(a.dump() == b.dump());
  nlohmann::json timed = closed_loop(8, 0.1, 200);
  timed["workload"].erase("num_requests");
  timed["workload"]["duration_s"] = 5.0;
  Outstanding seen;
  const SimResult res = run(timed, &seen);
  CHECK(res.metrics.completed > 8);
  CHECK(*std::max_element(seen.arrivals.begin(), seen.arrivals.end()) <= seconds_to_ns(5.0));
}

TEST_CASE("closed loop: a rejected request frees its client; a loop that could spin at one instant is an error") {
  nlohmann::json doc = closed_loop(4, 0.0, 100);
  doc["engine"]["max_model_len"] = 400;  // prompts up to 512 + 128: some are refused at once
  Outstanding seen;
  const SimResult res = run(doc, &seen);
  CHECK(res.metrics.rejected > 0);
  CHECK(res.metrics.completed + res.metrics.rejected == 100);
  CHECK(seen.peak <= 4);
  doc["workload"].erase("num_requests");
  doc["workload"]["duration_s"] = 60.0;
  CHECK_THROWS_WITH_AS(run(doc), doctest::Contains("workload.arrival.think_time_s: a closed-loop request was rejected"), InputError);
}

TEST_CASE("closed loop with sessions: a client runs its conversation's turns, then starts another") {
  nlohmann::json doc = closed_loop(2, 0.0, 40);
  doc["workload"]["sessions"] = {{"turns", 4}, {"think_time_s", 0.0}};
  Outstanding seen;
  const SimResult res = run(doc, &seen);
  CHECK(res.metrics.completed == 40);
  CHECK(seen.peak == 2);
}

TEST_CASE("concurrency keys: clients required and ranged, think time only with concurrency") {
  nlohmann::json doc = closed_loop(4, 0.0, 10);
  doc["workload"]["arrival"].erase("clients");
  CHECK(test::parse_error(doc) == "test.json: workload.arrival.clients: missing required key");
  doc["workload"]["arrival"]["clients"] = 0;
  CHECK(test::parse_error(doc).find("workload.arrival.clients: must be >= 1, got 0") != std::string::npos);
  nlohmann::json open = test::base_scenario();
  open["workload"]["arrival"]["think_time_s"] = 1.0;
  CHECK(test::parse_error(open).find("workload.arrival.think_time_s: only read with impl concurrency") != std::string::npos);
}

TEST_CASE("stages: constant stages send rate x duration requests each, one stage after the other") {
  ArrivalConfig a;
  a.kind = ArrivalConfig::Kind::stages;
  a.stages = {{false, 5.0, 10.0}, {false, 20.0, 4.0}, {true, 50.0, 20.0}};
  a.stage_gap_s = 2.0;
  ArrivalProcess p(a, 3);
  std::vector<std::int64_t> count(3, 0);
  std::vector<double> first(3, -1.0), last(3, 0.0);
  for (double t = p.next_s(); std::isfinite(t); t = p.next_s()) {
    const auto k = p.stage();
    if (first[k] < 0.0) first[k] = t;
    last[k] = t;
    ++count[k];
  }
  CHECK(count[0] == 50);
  CHECK(count[1] == 80);
  CHECK(first[0] == 0.0);
  CHECK(last[0] == doctest::Approx(9.8));
  CHECK(first[1] == doctest::Approx(12.0));  // 10 s, then the 2 s gap
  CHECK(last[1] == doctest::Approx(12.0 + 79.0 / 20.0));
  // Poisson stage from 18 s to 38 s: 1000 expected, standard deviation sqrt(1000) ~ 32.
  std::printf("poisson stage: %lld arrivals in [%.3f, %.3f] (expect ~1000 in [18, 38))\n", static_cast<long long>(count[2]), first[2],
              last[2]);
  CHECK(std::abs(static_cast<double>(count[2]) - 1000.0) < 5.0 * std::sqrt(1000.0));
  CHECK(first[2] >= 18.0);
  CHECK(last[2] < 38.0);
}

TEST_CASE("stages: the report gives each stage's load, counts and latency percentiles") {
  nlohmann::json doc = test::base_scenario();
  doc["workload"].erase("num_requests");
  doc["workload"]["arrival"] = {{"impl", "stages"},
                                {"stages", {{{"impl", "constant"}, {"rate_per_s", 1.0}, {"duration_s", 30.0}},
                                            {{"impl", "poisson"}, {"rate_per_s", 12.0}, {"duration_s", 30.0}}}}};
  const Scenario s = test::scenario_from(doc);
  const SimResult res = simulate(s);
  const nlohmann::json report = make_report(s, res);
  REQUIRE(report.contains("stages"));
  const auto& st = report["stages"];
  REQUIRE(st.size() == 2);
  CHECK(st[0]["arrived"] == 30);
  CHECK(st[0]["completed"] == 30);
  CHECK(st[1]["start_s"] == 30.0);
  CHECK(st[0]["arrived"].get<std::int64_t>() + st[1]["arrived"].get<std::int64_t>() == res.metrics.arrived);
  const double p50_light = st[0]["latency"]["e2e_s"]["p50"].get<double>();
  const double p50_busy = st[1]["latency"]["e2e_s"]["p50"].get<double>();
  std::printf("stages: e2e p50 %.4f s at 1 req/s, %.4f s at 12 req/s; tpot p50 %.5f / %.5f s\n", p50_light, p50_busy,
              st[0]["latency"]["tpot_s"]["p50"].get<double>(), st[1]["latency"]["tpot_s"]["p50"].get<double>());
  // Alone in its batch a request decodes fastest; twelve times the load batches requests together.
  CHECK(st[1]["latency"]["tpot_s"]["p50"].get<double>() > st[0]["latency"]["tpot_s"]["p50"].get<double>());
  // The first stage's figures are those of the same load run alone (the second stage starts
  // after the first one's last request has long finished).
  nlohmann::json alone = test::base_scenario();
  alone["workload"]["num_requests"] = 30;
  alone["workload"]["arrival"] = {{"impl", "constant"}, {"rate_per_s", 1.0}};
  const SimResult one = simulate(test::scenario_from(alone));
  CHECK(st[0]["latency"]["e2e_s"]["p50"].get<double>() == doctest::Approx(one.metrics.e2e_s.quantile(0.5)));
  CHECK(report.dump() == make_report(s, simulate(s)).dump());
}

TEST_CASE("stages keys: each stage an object with impl, rate and duration") {
  nlohmann::json doc = test::base_scenario();
  doc["workload"]["arrival"] = {{"impl", "stages"}, {"stages", nlohmann::json::array()}};
  CHECK(test::parse_error(doc) == "test.json: workload.arrival.stages: must be an array of 1 to 1024 stages");
  doc["workload"]["arrival"]["stages"] = {{{"impl", "ramp"}, {"rate_per_s", 1.0}, {"duration_s", 3.0}}};
  CHECK(test::parse_error(doc) == "test.json: workload.arrival.stages[0].impl: must be one of constant, poisson, got 'ramp'");
  doc["workload"]["arrival"]["stages"] = {{{"impl", "poisson"}, {"rate_per_s", -1.0}, {"duration_s", 3.0}}};
  CHECK(test::parse_error(doc).find("workload.arrival.stages[0].rate_per_s: must be > 0") != std::string::npos);
  doc["workload"]["arrival"]["stages"] = {{{"impl", "poisson"}, {"rate_per_s", 1.0}}};
  CHECK(test::parse_error(doc) == "test.json: workload.arrival.stages[0].duration_s: missing required key");
}

TEST_CASE("trace prefix ids: rows with one prefix_id share its leading blocks in the prefix cache") {
  // 20 requests a second apart (each alone on the server), all starting with the same 256-token
  // system prompt: every request after the first finds its 16 blocks cached.
  std::string rows, bare;
  for (int i = 0; i < 20; ++i) {
    const std::string t = std::to_string(i);
    rows += R"({"arrival_s": )" + t + R"(, "prompt_tokens": 300, "output_tokens": 4, "prefix_id": "sys", "prefix_tokens": 256})" "\n";
    bare += R"({"arrival_s": )" + t + R"(, "prompt_tokens": 300, "output_tokens": 4, "prefix_id": "sys"})" "\n";
  }
  const auto replay = [](const std::string& path, std::int64_t key_tokens) {
    nlohmann::json doc = test::base_scenario();
    doc["engine"]["enable_prefix_caching"] = true;
    doc["workload"].erase("num_requests");
    doc["workload"]["arrival"] = {{"impl", "trace"}};
    doc["workload"]["trace"] = {{"path", path}, {"format", "jsonl"}};
    if (key_tokens > 0) doc["workload"]["trace"]["prefix_tokens"] = key_tokens;
    doc["workload"]["prompt_tokens"] = {{"impl", "trace"}};
    doc["workload"]["output_tokens"] = {{"impl", "trace"}};
    return simulate(test::scenario_from(doc)).metrics;
  };
  const RunMetrics with = replay(test::write_temp("prefix_rows.jsonl", rows), 0);
  const RunMetrics by_key = replay(test::write_temp("prefix_bare.jsonl", bare), 256);
  const RunMetrics without = replay(test::write_temp("prefix_bare2.jsonl", bare), 0);
  std::printf("trace prefix ids: %lld hit tokens (row lengths), %lld (scenario key), %lld (no length)\n",
              static_cast<long long>(with.prefix_hit_tokens), static_cast<long long>(by_key.prefix_hit_tokens),
              static_cast<long long>(without.prefix_hit_tokens));
  CHECK(with.prefix_hit_tokens == 19 * 256);
  CHECK(by_key.prefix_hit_tokens == 19 * 256);
  CHECK(without.prefix_hit_tokens == 0);
  CHECK(with.ttft_s.quantile(0.9) < without.ttft_s.quantile(0.9));  // the hits skip 256 of 300 prompt tokens
}

TEST_CASE("trace prefix ids: a length longer than the prompt, or without an id, names the line") {
  const std::string longer = test::write_temp("prefix_long.jsonl", R"({"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 4, "prefix_id": 3, "prefix_tokens": 200})" "\n");
  const std::string orphan = test::write_temp("prefix_orphan.jsonl", R"({"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 4, "prefix_tokens": 20})" "\n");
  for (const auto& [path, message] : {std::pair{longer, "line 1: prefix_tokens: 200 is longer than the prompt (100 tokens)"},
                                      std::pair{orphan, "line 1: prefix_tokens: needs a prefix_id"}}) {
    nlohmann::json doc = test::base_scenario();
    doc["workload"].erase("num_requests");
    doc["workload"]["arrival"] = {{"impl", "trace"}};
    doc["workload"]["trace"] = {{"path", path}, {"format", "jsonl"}};
    doc["workload"]["prompt_tokens"] = {{"impl", "trace"}};
    doc["workload"]["output_tokens"] = {{"impl", "trace"}};
    CHECK_THROWS_WITH_AS(simulate(test::scenario_from(doc)), doctest::Contains(message), InputError);
  }
}
