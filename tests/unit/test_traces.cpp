// Trace readers: each format's good rows, the project's samples, the real Azure 2023 lengths
// (data/traces), and bad rows failing with the file and line.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/io/trace_reader.hpp"
#include "sim/serve/simulation.hpp"
#include "sim/workload/workload.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
std::string read_error(const std::string& path, const std::string& format) {
  try {
    TraceReader r(path, format);
    while (r.next()) {
    }
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("azure timestamps parse to seconds and rows become relative to the first") {
  const auto t = parse_timestamp_s("2023-11-16 18:15:46.6805900");
  REQUIRE(t);
  CHECK(*t == doctest::Approx(1700158546.68059).epsilon(1e-15));
  CHECK_FALSE(parse_timestamp_s("2023-13-16 18:15:46"));
  CHECK_FALSE(parse_timestamp_s("yesterday"));
  const auto path = test::write_temp("azure.csv",
                                     "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5000000,374,44\n"
                                     "2023-11-16 18:15:47.7500000,396,109\n\n2023-11-16 18:16:00,10,1\n");
  TraceReader r(path, "azure");
  auto a = r.next(), b = r.next(), c = r.next();
  REQUIRE(c);
  CHECK_FALSE(r.next());
  CHECK(a->arrival_s == 0.0);
  CHECK(b->arrival_s == doctest::Approx(1.25));
  CHECK(c->arrival_s == doctest::Approx(13.5));
  CHECK(b->prompt_tokens == 396);
  CHECK(b->output_tokens == 109);
}

TEST_CASE("burstgpt: model is the class, failed requests (0 response tokens) are counted and skipped") {
  const auto path = test::write_temp("burst.csv",
                                     "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                                     "5,ChatGPT,472,18,490,Conversation log\n6,GPT-4,1000,0,1000,API log\n8,GPT-4,20,30,50,API log\n");
  TraceReader r(path, "burstgpt");
  auto a = r.next(), b = r.next();
  CHECK_FALSE(r.next());
  CHECK(a->arrival_s == 0.0);
  CHECK(a->cls == "ChatGPT");
  CHECK(b->arrival_s == 3.0);
  CHECK(b->cls == "GPT-4");
  CHECK(r.skipped_rows() == 1);
}

TEST_CASE("jsonl rows carry prefix and class") {
  const auto path = test::write_temp("t.jsonl", "{\"arrival_s\": 0.5, \"prompt_tokens\": 10, \"output_tokens\": 3, \"prefix_id\": \"sys\", \"class\": \"chat\"}\n"
                                                "{\"arrival_s\": 1.5, \"prompt_tokens\": 20, \"output_tokens\": 4}\n");
  TraceReader r(path, "jsonl");
  auto a = r.next(), b = r.next();
  CHECK(a->prefix_id == "sys");
  CHECK(a->cls == "chat");
  CHECK(b->arrival_s == 1.5);
  CHECK(b->cls.empty());
}

TEST_CASE("bad rows are InputErrors naming the file and the line") {
  struct Case {
    const char* format;
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,5\n2023-11-16 18:15:47,abc,5\n", "line 3: ContextTokens: not an integer"},
      {"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\nnot-a-time,10,5\n", "line 2: TIMESTAMP: not a timestamp"},
      {"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10\n", "line 2: expected 3 fields, got 2"},
      {"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,0,5\n", "line 2: ContextTokens: must be > 0"},
      {"azure", "TIMESTAMP,Context,GeneratedTokens\n", "line 1: header lacks column 'ContextTokens'"},
      {"splitwise", "arrived_at,num_prefill_tokens,num_decode_tokens\n2.0,10,5\n1.0,10,5\n", "line 3: arrival time goes back"},
      {"splitwise", "arrived_at,num_prefill_tokens,num_decode_tokens\n1.0,10,5.5\n", "line 2: num_decode_tokens: not an integer"},
      {"burstgpt", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10,-3,7,x\n", "line 2: Response tokens: must be > 0"},
      {"jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1}\n{\"arrival_s\": 1, \"prompt_tokens\": 1}\n", "line 2: missing output_tokens"},
      {"jsonl", "{\"arrival_s\": 0, \"prompt_tokens\": 1, \"output_tokens\": 1, \"colour\": 1}\n", "line 1: unknown key 'colour'"},
      {"jsonl", "{broken\n", "line 1: not a JSON object"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const auto path = test::write_temp("bad" + std::to_string(i++), c.text);
    const std::string err = read_error(path, c.format);
    INFO(err);
    CHECK(err.rfind(path, 0) == 0);
    CHECK(err.find(c.expect) != std::string::npos);
  }
  CHECK(read_error("/nonexistent/trace.csv", "azure").find("/nonexistent/trace.csv: file not found") != std::string::npos);
  CHECK(read_error(test::write_temp("x.csv", "a\n"), "parquet").find("unknown trace format") != std::string::npos);
}

TEST_CASE("the shipped samples read back and replay what they were generated from") {
  const std::string dir = std::string(servesim::test::test_data_dir()) + "/../scenarios/traces/";
  auto src = test::scenario_from(nlohmann::json::parse(std::ifstream(dir + "sample_source.json")));
  WorkloadGenerator gen(src.workload, src.seed);
  for (const char* f : {"sample_azure.csv", "sample_burstgpt.csv", "sample_requests.jsonl", "sample_splitwise.csv"}) {
    const std::string file = f;
    const std::string format = file.find("azure") != std::string::npos ? "azure" : file.find("burst") != std::string::npos ? "burstgpt"
                               : file.find("jsonl") != std::string::npos ? "jsonl" : "splitwise";
    TraceReader r(dir + file, format);
    WorkloadGenerator g(src.workload, src.seed);
    int n = 0;
    double first = -1;
    while (auto row = r.next()) {
      auto want = g.next();
      REQUIRE(want);
      if (first < 0) first = ns_to_seconds(want->arrival_ns);
      const double expect_s = format == "azure" || format == "burstgpt" ? ns_to_seconds(want->arrival_ns) - first : ns_to_seconds(want->arrival_ns);
      // Written with 3 (burstgpt), 6 (splitwise, jsonl) or 7 (azure) decimals.
      CHECK(std::abs(row->arrival_s - expect_s) <= (format == "burstgpt" ? 1e-3 : 1e-6) + 1e-9);
      CHECK(row->prompt_tokens == want->prompt_tokens);
      CHECK(row->output_tokens == want->output_tokens);
      ++n;
    }
    CHECK(n == 200);
  }
}

TEST_CASE("real Azure 2023 conversation lengths (data/traces) replay as a workload") {
  const std::string path = std::string(servesim::test::reference_dir()) + "/traces/splitwise_conv_lengths.csv";
  auto doc = test::base_scenario();
  doc["workload"] = nlohmann::json::parse(R"({"arrival": {"impl": "trace"},
      "prompt_tokens": {"impl": "trace"}, "output_tokens": {"impl": "trace"}})");
  doc["workload"]["trace"] = {{"path", path}, {"format", "splitwise"}};
  const Scenario s = test::scenario_from(doc);
  WorkloadGenerator g(s.workload, s.seed);
  std::int64_t n = 0, prompt = 0, output = 0;
  while (auto r = g.next()) {
    ++n;
    prompt += r->prompt_tokens;
    output += r->output_tokens;
  }
  // data/README.md: 19,366 requests. Mean lengths printed for the record.
  std::printf("splitwise_conv_lengths: %lld requests, mean prompt %.1f, mean output %.1f tokens\n", static_cast<long long>(n),
              static_cast<double>(prompt) / n, static_cast<double>(output) / n);
  CHECK(n == 19366);
  // Lengths from the trace with synthetic Poisson arrivals (a common use of the file).
  doc["workload"]["arrival"] = {{"impl", "poisson"}, {"rate_per_s", 5.0}};
  doc["workload"]["num_requests"] = 300;
  const SimResult res = simulate(test::scenario_from(doc));
  CHECK(res.metrics.completed + res.metrics.rejected == 300);
}

TEST_CASE("out-of-order arrivals: refused by default with the fix named, replayed sorted with sort_arrivals") {
  const auto path = test::write_temp("merged.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                                   "2.0,10,5\n1.0,11,6\n3.0,12,7\n1.0,13,8\n");
  CHECK(read_error(path, "splitwise").find("set workload.trace.sort_arrivals to true") != std::string::npos);
  TraceReader sorted(path, "splitwise", true);
  std::vector<std::pair<double, std::int64_t>> rows;
  while (auto r = sorted.next()) rows.emplace_back(r->arrival_s, r->prompt_tokens);
  // By arrival time; rows with one time keep their file order.
  CHECK(rows == std::vector<std::pair<double, std::int64_t>>{{1.0, 11}, {1.0, 13}, {2.0, 10}, {3.0, 12}});
  // Absolute timestamps count from the earliest row once sorted.
  const auto azure = test::write_temp("merged_azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                                          "2023-11-16 18:15:50.0,10,5\n2023-11-16 18:15:46.5,11,6\n");
  TraceReader a(azure, "azure", true);
  CHECK(a.next()->arrival_s == doctest::Approx(0.0));
  CHECK(a.next()->arrival_s == doctest::Approx(3.5));
  // As a scenario key, and the simulation runs every row.
  auto doc = test::base_scenario();
  doc["workload"] = nlohmann::json::parse(R"({"arrival": {"impl": "trace"},
      "prompt_tokens": {"impl": "trace"}, "output_tokens": {"impl": "trace"}})");
  doc["workload"]["trace"] = {{"path", path}, {"format", "splitwise"}, {"sort_arrivals", true}};
  const SimResult res = simulate(test::scenario_from(doc));
  CHECK(res.metrics.completed == 4);
}
