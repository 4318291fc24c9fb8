// Attention data parallelism with expert parallelism (parallel.enable_attention_dp): each of the
// tp GPUs runs attention for its share of the batch with whole weights and its own KV, the routed
// experts split over all of them with all-to-all per MoE layer; the step waits for the busiest
// rank. Mechanisms: the rank's share of a batch, the experts' view of every rank's tokens, the
// memory split, the report's line and the parser's refusals.
#include <doctest/doctest.h>

#include "../support.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/parallel.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json moe_doc(bool adp) {
  auto doc = base_scenario();
  doc["model"] = "qwen3-30b-a3b";
  doc["hardware"] = "h100-sxm";
  doc["dtype"] = "bf16";
  doc["engine"]["max_num_seqs"] = 256;
  doc["engine"]["max_model_len"] = 4096;
  doc["parallel"] = {{"tensor_parallel_size", 4}, {"expert_parallel_size", 4}};
  if (adp) doc["parallel"]["enable_attention_dp"] = true;
  doc["workload"]["num_requests"] = 400;
  doc["workload"]["arrival"] = {{"impl", "all_at_once"}};
  return doc;
}

const Op* find_op(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (name == op.name) return &op;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("attention DP: a rank's share of the batch, and the experts see every rank's tokens") {
  BatchShape b;
  for (int i = 0; i < 10; ++i) b.add_decode(1000);
  b.add_prefill(512, 0, true);
  ParallelConfig p;
  p.tensor_parallel_size = 4;
  p.expert_parallel_size = 4;
  CHECK(attention_dp_rank(b, p).decode_seqs == 10);  // off: the batch itself
  p.enable_attention_dp = true;
  const BatchShape r = attention_dp_rank(b, p);
  CHECK(r.decode_seqs == 3);  // 10 sequences over 4 ranks: the busiest has 3, and their context
  CHECK(r.decode_kv_tokens == doctest::Approx(3 * 1001.0));
  CHECK(r.prefill_seqs == 1);  // one prompt is one rank's, whole: ranks are dealt sequences, not tokens
  CHECK(r.prefill_tokens == 512);
  CHECK(r.prefill_sampled == 1);
  BatchShape four;
  for (int i = 0; i < 4; ++i) four.add_prefill(512, 0, true);
  CHECK(attention_dp_rank(four, p).prefill_tokens == 512);  // four prompts over four ranks: one each
  CHECK(attention_dp_rank_seqs(11, p) == 3);
  p.attention_dp_load_imbalance = 2.0;
  CHECK(attention_dp_rank(b, p).decode_seqs == 5);

  // One rank's op list: attention whole (no all-reduce), experts over 4 GPUs fed by all 4 ranks.
  const ModelSpec m = scenario_from(moe_doc(true)).model;
  BatchShape rank;
  for (int i = 0; i < 64; ++i) rank.add_decode(1000);
  BatchShape group;
  for (int i = 0; i < 256; ++i) group.add_decode(1000);
  std::vector<Op> adp_ops, tp_ops;
  build_iteration_ops(m, rank, Precision{}, adp_ops, KernelPlan{}, 1, MoeRouting{4, 1.0, 4});
  build_iteration_ops(m, group, Precision{}, tp_ops, KernelPlan{}, 4, MoeRouting{4, 1.0, 1});
  CHECK(find_op(adp_ops, "attn_all_reduce") == nullptr);
  REQUIRE(find_op(tp_ops, "attn_all_reduce") != nullptr);
  const Op* qkv_adp = find_op(adp_ops, "qkv_proj");
  const Op* qkv_tp = find_op(tp_ops, "qkv_proj");
  CHECK(qkv_adp->m == 64);
  CHECK(qkv_adp->n == 4 * qkv_tp->n);  // whole weights on every rank
  // The experts' work per GPU is the same: every rank's tokens reach them either way.
  CHECK(find_op(adp_ops, "experts_gate_up")->flops == doctest::Approx(find_op(tp_ops, "experts_gate_up")->flops));
  // Each rank dispatches its own tokens; under TP each GPU dispatches a quarter of the group's.
  CHECK(find_op(adp_ops, "moe_dispatch")->bytes == doctest::Approx(find_op(tp_ops, "moe_dispatch")->bytes));
}

TEST_CASE("attention DP: TensorRT-LLM's MoE exchange all-gathers every rank's tokens and reduce-scatters the output") {
  const ModelSpec m = scenario_from(moe_doc(true)).model;  // qwen3-30b-a3b: hidden 2048, top 8, every layer MoE
  BatchShape rank;
  for (int i = 0; i < 64; ++i) rank.add_decode(1000);
  const double h = static_cast<double>(m.hidden_size), group_t = 4.0 * 64.0;
  const auto ops_for = [&](QuantScheme q, bool gathered) {
    KernelPlan plan;
    plan.moe_dp_allgather = gathered;
    Precision p;
    p.quant = q;
    if (q == QuantScheme::fp8 || q == QuantScheme::fp8_block) p.weights = Dtype::fp8;
    std::vector<Op> ops;
    build_iteration_ops(m, rank, p, ops, plan, 1, MoeRouting{4, 1.0, 4});
    return ops;
  };
  const auto bf16 = ops_for(QuantScheme::none, true);
  CHECK(find_op(bf16, "moe_dispatch") == nullptr);
  REQUIRE(find_op(bf16, "moe_allgather") != nullptr);
  // All 4 ranks' 64 tokens each, with 8 int32 expert ids and 8 fp32 weights per token.
  CHECK(find_op(bf16, "moe_allgather")->bytes == doctest::Approx(group_t * (h * 2.0 + 8 * 8.0)));
  CHECK(find_op(bf16, "moe_allgather")->kind == OpKind::all_gather);
  CHECK(find_op(bf16, "moe_reducescatter")->bytes == doctest::Approx(group_t * h * 2.0));  // bf16 output of every gathered token
  // Per-tensor FP8 is quantized before the gather, FP8 block scales inside the MoE kernel (bf16 sent).
  CHECK(find_op(ops_for(QuantScheme::fp8, true), "moe_allgather")->bytes == doctest::Approx(group_t * (h * 1.0 + 64.0)));
  CHECK(find_op(ops_for(QuantScheme::fp8_block, true), "moe_allgather")->bytes == doctest::Approx(group_t * (h * 2.0 + 64.0)));
  // The expert GEMMs are the same work either way; only the exchange differs.
  const auto a2a = ops_for(QuantScheme::none, false);
  CHECK(find_op(a2a, "moe_allgather") == nullptr);
  CHECK(find_op(a2a, "experts_gate_up")->flops == doctest::Approx(find_op(bf16, "experts_gate_up")->flops));
  // The bundled TensorRT-LLM 1.x profile runs it; a value it does not know is refused naming the key.
  CHECK(load_engine_profile("tensorrt-llm-pytorch", "t", "--engine").kernels.moe_dp_allgather);
  CHECK_FALSE(load_engine_profile("sglang", "t", "--engine").kernels.moe_dp_allgather);
  auto doc = nlohmann::json::parse(R"({"name":"x","kernels_per_layer":{"attention_dp_moe_comm":"nccl"},
      "cuda_graphs":{"decode":true},"host":{"overhead_per_step_s":0,"overhead_per_seq_s":0},
      "defaults":{"scheduler":"continuous","kv_cache":"paged","block_size":16}})");
  std::string error;
  try {
    parse_engine_profile(doc, "x.json");
  } catch (const InputError& e) {
    error = e.what();
  }
  CHECK(contains(error, "x.json: kernels_per_layer.attention_dp_moe_comm: must be all_to_all or allgather_reducescatter, got 'nccl'"));
}

TEST_CASE("attention DP: memory per GPU, the pooled KV, the report's line; off keeps the bytes") {
  const Scenario tp = scenario_from(moe_doc(false)), adp = scenario_from(moe_doc(true));
  const MemoryPlan a = plan_memory(tp), b = plan_memory(adp);
  // Whole attention and embeddings on every GPU: more weights, every KV head per token.
  CHECK(b.weight_bytes > a.weight_bytes);
  CHECK(b.kv_bytes_per_token == doctest::Approx(4 * a.kv_bytes_per_token));
  CHECK(b.kv_blocks == 4 * static_cast<std::int64_t>(std::floor(b.kv_bytes / b.kv_block_bytes())));

  const auto off = make_report(tp, simulate(tp));
  CHECK_FALSE(off["scenario"]["parallel"].contains("enable_attention_dp"));
  CHECK_FALSE(off["cluster"].contains("attention_dp_ranks"));
  const auto on = make_report(adp, simulate(adp));
  CHECK(on["scenario"]["parallel"]["enable_attention_dp"] == true);
  CHECK(on["cluster"]["attention_dp_ranks"] == 4);
  CHECK(on["requests"]["completed"] == 400);
  // 400 requests at once on 4 GPUs: no all-reduces and a quarter of the batch per rank beat TP4 here.
  CHECK(on["throughput"]["output_tokens_per_s"].get<double>() > off["throughput"]["output_tokens_per_s"].get<double>());
  std::ostringstream summary;
  print_summary(summary, on, 0.0);
  CHECK(contains(summary.str(), "tp 4 as attention DP 4 x experts over 4"));
  // The layout line: ranks, the busiest rank's batch (a quarter of the batch here), the exchange's share.
  const double rank_batch = on["batch"]["attention_dp_rank_mean_size"].get<double>();
  CHECK(rank_batch == doctest::Approx(on["batch"]["mean_size"].get<double>() / 4.0));
  CHECK(on["gpu"]["comm_frac"].get<double>() > 0.0);
  CHECK(contains(summary.str(), "  attn DP    4 ranks, experts over 4 GPUs: "));
  CHECK(contains(summary.str(), "sequences per rank per iteration (busiest, mean), MoE token exchange "));
  CHECK_FALSE(off["batch"].contains("attention_dp_rank_mean_size"));
  std::ostringstream off_summary;
  print_summary(off_summary, off, 0.0);
  CHECK_FALSE(contains(off_summary.str(), "attn DP"));
}

TEST_CASE("attention DP: the bundled scenario runs DeepSeek-V3 as TensorRT-LLM's max-throughput command does") {
  const Scenario s = load_scenario(resolve_data_ref("scenarios", "attention-dp", "", ""), {});
  CHECK(s.parallel.attention_dp_size() == 8);
  CHECK(load_engine_profile("tensorrt-llm-pytorch", "t", "--engine").kernels.moe_dp_allgather);
  const auto r = make_report(s, simulate(s));
  CHECK(r["requests"]["completed"] == 3072);
  // 1024 clients on 8 ranks of at most 128 sequences each (the blog's max_batch_size per rank).
  const double rank_batch = r["batch"]["attention_dp_rank_mean_size"].get<double>();
  CHECK(rank_batch <= 128.0);
  CHECK(rank_batch > 100.0);
  const double exchange = r["gpu"]["comm_frac"].get<double>();
  CHECK(exchange > 0.05);
  CHECK(exchange < 0.5);
  MESSAGE("attention-dp.json: " << r["throughput"]["output_tokens_per_s"].get<double>() << " output tok/s, " << rank_batch
                                << " sequences per rank, MoE exchange " << 100.0 * exchange << "% of busy time");
}

TEST_CASE("attention DP: the fast and exact paths agree") {
  const Scenario s = scenario_from(moe_doc(true));
  SimHooks exact;
  exact.reference_path = true;
  auto a = make_report(s, simulate(s)), b = make_report(s, simulate(s, exact));
  a["sim"].erase("events");
  b["sim"].erase("events");
  CHECK(a.dump() == b.dump());
}

TEST_CASE("attention DP: what it needs") {
  auto doc = moe_doc(true);
  doc["parallel"]["expert_parallel_size"] = 2;
  CHECK(contains(parse_error(doc), "parallel.expert_parallel_size: must equal tensor_parallel_size (4) with enable_attention_dp"));
  doc = moe_doc(true);
  doc["parallel"]["tensor_parallel_size"] = 1;
  doc["parallel"]["expert_parallel_size"] = 1;
  CHECK(contains(parse_error(doc), "parallel.enable_attention_dp: needs tensor_parallel_size > 1"));
  doc = moe_doc(true);
  doc["parallel"]["attention_dp_load_imbalance"] = 5.0;
  CHECK(contains(parse_error(doc), "parallel.attention_dp_load_imbalance: must be <= tensor_parallel_size (4)"));
  doc = moe_doc(false);
  doc["parallel"]["attention_dp_load_imbalance"] = 1.5;
  CHECK(contains(parse_error(doc), "parallel.attention_dp_load_imbalance: only read with enable_attention_dp true"));
  doc = base_scenario();
  doc["parallel"] = {{"tensor_parallel_size", 2}, {"expert_parallel_size", 2}, {"enable_attention_dp", true}};
  CHECK(contains(parse_error(doc), "expert"));  // a dense model has no experts to split
  doc = base_scenario();
  doc["parallel"] = {{"tensor_parallel_size", 2}, {"enable_attention_dp", true}, {"expert_parallel_size", 2}};
  doc["model"] = "qwen3-30b-a3b";
  doc["hardware"] = "h100-sxm";
  doc["dtype"] = "bf16";
  doc["disaggregation"] = {{"prefill", {{"replicas", 1}}}, {"decode", {{"replicas", 1}}}};
  CHECK(contains(parse_error(doc), "disaggregation: does not combine with parallel.enable_attention_dp"));
}
