// Clusters: tensor/pipeline-parallel cost and memory, routers, multi-replica and disaggregated
// simulation, checked against closed forms and exact equivalences.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "../support.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/report_io.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/parallel.hpp"
#include "sim/serve/router.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {
ModelSpec model(const char* name) { return load_model(resolve_data_ref("models", name, "", "")); }
HwProfile hw(const char* name) { return load_hw_profile(resolve_data_ref("hwprofiles", name, "", "")); }
std::int64_t count_of(const std::vector<Op>& ops, OpKind kind) {
  std::int64_t n = 0;
  for (const Op& op : ops) n += op.kind == kind ? op.count : 0;
  return n;
}
}  // namespace

TEST_CASE("fit check: Llama-2-70B needs TP2 on A100 80GB and KV capacity grows faster than TP") {
  const ModelSpec m = model("llama-2-70b");
  const HwProfile a100 = hw("a100-80gb-sxm");
  const FitCheck tp1 = check_fit(m, a100, Dtype::bf16, 1);
  const FitCheck tp2 = check_fit(m, a100, Dtype::bf16, 2);
  const FitCheck tp4 = check_fit(m, a100, Dtype::bf16, 4);
  const FitCheck tp8 = check_fit(m, a100, Dtype::bf16, 8);
  CHECK_FALSE(tp1.fits);
  CHECK(tp1.reason.find("does not fit") != std::string::npos);
  CHECK(tp2.fits);
  // Per-GPU weights halve with each doubling of TP, so KV capacity more than doubles.
  CHECK(tp2.memory.weight_bytes == doctest::Approx(2.0 * tp4.memory.weight_bytes).epsilon(0.01));
  CHECK(tp4.kv_capacity_tokens > 2 * tp2.kv_capacity_tokens);
  // 8 KV heads: TP8 is one KV head per GPU; per-token KV bytes per GPU shrink 8x.
  CHECK(tp8.memory.kv_bytes_per_token == doctest::Approx(m.kv_bytes_per_token(Dtype::bf16) / 8));
  CHECK(check_fit(m, a100, Dtype::bf16, 2, 2).fits);
  const FitCheck bad = check_fit(m, a100, Dtype::bf16, 3);
  CHECK_FALSE(bad.fits);
  CHECK(bad.reason.find("does not divide") != std::string::npos);
  // Llama-3-8B has 8 KV heads: TP16 would replicate them (allowed), TP 64 exceeds its 32 heads.
  CHECK(parallel_config_error(model("llama-3-8b"), 16, 1).empty());
  CHECK_FALSE(parallel_config_error(model("llama-3-8b"), 64, 1).empty());
}

TEST_CASE("tensor parallel ops: shards and two all-reduces per layer") {
  const ModelSpec m = model("llama-2-7b");
  BatchShape b;
  b.add_decode(100);
  std::vector<Op> one, four;
  build_iteration_ops(m, b, Precision{}, one, KernelPlan{}, 1);
  build_iteration_ops(m, b, Precision{}, four, KernelPlan{}, 4);
  CHECK(count_of(one, OpKind::all_reduce) == 0);
  CHECK(count_of(four, OpKind::all_reduce) == 2 * m.num_layers + 1);  // + the vocab-parallel embedding
  CHECK(count_of(four, OpKind::all_gather) == 1);                     // logits
  for (const Op& op : four) {
    if (std::string(op.name) == "qkv_proj") CHECK(op.n == m.qkv_width() / 4);
    if (std::string(op.name) == "mlp_down_proj") CHECK(op.k == m.ffn_size / 4);
    if (op.kind == OpKind::all_reduce) CHECK(op.bytes == doctest::Approx(m.hidden_size * 2.0));
  }
  // The all-reduce time is the interconnect's ring formula.
  const HwProfile h = hw("h100-sxm");
  const double bytes = 4096.0 * 2.0 * 512;
  const double expect = h.interconnect.nvlink.latency_s + 2.0 * 3.0 / 4.0 * bytes / h.interconnect.nvlink.bus_bandwidth_bytes_per_s;
  Op ar{"ar", OpKind::all_reduce, 1};
  ar.bytes = bytes;
  ar.comm_gpus = 4;
  CHECK(estimate(ar, h, Dtype::bf16).time_s == doctest::Approx(expect));
}

TEST_CASE("pipeline parallel: bubbles when micro-batches are fewer than stages") {
  const ModelSpec m = model("llama-2-7b");
  const HwProfile h = hw("a100-80gb-sxm");
  LaunchConfig launch;
  std::vector<Op> ops;
  ParallelConfig pp1, pp4;
  pp4.pipeline_parallel_size = 4;
  BatchShape one;
  one.add_decode(500);
  const StepTime t1 = estimate_iteration(m, h, Precision{}, KernelPlan{}, pp1, one, launch, 1, ops);
  const StepTime t4 = estimate_iteration(m, h, Precision{}, KernelPlan{}, pp4, one, launch, 1, ops);
  CHECK(t4.bubble_frac == doctest::Approx(0.75));  // one micro-batch, four stages
  // One sequence gains nothing from PP: four stage slots of a quarter of the layers, plus sends.
  CHECK(t4.time_s > t1.time_s);
  CHECK(t4.time_s < 1.2 * t1.time_s);
  BatchShape many;
  for (int i = 0; i < 64; ++i) many.add_decode(500);
  const StepTime full = estimate_iteration(m, h, Precision{}, KernelPlan{}, pp4, many, launch, 64, ops);
  CHECK(full.bubble_frac == 0.0);
  CHECK(full.comm_s > 0.0);
}

TEST_CASE("pipeline parallel: each stage slot goes through the launch queue of a step") {
  const ModelSpec m = model("llama-2-7b");
  HwProfile h = hw("a100-80gb-sxm");
  std::vector<Op> ops;
  ParallelConfig pp2;
  pp2.pipeline_parallel_size = 2;  // two micro-batches of four sequences: two slots, no bubble
  BatchShape b;
  for (int i = 0; i < 8; ++i) b.add_decode(500);
  LaunchConfig graphs;
  h.dependent_kernel_gap_s = 0.0;
  const StepTime base = estimate_iteration(m, h, Precision{}, KernelPlan{}, pp2, b, graphs, 8, ops);
  CHECK(base.bubble_frac == 0.0);
  // The GPU's gap between dependent kernels applies to every kernel of every slot, as in a step.
  const double gap_s = 2e-6;
  h.dependent_kernel_gap_s = gap_s;
  const StepTime gap = estimate_iteration(m, h, Precision{}, KernelPlan{}, pp2, b, graphs, 8, ops);
  CHECK(gap.kernels == base.kernels);
  CHECK(gap.gpu_s - base.gpu_s == doctest::Approx(static_cast<double>(base.kernels) * gap_s));
  CHECK(gap.time_s - base.time_s == doctest::Approx(static_cast<double>(base.kernels) * gap_s));
  // Eager launches far slower than the kernels: a slot lasts its launches plus the kernel the last
  // one starts, and the GPU's wait for them is reported.
  h.dependent_kernel_gap_s = 0.0;
  LaunchConfig eager;
  eager.cuda_graphs = false;
  eager.dispatch_s_per_kernel = 1e-3;
  const StepTime slow = estimate_iteration(m, h, Precision{}, KernelPlan{}, pp2, b, eager, 8, ops);
  const double launches_s = static_cast<double>(slow.kernels) * 1e-3;  // two slots of one micro-batch's launches
  CHECK(slow.launch_bound);
  CHECK(slow.launch_wait_s > 0.9 * launches_s);
  CHECK(slow.time_s > slow.host_s + launches_s);
  CHECK(slow.time_s < slow.host_s + launches_s + base.gpu_s);  // the kernels run while the next launch is issued
}

TEST_CASE("routers: round robin, least outstanding, least KV, prefix affinity") {
  std::vector<ReplicaLoad> loads(3);
  loads[0].outstanding = 5;
  loads[1].outstanding = 2;
  loads[2].outstanding = 2;
  loads[0].kv_capacity_blocks = loads[1].kv_capacity_blocks = loads[2].kv_capacity_blocks = 100;
  loads[1].kv_used_blocks = 50;
  loads[2].kv_used_blocks = 10;
  loads[0].kv_used_blocks = 5;
  RouterConfig c;
  c.impl = "round_robin";
  auto rr = make_router(c);
  CHECK(rr->route(loads, -1) == 0);
  CHECK(rr->route(loads, -1) == 1);
  CHECK(rr->route(loads, -1) == 2);
  CHECK(rr->route(loads, -1) == 0);
  c.impl = "least_outstanding";
  CHECK(make_router(c)->route(loads, -1) == 1);  // tie with 2: lowest index
  c.impl = "least_kv";
  CHECK(make_router(c)->route(loads, -1) == 0);
  c.impl = "prefix_affinity";
  c.balance_abs_threshold = 4;
  auto pa = make_router(c);
  CHECK(pa->route(loads, 7) == 1);  // new prefix: least outstanding, remembered
  loads[1].outstanding = 5;
  CHECK(pa->route(loads, 7) == 1);  // still within the balance thresholds
  loads[1].outstanding = 9;
  CHECK(pa->route(loads, 7) == 2);  // overloaded: falls back and moves the prefix
  CHECK(pa->route(loads, 7) == 2);
  for (const char* name : {"round_robin", "least_outstanding", "least_kv", "prefix_affinity"}) CHECK(routers().find(name) != nullptr);
}

TEST_CASE("scenario keys: parallel, router, disaggregation are strict") {
  auto doc = base_scenario();
  doc["parallel"] = {{"tensor_parallel_size", 3}};
  CHECK(parse_error(doc).find("test.json: parallel: tensor_parallel_size 3 does not divide") != std::string::npos);
  doc = base_scenario();
  doc["parallel"] = {{"tensor_parralel_size", 2}};
  CHECK(parse_error(doc).find("parallel.tensor_parralel_size: unknown key") != std::string::npos);
  doc = base_scenario();
  doc["router"] = {{"impl", "random"}};
  CHECK(parse_error(doc).find("router.impl: unknown router 'random'") != std::string::npos);
  doc = base_scenario();
  doc["parallel"] = {{"data_parallel_size", 0}};
  CHECK(parse_error(doc).find("parallel.data_parallel_size: must be") != std::string::npos);
  doc = base_scenario();
  doc["parallel"] = {{"data_parallel_size", 2}};
  doc["disaggregation"] = {{"prefill", {{"replicas", 1}}}, {"decode", {{"replicas", 1}}}};
  CHECK(parse_error(doc).find("disaggregation: sets the replica counts") != std::string::npos);
  doc = base_scenario();
  doc["disaggregation"] = {{"prefill", {{"replicas", 1}}}, {"decode", {{"replicas", 1}}}, {"kv_transfer_link", "carrier-pigeon"}};
  CHECK(parse_error(doc).find("disaggregation.kv_transfer_link: must be") != std::string::npos);
  const auto r = run_cli("list routers");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("prefix_affinity") != std::string::npos);
  const auto bad = run_cli("step --model llama-2-7b --hw a100-80gb-sxm --tp 3");
  CHECK(bad.exit_code == 2);
}

TEST_CASE("data parallel: two replicas behind round robin serve like two independent halves") {
  auto doc = base_scenario();
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 40, "arrival": {"impl": "all_at_once"},
      "prompt_tokens": {"impl": "fixed", "value_tokens": 300}, "output_tokens": {"impl": "fixed", "value_tokens": 50}})");
  const SimResult one = simulate(scenario_from(doc));
  doc["workload"]["num_requests"] = 80;
  doc["parallel"] = {{"data_parallel_size", 2}};
  const Scenario two_s = scenario_from(doc);
  const SimResult two = simulate(two_s);
  REQUIRE(two.replicas.size() == 2);
  for (const auto& r : two.replicas) {
    CHECK(r.metrics.completed == 40);
    CHECK(r.metrics.ttft_s.mean() == doctest::Approx(one.metrics.ttft_s.mean()).epsilon(1e-12));
    CHECK(r.metrics.e2e_s.max() == one.metrics.e2e_s.max());
  }
  CHECK(two.metrics.completed == 80);
  CHECK(two.metrics.e2e_s.mean() == doctest::Approx(one.metrics.e2e_s.mean()).epsilon(1e-12));
  CHECK(two.metrics.kv_peak_used_blocks == 2 * one.metrics.kv_peak_used_blocks);
  const auto report = make_report(two_s, two);
  CHECK(report["replicas"].size() == 2);
  CHECK(report["requests"]["completed"] == 80);
  CHECK(report["gpu"]["busy_frac"].get<double>() <= 1.0);
  // One replica, nothing contending: one event per iteration plus one per arrival.
  auto low = base_scenario();
  const SimResult single = simulate(scenario_from(low));
  CHECK(single.events == static_cast<std::uint64_t>(single.metrics.iterations + single.metrics.arrived));
}

TEST_CASE("disaggregated prefill/decode: one request pays exactly one KV transfer") {
  auto doc = base_scenario();
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 1, "arrival": {"impl": "all_at_once"},
      "prompt_tokens": {"impl": "fixed", "value_tokens": 1000}, "output_tokens": {"impl": "fixed", "value_tokens": 20}})");
  const SimResult unified = simulate(scenario_from(doc));
  doc["disaggregation"] = {{"prefill", {{"replicas", 1}}}, {"decode", {{"replicas", 1}}}};
  const Scenario ds = scenario_from(doc);
  const SimResult disagg = simulate(ds);
  REQUIRE(disagg.kv_transfers == 1);
  const double bytes = 1000 * ds.model.kv_bytes_per_token(ds.precision.kv_cache);
  const auto& nv = ds.hw.interconnect.nvlink;
  const double transfer_s = nv.p2p_latency_s + bytes / nv.p2p_bandwidth_bytes_per_s;
  CHECK(disagg.kv_transfer_bytes == doctest::Approx(bytes));
  CHECK(disagg.metrics.completed == 1);
  CHECK(disagg.metrics.ttft_s.mean() == unified.metrics.ttft_s.mean());
  CHECK(std::fabs(disagg.metrics.e2e_s.mean() - unified.metrics.e2e_s.mean() - transfer_s) < 2e-9);
  CHECK(disagg.replicas[0].metrics.completed == 0);
  CHECK(disagg.replicas[1].metrics.completed == 1);
  CHECK(disagg.replicas[1].metrics.prefill_iterations == 0);
}

TEST_CASE("prefix affinity with prefix caching beats round robin on shared system prompts") {
  auto doc = base_scenario();
  doc["engine"]["enable_prefix_caching"] = true;
  doc["parallel"] = {{"data_parallel_size", 4}};
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 400, "arrival": {"impl": "poisson", "rate_per_s": 20},
      "prompt_tokens": {"impl": "fixed", "value_tokens": 64}, "output_tokens": {"impl": "fixed", "value_tokens": 16},
      "shared_prefix": {"num_prefixes": 8, "prefix_tokens": 1500}})");
  doc["router"] = {{"impl", "round_robin"}};
  const SimResult rr = simulate(scenario_from(doc));
  doc["router"] = {{"impl", "prefix_affinity"}};
  const SimResult pa = simulate(scenario_from(doc));
  doc["router"] = {{"impl", "least_kv"}};
  const SimResult kv = simulate(scenario_from(doc));
  MESSAGE("mean TTFT: round_robin " << rr.metrics.ttft_s.mean() << " s, prefix_affinity " << pa.metrics.ttft_s.mean()
                                    << " s, least_kv " << kv.metrics.ttft_s.mean() << " s");
  CHECK(pa.metrics.completed == 400);
  CHECK(kv.metrics.completed == 400);
  // Round robin computes each prefix on every replica (32 misses), affinity on one (8 misses):
  // the engine's block-hash prefix cache finds more of each prompt.
  MESSAGE("prefix hit tokens: round_robin " << rr.metrics.prefix_hit_tokens << ", prefix_affinity " << pa.metrics.prefix_hit_tokens);
  CHECK(pa.metrics.prefix_hit_tokens > rr.metrics.prefix_hit_tokens);
  CHECK(pa.metrics.ttft_s.mean() < rr.metrics.ttft_s.mean());
}

TEST_CASE("disaggregation works under every batching policy: decode replicas never prefill migrated KV") {
  for (const char* impl : {"continuous", "chunked-prefill", "inflight", "static", "dynamic", "token-level"}) {
    CAPTURE(impl);
    auto doc = base_scenario();
    doc["engine"]["scheduler"] = {{"impl", impl}};
    if (std::string(impl) == "token-level") doc["engine"]["kv_reservation"] = "token";
    else doc["engine"]["enable_prefix_caching"] = true;
    doc["disaggregation"] = {{"prefill", {{"replicas", 2}}}, {"decode", {{"replicas", 1}}}};
    doc["workload"] = nlohmann::json::parse(R"({"num_requests": 60, "arrival": {"impl": "poisson", "rate_per_s": 30},
        "prompt_tokens": {"impl": "fixed", "value_tokens": 200}, "output_tokens": {"impl": "fixed", "value_tokens": 20},
        "shared_prefix": {"num_prefixes": 2, "prefix_tokens": 512}})");
    const SimResult r = simulate(scenario_from(doc));
    CHECK(r.metrics.completed == 60);
    CHECK(r.kv_transfers == 60);
    CHECK(r.replicas[2].metrics.completed == 60);
    CHECK(r.replicas[2].metrics.preemptions == 0);
    CHECK(r.replicas[2].metrics.prefill_iterations == 0);
    if (std::string(impl) != "token-level") CHECK(r.metrics.prefix_hit_tokens > 0);
  }
}

TEST_CASE("hardware profiles: interconnect keys are optional, defaulted and strict") {
  // Profiles without an interconnect object take documented defaults from their links.
  const HwProfile l40s = hw("l40s");
  CHECK(l40s.interconnect.nvlink_domain_gpus == 1);
  CHECK(l40s.interconnect.scope_for(2) == LinkScope::pcie);
  CHECK(l40s.interconnect.pcie.bus_bandwidth_bytes_per_s == l40s.host_link_bytes_per_s);
  const HwProfile h200 = hw("h200-sxm");
  CHECK(h200.interconnect.nvlink.bus_bandwidth_bytes_per_s == doctest::Approx(0.6 * h200.nvlink_bytes_per_s));
  CHECK(h200.interconnect.scope_for(8) == LinkScope::nvlink);
  // Bridged pairs: 4 GPUs fall back to PCIe.
  CHECK(hw("a100-40gb-pcie").interconnect.scope_for(4) == LinkScope::pcie);

  const std::string h100_path = resolve_data_ref("hwprofiles", "h100-sxm", "", "");
  auto doc = load_json_file(h100_path);
  inline_hw_tables(doc, h100_path);  // parsed below under another name
  const auto error_of = [](const nlohmann::json& d) {
    try {
      parse_hw_profile(d, "hw.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of(doc).empty());
  auto bad = doc;
  bad["interconnect"]["nvlink"]["bus_bandwith_bytes_per_s"] = 1e9;
  CHECK(error_of(bad).find("hw.json: interconnect.nvlink.bus_bandwith_bytes_per_s: unknown key") != std::string::npos);
  bad = doc;
  bad["interconnect"]["measured"] = nlohmann::json::parse(
      R"([{"collective": "all_reduce", "gpus": 8, "scope": "nvlink", "bytes_seconds": [[4096, 1e-5], [4096, 2e-5]]}])");
  CHECK(error_of(bad).find("interconnect.measured[0].bytes_seconds[1]: sizes must increase") != std::string::npos);
  bad["interconnect"]["measured"][0]["bytes_seconds"] = nlohmann::json::parse("[[4096, 1e-5], [1048576, 4e-5]]");
  CHECK(error_of(bad).empty());
  const HwProfile with_table = parse_hw_profile(bad, "hw.json");
  CHECK(with_table.interconnect.time_s(Collective::all_reduce, 4096, 8) == doctest::Approx(1e-5));
  bad["interconnect"]["measured"][0]["scope"] = "carrier_pigeon";
  CHECK(error_of(bad).find("scope: must be nvlink, pcie or inter_node") != std::string::npos);
}

TEST_CASE("fleets: replicas share kernel-time caches; past 64 replicas report.json keeps only the fleet's KV series") {
  auto doc = base_scenario();
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 200, "arrival": {"impl": "poisson", "rate_per_s": 200},
      "prompt_tokens": {"impl": "fixed", "value_tokens": 128}, "output_tokens": {"impl": "fixed", "value_tokens": 16}})");
  for (const int replicas : {64, 65}) {
    CAPTURE(replicas);
    doc["parallel"] = {{"data_parallel_size", replicas}};
    const Scenario s = scenario_from(doc);
    const SimResult res = simulate(s);
    CHECK(res.metrics.completed == 200);
    const nlohmann::json report = make_report(s, res);
    const bool omitted = replicas > 64;
    CHECK(report["replicas"][0]["kv_cache"].contains("usage_series") == !omitted);
    CHECK(report["cluster"].contains("replica_usage_series") == omitted);
    CHECK(!report["kv_cache"]["usage_series"].empty());  // the fleet's series either way
    // The shared caches change no figure: the exact path (no cache, no memo) agrees.
    SimHooks exact;
    exact.reference_path = true;
    const SimResult ref = simulate(s, exact);
    CHECK(ref.metrics.ttft_s.mean() == res.metrics.ttft_s.mean());
    CHECK(ref.metrics.end_ns == res.metrics.end_ns);
  }
}
