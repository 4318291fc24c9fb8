// GPU-level what-if commands:
//   servesim quant-table --model M --hw H [--context C] [--engine E] [--json]
//   servesim contention --model M --hw H [--batch B] [--context C] [--max-instances N] [--engine E] [--json]
#include <cmath>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/cli/query_options.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/contention.hpp"

namespace servesim::cli {

namespace {
// The step's ranges (query_options.hpp): contention's batch is step's --batch (built on first
// use: the scenario key registry must not be read during static initialisation).
const IntegerFlag& batch_flag() {
  static const IntegerFlag f{"batch", "decode batch per instance", batch_range(), "1"};
  return f;
}
const IntegerFlag kTableContext{"context", "tokens in each sequence's KV cache", context_range(), "1024"};
const IntegerFlag kContext{"context", "tokens in each sequence's KV cache", context_range(), "512"};
const IntegerFlag kMaxInstances{"max-instances", "largest instance count tried", {1, 64}, "8"};
const IntegerFlag kSteps{"steps", "decode steps simulated per instance", {1, 1000}, "8"};

// InputError unless `context` tokens and the next one fit the model's context.
void check_model_context(const StepQuery& q, long long context, const std::string& cmd) {
  if (context + 1 > q.model.max_context_tokens) {
    throw InputError(cmd, "--context", "context + 1 (" + std::to_string(context + 1) + ") exceeds " + q.model.name + "'s max context " +
                                           std::to_string(q.model.max_context_tokens));
  }
}
}  // namespace

namespace {
// One row per scheme: each weight scheme with the query's KV cache, then 16-bit weights with each
// quantized KV cache ("kv-FORMAT"); a row the engine cannot run goes to "unsupported" with why.
nlohmann::json quant_table(const StepQuery& q, long long context) {
  struct Row {
    std::string name, quant;
    Dtype kv;
  };
  const Dtype base = q.precision.weights, kv = q.precision.kv_cache;
  std::vector<Row> schemes;
  for (const char* name : {dtype_name(base), "fp8", "fp8-block", "int8", "w8a16", "w4a16-gptq", "w4a16-awq", "w4a8", "w4afp8", "nvfp4", "mxfp4"}) {
    schemes.push_back({name, name, kv});
  }
  for (Dtype d : {Dtype::fp8, Dtype::int8, Dtype::int4}) {
    if (d != kv) schemes.push_back({std::string("kv-") + dtype_name(d), dtype_name(base), d});
  }
  const std::vector<long long> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  nlohmann::json out = {{"model", q.model.name}, {"hw", q.hw.name}, {"context", context}, {"engine", q.engine ? q.engine->name : "none"},
                        {"batches", batches}, {"schemes", nlohmann::json::array()}, {"unsupported", nlohmann::json::array()}};
  if (q.precision.quant_scope != QuantScope::all) out["quant_scope"] = quant_scope_name(q.precision.quant_scope);  // others keep their bytes
  // Decode attention on an integer cache: the profile's measured time over bf16 where it has one
  // (calibration.attention_decode_kv), else the modelled dequantization cost.
  if (const auto& kv = q.hw.kv_decode_time_over_bf16; kv.int8 > 0.0 || kv.int4 > 0.0) {
    out["kv_decode_time_over_bf16"] = {{"int8", kv.int8}, {"int4", kv.int4}};
  }
  std::vector<double> base_time;
  for (const Row& scheme : schemes) {
    StepQuery sq = q;
    sq.precision.quant = QuantScheme::none;
    apply_quant_name(scheme.quant, sq.precision, "servesim quant-table", "--quant");
    sq.precision.kv_cache = scheme.kv;
    if (const PrecisionSupport no = sq.engine ? engine_supports(*sq.engine, sq.precision, sq.hw) : PrecisionSupport{}; !no.key.empty()) {
      out["unsupported"].push_back({{"scheme", scheme.name}, {"why", no.why}});
      continue;
    }
    if (w8a8_dtype(sq.precision.quant)) sq.emulated = quant_emulated(sq.precision, sq.engine ? sq.engine->kernels : KernelPlan{}, sq.hw);
    const std::int64_t cap = max_batch(sq, context + 1);
    // The GEMM kernel the engine runs for this scheme on this GPU: its profile's quant_kernels, or
    // under scope experts its moe_quant_kernels (the quantized GEMMs are the experts' grouped ones).
    const std::size_t qi = static_cast<std::size_t>(sq.precision.quant);
    const bool experts = sq.precision.quant_scope == QuantScope::experts;
    const QuantKernel kernel = !sq.engine ? QuantKernel::auto_ : experts ? sq.engine->kernels.moe_quant_kernels[qi] : sq.engine->kernels.quant_kernels[qi];
    nlohmann::json row = {{"scheme", scheme.name}, {"emulated", sq.emulated}, {"max_batch", cap}, {"kernel", quant_kernel_name(kernel)},
                          {"weight_bytes", sq.model.weight_bytes(sq.precision.weights, sq.precision.quant, sq.precision.group_size, sq.precision.quant_scope)},
                          {"points", nlohmann::json::array()}};
    long long crossover = 0;
    for (std::size_t i = 0; i < batches.size(); ++i) {
      const TimedStep t = time_decode(sq, batches[i], context, false);
      if (base_time.size() < batches.size()) base_time.push_back(t.step.time_s);
      const double speedup = base_time[i] / t.step.time_s;
      if (crossover == 0 && scheme.name != schemes[0].name && speedup <= 1.0) crossover = batches[i];
      row["points"].push_back({{"batch", batches[i]},
                               {"fits", batches[i] <= cap},
                               {"step_s", t.step.time_s},
                               {"tokens_per_s", static_cast<double>(batches[i]) / t.step.time_s},
                               {"speedup_vs_16bit", speedup}});
    }
    // The first batch where the scheme is no faster than 16-bit (0: it helps at every batch shown).
    row["crossover_batch"] = crossover;
    if (moe_only_kernel(kernel)) row["activations"] = kernel_activation_name(sq.precision.quant, kernel, sq.precision.activations);
    out["schemes"].push_back(row);
  }
  return out;
}

void print_quant_table(const nlohmann::json& out) {
  const std::string base = out["schemes"][0]["scheme"];
  std::printf("decode tokens/s, %s on %s, context %lld%s (x = exceeds KV capacity; speedup vs %s in brackets)\n",
              out["model"].get<std::string>().c_str(), out["hw"].get<std::string>().c_str(), out["context"].get<long long>(),
              out.contains("quant_scope") ? ", schemes on the routed experts only (--quant-scope experts)" : "", base.c_str());
  std::printf("%-12s %9s", "scheme", "max_batch");
  for (const auto& b : out["batches"]) std::printf(" %14lld", b.get<long long>());
  std::printf("  crossover  kernel\n");
  for (const auto& row : out["schemes"]) {
    std::printf("%-12s %9lld", (row["scheme"].get<std::string>() + (row["emulated"].get<bool>() ? "*" : "")).c_str(),
                row["max_batch"].get<long long>());
    for (const auto& pt : row["points"]) {
      char cell[32];
      std::snprintf(cell, sizeof cell, "%.0f%s(%.2f)", pt["tokens_per_s"].get<double>(), pt["fits"].get<bool>() ? "" : "x",
                    pt["speedup_vs_16bit"].get<double>());
      std::printf(" %14s", cell);
    }
    const std::string kernel = row["scheme"] == base ? ""
                               : row["kernel"].get<std::string>() +
                                     (row.contains("activations") ? " (x " + row["activations"].get<std::string>() + " activations)" : "");
    std::printf("  %9lld  %s\n", row["crossover_batch"].get<long long>(), kernel.c_str());
  }
  for (const auto& u : out["unsupported"]) std::printf("%-12s not run: %s\n", u["scheme"].get<std::string>().c_str(), u["why"].get<std::string>().c_str());
  std::printf("* emulated: the GPU lacks the format; weights are converted to 16 bits at run time\n");
  if (const auto kv = out.find("kv_decode_time_over_bf16"); kv != out.end()) {
    std::printf("kv-FORMAT: 16-bit weights, the KV cache in FORMAT (int8/int4: decode attention at the time over bf16 measured on "
                "this GPU's CUDA-core paged kernel, int8 x%.2f, int4 x%.2f (0: modelled); docs/gpu-physics.md)\n",
                (*kv)["int8"].get<double>(), (*kv)["int4"].get<double>());
  } else {
    std::printf("kv-FORMAT: 16-bit weights, the KV cache in FORMAT (int8/int4: dequantized in attention at a modelled "
                "CUDA-core cost, docs/gpu-physics.md)\n");
  }
  std::printf("kernel: the engine's GEMM kernel for the scheme on this GPU (%s's %s; auto: servesim's generic choice, "
              "docs/gpu-physics.md)\n", out["engine"].get<std::string>().c_str(),
              out.contains("quant_scope") ? "moe_quant_kernels, the experts' grouped GEMMs" : "quant_kernels");
}
}  // namespace

int cmd_quant_table(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim quant-table", "Decode throughput per quantization scheme against batch size");
  add_query_options(opts);
  kTableContext.add(opts);
  opts.add_options()("json", "print JSON")("h,help", "show help");
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  StepQuery q = load_query(p, "servesim quant-table");
  const long long context = kTableContext.read(p, "servesim quant-table");
  check_model_context(q, context, "servesim quant-table");
  const nlohmann::json out = quant_table(q, context);
  if (p.count("json")) {
    std::cout << out.dump(2) << "\n";
  } else {
    print_quant_table(out);
  }
  return kExitOk;
}

int cmd_contention(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim contention", "Model instances sharing one GPU: decode throughput vs instance count");
  add_query_options(opts);
  for (const IntegerFlag* f : {&batch_flag(), &kContext, &kMaxInstances, &kSteps}) f->add(opts);
  opts.add_options()("eager", "launch kernels one by one")(
      "time-slice", "separate processes without MPS: kernels of different instances never overlap")(
      "json", "print JSON")("h,help", "show help");
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  const StepQuery q = load_query(p, "servesim contention");
  const std::string cmd = "servesim contention";
  const long long batch = batch_flag().read(p, cmd), context = kContext.read(p, cmd);
  const long long max_n = kMaxInstances.read(p, cmd), steps = kSteps.read(p, cmd);
  check_model_context(q, context, cmd);
  const TimedStep t = time_decode(q, batch, context, p.count("eager") > 0);
  LaunchConfig launch;
  if (q.engine) launch = q.engine->launch;
  launch.cuda_graphs = t.cuda_graphs;
  std::vector<KernelWork> stream = kernel_stream(t.ops, q.hw, q.precision.weights, launch);
  if (p.count("time-slice")) {
    // Each kernel then holds the whole GPU: running kernels split it evenly, nothing overlaps.
    for (KernelWork& k : stream) k.bw = k.sm = 1.0;
  }
  LaunchConfig folded = launch;  // host work per step, serial with the GPU
  folded.host_overhead_per_step_s = launch.host_overhead_per_step_s + static_cast<double>(batch) * launch.host_overhead_per_seq_s;

  nlohmann::json out = {{"model", q.model.name}, {"hw", q.hw.name}, {"batch", batch}, {"context", context},
                        {"engine", q.engine ? q.engine->name : "none"}, {"time_slice", p.count("time-slice") > 0},
                        {"points", nlohmann::json::array()}};
  double prev_total = 0.0;
  long long stop = 0;
  for (long long n = 1; n <= max_n; ++n) {
    const bool fits = max_batch(q, context + 1, n) >= batch;
    if (!fits) {
      if (stop == 0) stop = n - 1;
      out["points"].push_back({{"instances", n}, {"fits", false}});
      break;
    }
    const auto res = simulate_shared_gpu(std::vector<std::vector<KernelWork>>(static_cast<std::size_t>(n), stream),
                                         std::vector<LaunchConfig>(static_cast<std::size_t>(n), folded), steps);
    double total = 0.0;
    for (const auto& r : res) total += static_cast<double>(batch) / r.mean_step_s;
    const double per = total / static_cast<double>(n);
    // Adding an instance "pays" while it raises total throughput by at least 5%.
    if (stop == 0 && n > 1 && total < 1.05 * prev_total) stop = n - 1;
    out["points"].push_back({{"instances", n}, {"fits", true}, {"per_instance_tokens_per_s", per},
                             {"total_tokens_per_s", total}, {"step_s", res[0].mean_step_s}});
    prev_total = total;
  }
  out["instances_where_one_more_stops_paying"] = stop == 0 ? max_n : stop;
  if (p.count("json")) {
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("%s on %s, decode batch %lld per instance, context %lld, engine %s\n", q.model.name.c_str(), q.hw.name.c_str(),
              batch, context, q.engine ? q.engine->name.c_str() : "none");
  std::printf("%10s %14s %14s %12s\n", "instances", "tok/s each", "tok/s total", "step ms");
  for (const auto& pt : out["points"]) {
    if (!pt["fits"].get<bool>()) {
      std::printf("%10lld  does not fit in memory\n", pt["instances"].get<long long>());
      continue;
    }
    std::printf("%10lld %14.1f %14.1f %12.3f\n", pt["instances"].get<long long>(), pt["per_instance_tokens_per_s"].get<double>(),
                pt["total_tokens_per_s"].get<double>(), pt["step_s"].get<double>() * 1e3);
  }
  std::printf("one more instance stops paying (< 5%% more total) after %lld\n",
              out["instances_where_one_more_stops_paying"].get<long long>());
  return kExitOk;
}

}  // namespace servesim::cli
