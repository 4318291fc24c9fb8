// TensorRT-LLM's CUDA-graph ablation (NVIDIA/TensorRT-LLM blog 3, "Optimizing DeepSeek R1
// Throughput on NVIDIA Blackwell GPUs": CUDA graphs had a "22% E2E performance impact" on
// DeepSeek-R1 FP4, 8 x B200, attention DP 8 + EP 8, ISL/OSL 1K/2K, max throughput) against the
// same toggle in servesim. IN-SAMPLE: tensorrt-llm-pytorch's host.dispatch_s_per_kernel is fitted
// to this figure (the profile's sources say how), so this is a regression check of that fit, not
// a held-out one. The configuration is the published row trt-blog-dsr1-b200-tp8ep8-fp4-bf16kv-
// maxtput's scenario; that row's published throughput is not used here. Bound
// trtllm-graphs/blog3-dsr1-b200-ablation in data/validation/bounds.json.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "sim/core/time.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/simulation.hpp"
#include "sim/validate/bounds.hpp"
#include "sim/validate/published_set.hpp"

using namespace servesim;

namespace {
double output_tokens_per_s(const Scenario& s) {
  const SimResult r = simulate(s);
  return static_cast<double>(r.metrics.output_tokens) / ns_to_seconds(r.metrics.end_ns);
}
}  // namespace

TEST_CASE("TensorRT-LLM's CUDA-graph ablation on DeepSeek-R1 B200 (blog 3): throughput with / without graphs") {
  const std::string file = default_published_file();
  PublishedOptions options;
  options.only = "trt-blog-dsr1-b200-tp8ep8-fp4-bf16kv-maxtput";
  options.simulate = false;  // the row's scenario only
  const auto rows = validate_published(load_json_file(file), file, options);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].skip.empty());
  nlohmann::json doc = rows[0].scenario;
  const double with_graphs = output_tokens_per_s(parse_scenario(doc, file));
  doc["engine"]["cuda_graphs"] = false;
  const double eager = output_tokens_per_s(parse_scenario(doc, file));
  constexpr double kPublishedSpeedup = 1.22;  // blog 3: "22% E2E performance impact"
  const double speedup = with_graphs / eager;
  const double err = speedup / kPublishedSpeedup - 1.0;
  const double bound = validation_bound("trtllm-graphs/blog3-dsr1-b200-ablation");
  std::printf("\nTensorRT-LLM CUDA graphs on / off, DeepSeek-R1 FP4 8 x B200 DEP8 1K/2K (in-sample: the eager dispatch time is fitted "
              "to it)\n  servesim %.0f / %.0f output tok/s = %.3fx, published %.2fx: %+.1f%% (bound %.0f%%)\n",
              with_graphs, eager, speedup, kPublishedSpeedup, 100 * err, 100 * bound);
  CHECK(std::fabs(err) <= bound);
}
