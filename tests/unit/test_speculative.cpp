// Speculative decoding (engine.speculative; model/speculative.hpp, serve/speculative_step.hpp,
// Replica::speculate): the acceptance model, the verify pass's shape and price, KV growth by the
// accepted tokens, determinism, the drafter's memory, and the parser's refusals.
#include <doctest/doctest.h>

#include <cmath>

#include "../support.hpp"
#include "sim/analysis/step_query.hpp"
#include "sim/core/rng.hpp"
#include "sim/io/report_io.hpp"
#include "sim/model/speculative.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/simulation.hpp"
#include "sim/serve/speculative_step.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json speculative_doc(const std::string& method, std::int64_t k) {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 200;
  doc["workload"]["output_tokens"] = {{"impl", "fixed"}, {"value_tokens", 200}};
  doc["engine"]["speculative"] = {{"method", method}, {"num_speculative_tokens", k}};
  return doc;
}

nlohmann::json report_of(const nlohmann::json& doc) {
  const Scenario s = scenario_from(doc);
  auto j = make_report(s, simulate(s));
  j["sim"].erase("events");
  return j;
}

}  // namespace

TEST_CASE("speculative: accepted drafts are truncated geometric, mean (1 - a^(k+1)) / (1 - a)") {
  CHECK(speculative_tokens_per_step(0.0, 4) == 1.0);
  CHECK(speculative_tokens_per_step(0.5, 1) == doctest::Approx(1.5));
  CHECK(speculative_tokens_per_step(0.62, 3) == doctest::Approx(1.0 + 0.62 + 0.62 * 0.62 + 0.62 * 0.62 * 0.62));
  CHECK(speculative_accepted(0.0, 5, 0.99) == 0);
  CHECK(speculative_accepted(0.9, 3, 0.0) == 0);       // u below 1 - alpha: the first draft is rejected
  CHECK(speculative_accepted(0.9, 3, 0.999999) == 3);  // capped at k
  for (const double alpha : {0.3, 0.62, 0.85}) {
    RngStream rng(1, "test");
    constexpr int kDraws = 200000;
    double sum = 0.0, first = 0.0;
    for (int i = 0; i < kDraws; ++i) {
      const std::int64_t a = speculative_accepted(alpha, 4, rng.uniform());
      sum += static_cast<double>(a + 1);
      first += a >= 1 ? 1.0 : 0.0;
    }
    CAPTURE(alpha);
    CHECK(sum / kDraws == doctest::Approx(speculative_tokens_per_step(alpha, 4)).epsilon(0.01));
    CHECK(first / kDraws == doctest::Approx(alpha).epsilon(0.01));  // P(a >= 1) = alpha
  }
}

TEST_CASE("speculative: the verify pass scores k + 1 tokens per sequence over a context k longer") {
  BatchShape planned;
  planned.add_prefill(100, 0, true);
  for (int i = 0; i < 4; ++i) planned.add_decode(500);
  const BatchShape v = speculative_verify_shape(planned, 3);
  CHECK(v.decode_query_tokens == 4);
  CHECK(v.decode_kv_tokens == doctest::Approx(4 * (500 + 4)));
  CHECK(v.total_tokens() == 100 + 16);
  CHECK(v.sampled_seqs() == 1 + 16);  // logits for every draft position
  CHECK(v.decode_attn_pairs() == doctest::Approx(4 * (4 * 500 + 4 * 5 / 2.0)));
  CHECK(speculative_verify_shape(planned, 0).total_tokens() == planned.total_tokens());

  // Priced: k = 0 is the decode step; more drafts cost more, less than proportionally at batch 1
  // (where the GEMM tables' efficiency at 5 to 8 rows may even make a row more nearly free).
  StepQuery q;
  q.model = scenario_from(base_scenario()).model;
  q.hw = scenario_from(base_scenario()).hw;
  const double decode = time_decode(q, 1, 1000, false).step.time_s;
  CHECK(time_verify(q, 1, 1000, 0).step.time_s == decode);
  double last = decode;
  for (std::int64_t k = 1; k <= 7; ++k) {
    const double t = time_verify(q, 1, 1000, k).step.time_s;
    CHECK(t > 0.99 * last);
    last = t;
  }
  CHECK(last > decode);
  CHECK(last < 1.5 * decode);  // batch 1 streams the weights once for all 8 tokens
  CHECK(time_verify(q, 64, 1000, 7).step.time_s > 1.5 * time_decode(q, 64, 1000, false).step.time_s);
}

TEST_CASE("speculative: off keeps the report's bytes; on, a line of figures and the drafter's memory") {
  auto doc = base_scenario();
  const auto off = report_of(doc);
  CHECK_FALSE(off.contains("speculative"));
  CHECK_FALSE(off["scenario"]["engine"].contains("speculative"));

  doc = speculative_doc("eagle", 3);
  const Scenario s = scenario_from(doc);
  const auto on = report_of(doc);
  REQUIRE(on.contains("speculative"));
  CHECK(on["scenario"]["engine"]["speculative"]["method"] == "eagle");
  CHECK(on["scenario"]["engine"]["speculative"]["acceptance_rate"] == 0.62);  // the method's cited default
  CHECK(on["speculative"]["expected_tokens_per_step"].get<double>() == doctest::Approx(speculative_tokens_per_step(0.62, 3)));
  // 200 requests x ~90 verify passes: the drawn mean within 3% of the model's (outputs cap a few).
  CHECK(on["speculative"]["tokens_per_step"].get<double>() == doctest::Approx(speculative_tokens_per_step(0.62, 3)).epsilon(0.03));
  CHECK(on["speculative"]["draft_acceptance_frac"].get<double>() ==
        doctest::Approx((speculative_tokens_per_step(0.62, 3) - 1.0) / 3.0).epsilon(0.03));
  CHECK(on["requests"]["completed"] == 200);
  CHECK(on == report_of(doc));  // deterministic

  // The head's layer and fc take memory and its KV cache a layer per token.
  const Scenario plain = scenario_from(base_scenario());
  const MemoryPlan a = plan_memory(plain), b = plan_memory(s);
  CHECK(b.kv_bytes_per_token == doctest::Approx(a.kv_bytes_per_token * 33.0 / 32.0));
  const double head = s.model.layer_params() + 2.0 * 4096.0 * 4096.0;
  CHECK(b.weight_bytes - a.weight_bytes == doctest::Approx(head * 2.0).epsilon(1e-4));  // and its norm
}

TEST_CASE("speculative: speculation shortens decode at low load, lengthens it when the batch is large") {
  const auto tpot = [](nlohmann::json doc, bool spec) {
    if (!spec) doc["engine"].erase("speculative");
    return report_of(doc)["latency"]["tpot_s"]["p50"].get<double>();
  };
  auto doc = speculative_doc("eagle", 4);
  doc["workload"]["arrival"]["rate_per_s"] = 0.5;
  CHECK(tpot(doc, true) < 0.75 * tpot(doc, false));
  doc["engine"]["speculative"]["acceptance_rate"] = 0.3;
  doc["engine"]["max_num_seqs"] = 256;
  doc["workload"]["num_requests"] = 1000;
  doc["workload"]["arrival"] = {{"impl", "all_at_once"}};
  CHECK(tpot(doc, true) > tpot(doc, false));
}

TEST_CASE("speculative: a draft model needs its acceptance rate and the target's vocabulary") {
  auto doc = speculative_doc("draft_model", 4);
  doc["engine"]["speculative"]["draft_model"] = "llama-68m";
  CHECK(contains(parse_error(doc), "engine.speculative.acceptance_rate: required with method draft_model"));
  doc["engine"]["speculative"]["acceptance_rate"] = 0.6;
  CHECK(parse_error(doc) == "");
  doc["engine"]["speculative"]["draft_model"] = "llama-3.2-1b";
  CHECK(contains(parse_error(doc), "engine.speculative.draft_model: llama-3.2-1b's vocabulary (128256 tokens) differs from llama-2-7b's"));
  doc = speculative_doc("eagle", 3);
  doc["engine"]["speculative"]["draft_model"] = "llama-68m";
  CHECK(contains(parse_error(doc), "engine.speculative.draft_model: only read with impl draft_model"));
  doc = speculative_doc("none", 3);  // off: the baseline of a sweep over methods
  doc["engine"]["speculative"]["draft_model"] = "llama-3.2-1b";
  CHECK(parse_error(doc) == "");
  CHECK_FALSE(scenario_from(doc).engine.speculative.enabled());
  doc = speculative_doc("medusa", 3);
  CHECK(contains(parse_error(doc), "engine.speculative.method: unknown speculative method 'medusa' (draft_model, eagle, mtp)"));
  doc = speculative_doc("eagle", 0);
  CHECK(contains(parse_error(doc), "engine.speculative.num_speculative_tokens"));
  doc = speculative_doc("mtp", 2);
  doc["engine"]["speculative"]["acceptance_rate"] = 1.0;
  CHECK(contains(parse_error(doc), "engine.speculative.acceptance_rate"));
  doc = speculative_doc("eagle", 3);
  doc["engine"]["profile"] = "vllm-0.6";
  doc["engine"]["num_scheduler_steps"] = 4;
  doc["engine"]["scheduler"] = {{"impl", "continuous"}};
  CHECK(contains(parse_error(doc), "engine.speculative: does not combine with multi-step scheduling"));
}

TEST_CASE("speculative: a draft model's run costs its own steps and KV; the fast and exact paths agree") {
  auto doc = speculative_doc("draft_model", 4);
  doc["engine"]["speculative"]["draft_model"] = "llama-68m";
  doc["engine"]["speculative"]["acceptance_rate"] = 0.5;
  const Scenario s = scenario_from(doc);
  const SimResult fast = simulate(s);
  SimHooks hooks;
  hooks.reference_path = true;
  const SimResult exact = simulate(s, hooks);
  auto a = make_report(s, fast), b = make_report(s, exact);
  CHECK(fast.events == exact.events);
  a["sim"].erase("events");
  b["sim"].erase("events");
  CHECK(a.dump() == b.dump());
  CHECK(plan_memory(s).kv_bytes_per_token > plan_memory(scenario_from(base_scenario())).kv_bytes_per_token);
}
