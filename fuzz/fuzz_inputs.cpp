// libFuzzer harnesses for the input parsers, one binary per target (SERVESIM_FUZZ_TARGET):
//   scenario: parse_scenario on arbitrary bytes, then simulate it when small (the simulator must
//             not crash or hang on anything the parser accepts);
//   hw:       parse_hw_profile, then the cost model on a fixed model;
//   model:    parse_model (model cards and Hugging Face configs), then the memory plan;
//   trace:    TraceReader on raw bytes (not JSON: CSV or JSON lines), the first byte choosing the
//             format, every row read.
// Bad input must surface as InputError; anything else escaping (or a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/io/trace_reader.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;

namespace {

#if SERVESIM_FUZZ_TARGET != 4
void run_target(const nlohmann::json& doc) {
#if SERVESIM_FUZZ_TARGET == 1
  Scenario s = parse_scenario(doc, "fuzz.json");
  // Keep each input fast: the event count grows with requests x output tokens (and a trace or a
  // duration without a request count has no bound here).
  bool small = s.workload.num_requests >= 0 && s.workload.num_requests <= 64 && !s.workload.trace &&
               s.workload.sessions.turns <= 8;
  for (const auto& c : s.workload.classes) small = small && c.output_tokens.max_tokens <= 4096;
  if (small) simulate(s);
#elif SERVESIM_FUZZ_TARGET == 2
  const HwProfile hw = parse_hw_profile(doc, "fuzz.json");
  static const ModelSpec model = load_model(resolve_data_ref("models", "llama-3-8b", "", ""));
  for (std::int64_t batch : {1, 300}) {
    BatchShape shape;
    shape.add_prefill(batch, 0, true);
    for (std::int64_t i = 0; i < batch; ++i) shape.add_decode(1000);
    std::vector<Op> ops;
    build_iteration_ops(model, shape, Precision{}, ops);
    estimate_step(ops, hw, Dtype::bf16, LaunchConfig{}, batch);
  }
#elif SERVESIM_FUZZ_TARGET == 3
  Scenario s;
  s.model = parse_model(doc, "fuzz/config.json");
  s.hw = load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "", ""));
  s.engine.max_model_len = s.model.max_context_tokens;
  s.engine.max_num_batched_tokens = s.model.max_context_tokens;
  plan_memory(s);
  std::vector<Op> ops;
  BatchShape shape;
  shape.add_decode(s.model.max_context_tokens - 1);
  build_iteration_ops(s.model, shape, s.precision, ops);
  estimate_step(ops, s.hw, Dtype::bf16, LaunchConfig{}, 1);
#elif SERVESIM_FUZZ_TARGET != 4
#error "define SERVESIM_FUZZ_TARGET as 1 (scenario), 2 (hw), 3 (model) or 4 (trace)"
#endif
}
#endif

#if SERVESIM_FUZZ_TARGET == 4
// TraceReader streams from a file, so each input goes through one scratch file per process.
void run_trace(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  const auto& formats = trace_formats();
  const std::string& format = formats[data[0] % formats.size()];
  static const std::string path = "/tmp/servesim_fuzz_trace_" + std::to_string(getpid());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  TraceReader reader(path, format);
  while (reader.next()) {
  }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
#if SERVESIM_FUZZ_TARGET == 4
    run_trace(data, size);
#else
    const auto doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return 0;  // not JSON: load_json_file reports it; nothing to parse
    run_target(doc);
#endif
  } catch (const InputError&) {
    // The expected outcome for bad input.
  }
  return 0;
}
