// Quantization falloff (issue 40 item 4): the quantized / 16-bit ratio of published measurements
// (data/validation/quant_published.json, development data, sources cited in the file) against
// servesim's, each row through the step model with its engine profile. Bounds:
// data/validation/bounds.json table "quant" (median <= 10% per scheme, issue 40's target), set
// before the table's first run.
#include <doctest/doctest.h>

#include <cstdio>
#include <set>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/validate/bounds.hpp"
#include "sim/validate/quant_set.hpp"

using namespace servesim;

TEST_CASE("quantized / 16-bit ratios against published tables: median per scheme within its bound") {
  const auto rows = run_quant_rows(load_json_file(default_quant_rows_file()), default_quant_rows_file());
  std::printf("\nquantized / 16-bit ratio, development rows (data/validation/quant_published.json)\n");
  for (const auto& r : rows) {
    std::printf("  %-36s %-11s batch %-4lld published %5.2f predicted %5.2f %+6.1f%%\n", r.id.c_str(), r.scheme.c_str(),
                static_cast<long long>(r.batch), r.published_ratio, r.predicted_ratio, 100 * r.error);
  }
  const auto groups = quant_group_errors(rows);
  std::set<std::string> bounded;
  for (const ValidationBound& b : bound_table("quant")) {
    bool found = false;
    for (const QuantGroupError& g : groups) {
      if (g.scheme != b.engine || g.regime != b.phase) continue;
      found = true;
      std::printf("  %-11s %-5s n %zu median %.1f%% worst %.1f%% (bound %.0f%% / %.0f%%)\n", g.scheme.c_str(), g.regime.c_str(), g.n,
                  100 * g.median, 100 * g.worst, 100 * b.median, 100 * b.worst);
      CAPTURE(g.scheme);
      CHECK(g.median <= b.median);
      CHECK(g.worst <= b.worst);
    }
    CAPTURE(b.engine);
    CHECK(found);  // every bounded scheme has rows
    bounded.insert(b.engine);
  }
  for (const QuantGroupError& g : groups) {
    CAPTURE(g.scheme);
    CHECK(bounded.count(g.scheme) == 1);  // every scheme with rows is bounded
  }
}

TEST_CASE("quantization rows: a malformed row names the file and key") {
  auto doc = nlohmann::json::parse(R"({"rows": [{"id": "x", "source": "s", "engine": "vllm", "model": "llama-3-8b", "gpu": "h100-sxm",
      "scheme": "fp8", "metric": "static_batch_throughput", "batch": 1, "input_tokens": 16, "output_tokens": 4, "published_ratio": 1.5}]})");
  CHECK(run_quant_rows(doc, "q.json").size() == 1);
  doc["rows"][0]["scheme"] = "fp7";
  CHECK_THROWS_WITH_AS(run_quant_rows(doc, "q.json"), doctest::Contains("rows[0].scheme"), InputError);
  doc["rows"][0]["scheme"] = "fp8";
  doc["rows"][0]["metric"] = "latency";
  CHECK_THROWS_WITH_AS(run_quant_rows(doc, "q.json"), doctest::Contains("rows[0].metric"), InputError);
  doc["rows"][0]["metric"] = "static_batch_throughput";
  doc["rows"][0]["baseline_kv_free_fraction"] = 1.5;  // a fraction of the free memory, below 1
  CHECK_THROWS_WITH_AS(run_quant_rows(doc, "q.json"), doctest::Contains("rows[0].baseline_kv_free_fraction"), InputError);
  doc["rows"][0].erase("baseline_kv_free_fraction");
  doc["rows"][0]["typo"] = 1;
  CHECK_THROWS_AS(run_quant_rows(doc, "q.json"), InputError);
}
