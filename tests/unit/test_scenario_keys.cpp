// Scenario keys declared once (config/scenario_keys.cpp): the parser reads every key through its
// declaration (range, type, unknown-key suggestions), scheduler settings are parsed and echoed
// from their declarations alone, and every declared key appears in the reference.
#include <doctest/doctest.h>

#include <variant>

#include "sim/config/scenario_keys.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("out-of-range values name the file, the key and the declared range") {
  auto doc = test::base_scenario();
  doc["engine"]["scheduler"] = {{"impl", "continuous"}, {"max_waiting_time_s", 1e10}};
  CHECK(contains(test::parse_error(doc), "test.json: engine.scheduler.max_waiting_time_s: must be <= 32000000, got 1e+10 (range (0, 32000000])"));
  doc = test::base_scenario();
  doc["slo"] = {{"percentile", 1.0}};
  CHECK(contains(test::parse_error(doc), "test.json: slo.percentile: must be < 1, got 1 (range (0, 1))"));
  doc = test::base_scenario();
  doc["workload"]["request_timeout_s"] = 1e9;
  CHECK(contains(test::parse_error(doc), "workload.request_timeout_s: must be <= 32000000"));
  doc = test::base_scenario();
  doc["engine"]["gpu_memory_utilization"] = 1.5;
  CHECK(contains(test::parse_error(doc), "engine.gpu_memory_utilization: must be <= 1, got 1.5 (range [0.01, 1])"));
  doc = test::base_scenario();
  doc["workload"]["prompt_tokens"] = {{"impl", "fixed"}, {"value_tokens", 1e8}};
  CHECK(contains(test::parse_error(doc), "workload.prompt_tokens.value_tokens: must be <= 16777216"));
}

TEST_CASE("unknown keys list the close declared ones") {
  auto doc = test::base_scenario();
  doc["engine"]["max_num_seq"] = 8;
  CHECK(contains(test::parse_error(doc), "engine.max_num_seq: unknown key; did you mean max_num_seqs?"));
  doc = test::base_scenario();
  doc["workload"]["arrival"]["rate"] = 1;
  CHECK(contains(test::parse_error(doc), "workload.arrival.rate: unknown key"));
  doc = test::base_scenario();
  doc["workload"]["prompt_tokens"]["min_tokens"] = 3;  // fixed lengths take no bounds
  CHECK(contains(test::parse_error(doc), "workload.prompt_tokens.min_tokens: only read with impl uniform, normal, lognormal, zipf"));
}

TEST_CASE("every declared scheduler setting is parsed and echoed from its declaration alone") {
  int settings = 0;
  for (const ScenarioKey* k : keys_in("engine.scheduler")) {
    if (std::holds_alternative<std::monostate>(k->scheduler_field)) continue;
    ++settings;
    const std::string name = k->path.substr(k->path.rfind('.') + 1);
    auto doc = test::base_scenario();
    doc["engine"]["max_num_seqs"] = 64;
    // A value inside the range that is not the default: the range's low end plus 3, or 0.5.
    const bool integer = k->type == KeyType::integer;
    const double value = integer ? std::max(1.0, k->range.lo) + 3 : 0.5;
    const std::string owner = scheduler_policies().readers_of(k->path);  // the policy whose own setting it is
    doc["engine"]["scheduler"] = {{"impl", owner.empty() ? "continuous" : owner}};
    doc["engine"]["scheduler"][name] = integer ? nlohmann::json(static_cast<std::int64_t>(value)) : nlohmann::json(value);
    INFO(k->path);
    const Scenario s = test::scenario_from(doc);
    const nlohmann::json echo = scenario_to_json(s)["engine"]["scheduler"];
    REQUIRE(echo.contains(name));
    CHECK(echo[name].get<double>() == value);
    // And the value lands in the field the declaration names.
    if (const auto* f = std::get_if<std::int64_t SchedulerConfig::*>(&k->scheduler_field)) CHECK(static_cast<double>(s.engine.scheduler.**f) == value);
    if (const auto* g = std::get_if<double SchedulerConfig::*>(&k->scheduler_field)) CHECK(s.engine.scheduler.**g == value);
  }
  CHECK(settings >= 8);
}

TEST_CASE("the reference lists every declared key with its range") {
  const std::string md = scenario_keys_markdown(registered_keys());
  for (const auto& k : scenario_keys()) {
    INFO(k.path);
    CHECK(contains(md, "| `" + k.path + "` |"));
  }
  CHECK(contains(md, "| `engine.scheduler.batch_size` | integer | 8 | [1, 1048576] | rows in every batch (<= max_num_seqs) (impl static) |"));
}
