// KV offload tiers (engine.kv_offload; kv/offload_tiers.hpp, ReplicaState::start_offload_loads):
// the tiers' capacity and eviction order, the allocator's evictions into them, loads and their
// copy time in a run, async against blocking loads, determinism and the exact paths, and the
// parser's refusals.
#include <doctest/doctest.h>

#include <cmath>

#include "../support.hpp"
#include "sim/io/report_io.hpp"
#include "sim/kv/block_allocator.hpp"
#include "sim/kv/offload_tiers.hpp"
#include "sim/serve/memory_plan.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Multi-turn chat whose conversations outgrow a small GPU KV cache (a few thousand tokens), so
// the prefix cache evicts turns that later turns ask for again.
nlohmann::json offload_doc(double cpu_bytes) {
  auto doc = base_scenario();
  doc["engine"]["enable_prefix_caching"] = true;
  doc["engine"]["gpu_memory_utilization"] = 0.22;
  doc["engine"]["max_model_len"] = 2048;
  doc["workload"]["num_requests"] = 240;
  doc["workload"]["arrival"]["rate_per_s"] = 4.0;
  doc["workload"]["sessions"] = {{"turns", 6}, {"think_time_s", 10.0}};
  if (cpu_bytes > 0.0) doc["engine"]["kv_offload"] = {{"cpu_bytes", cpu_bytes}};
  return doc;
}

nlohmann::json report_of(const nlohmann::json& doc, const SimHooks& hooks = {}) {
  const Scenario s = scenario_from(doc);
  auto j = make_report(s, simulate(s, hooks));
  j["sim"].erase("events");
  j["sim"].erase("wall_s");
  return j;
}

}  // namespace

TEST_CASE("offload tiers: CPU then disk, least recently stored first, exclusive, bounded") {
  OffloadTiers t(2, 2);
  CHECK(t.enabled());
  for (std::uint64_t h = 1; h <= 5; ++h) t.evicted_from_gpu(true, h);
  // CPU keeps the newest two; disk the two before; the oldest fell off the bottom.
  CHECK(t.find(5) == OffloadTier::cpu);
  CHECK(t.find(4) == OffloadTier::cpu);
  CHECK(t.find(3) == OffloadTier::disk);
  CHECK(t.find(2) == OffloadTier::disk);
  CHECK(t.find(1) == OffloadTier::none);
  CHECK(t.used_blocks(OffloadTier::cpu) == 2);
  CHECK(t.used_blocks(OffloadTier::disk) == 2);
  CHECK(t.stored_blocks() == 5);
  CHECK(t.disk_written_blocks() == 3);
  CHECK(t.dropped_blocks() == 1);
  t.check_invariants();
  // A load takes the block out of its tier.
  t.take(3);
  CHECK(t.find(3) == OffloadTier::none);
  CHECK(t.used_blocks(OffloadTier::disk) == 1);
  // The GPU evicting content a tier already holds replaces the older copy: no block in two places.
  // Block 2 leaves disk for the CPU tier, whose oldest (4) moves down.
  t.evicted_from_gpu(true, 2);
  CHECK(t.find(2) == OffloadTier::cpu);
  CHECK(t.find(4) == OffloadTier::disk);
  CHECK(t.used_blocks(OffloadTier::cpu) == 2);
  CHECK(t.used_blocks(OffloadTier::disk) == 1);
  t.check_invariants();
}

TEST_CASE("offload tiers: blocks no lookup finds take room; no CPU tier means no tier at all") {
  OffloadTiers t(2, 0);
  t.evicted_from_gpu(true, 10);
  t.evicted_from_gpu(false, 0);
  t.evicted_from_gpu(false, 0);
  CHECK(t.find(10) == OffloadTier::none);  // pushed out by two anonymous blocks, no disk below
  CHECK(t.used_blocks(OffloadTier::cpu) == 2);
  CHECK(t.dropped_blocks() == 1);
  t.check_invariants();
  OffloadTiers off(0, 100);
  CHECK_FALSE(off.enabled());
  CHECK(off.capacity_blocks(OffloadTier::disk) == 0);
  off.evicted_from_gpu(true, 1);
  CHECK(off.find(1) == OffloadTier::none);
}

TEST_CASE("offload tiers: the allocator's evictions arrive in its LRU order") {
  BlockAllocator kv(4, 16);
  OffloadTiers tiers(8, 0);
  kv.set_offload(&tiers);
  // Four sequences of one block each, published and freed in the order 0..3: LRU order.
  for (SeqId s = 0; s < 4; ++s) {
    REQUIRE(kv.grow_to(s, 16));
    kv.publish(s, 0, 100 + s);
  }
  for (SeqId s = 0; s < 4; ++s) kv.free(s);
  CHECK(kv.cached_free_blocks() == 4);
  // Two fresh blocks evict the two least recently freed.
  REQUIRE(kv.grow_to(10, 32));
  CHECK(tiers.find(100) == OffloadTier::cpu);
  CHECK(tiers.find(101) == OffloadTier::cpu);
  CHECK(tiers.find(102) == OffloadTier::none);
  CHECK(kv.cached_block(102) >= 0);
  CHECK(kv.cached_block(100) < 0);
  CHECK(tiers.stored_blocks() == 2);
  kv.check_invariants();
  tiers.check_invariants();
}

TEST_CASE("offload: a CPU tier turns evicted turns into loads, and TTFT drops") {
  const auto off = report_of(offload_doc(0.0));
  const auto on = report_of(offload_doc(20e9));
  CHECK_FALSE(off.contains("kv_offload"));
  CHECK_FALSE(off["scenario"]["engine"].contains("kv_offload"));
  REQUIRE(on.contains("kv_offload"));
  const auto& k = on["kv_offload"];
  const double cpu = k["cpu_hit_ratio"].get<double>(), gpu = k["gpu_hit_ratio"].get<double>();
  const double hit_off = off["kv_cache"]["prefix_hit_ratio"].get<double>(), hit_on = on["kv_cache"]["prefix_hit_ratio"].get<double>();
  const double ttft_off = off["latency"]["ttft_s"]["mean"].get<double>(), ttft_on = on["latency"]["ttft_s"]["mean"].get<double>();
  INFO("GPU hits " << gpu << ", CPU hits " << cpu << ", prefix hits off/on " << hit_off << " / " << hit_on);
  INFO("TTFT mean off/on " << ttft_off << " / " << ttft_on);
  CHECK(k["loads"].get<std::int64_t>() > 0);
  CHECK(cpu > 0.1);
  CHECK(k["disk_hit_ratio"].get<double>() == 0.0);
  CHECK(hit_on == doctest::Approx(gpu + cpu));  // the prefix hit ratio counts every tier
  CHECK(hit_on > hit_off + 0.1);
  CHECK(ttft_on < ttft_off);
  CHECK(k["stored_bytes"].get<double>() > 0.0);
  // The tier's size: cpu_bytes over one block's bytes (per GPU).
  const Scenario s = scenario_from(offload_doc(20e9));
  const double block_bytes = plan_memory(s).kv_block_bytes();
  CHECK(k["cpu_capacity_blocks"].get<std::int64_t>() == static_cast<std::int64_t>(std::floor(20e9 / block_bytes)));
  // Every load's copy at the host link's bandwidth (the default), one block's bytes per block.
  CHECK(k["load_bytes"].get<double>() == doctest::Approx(static_cast<double>(k["cpu_hit_tokens"].get<std::int64_t>()) / 16.0 * block_bytes));
  CHECK(k["load_s"].get<double>() == doctest::Approx(k["load_bytes"].get<double>() / s.hw.host_link_bytes_per_s));
  CHECK(k["stall_s"].get<double>() == 0.0);  // async: the batch does not wait
  CHECK(k["mean_wait_s"].get<double>() >= k["load_s"].get<double>() / k["loads"].get<double>());
}

TEST_CASE("offload: blocking copies stall the steps: the loads and the saves of prefilled KV") {
  auto doc = offload_doc(20e9);
  doc["engine"]["kv_offload"]["load"] = "blocking";
  doc["engine"]["kv_offload"]["cpu_bandwidth_bytes_per_s"] = 2e9;
  const auto blocking = report_of(doc);
  const auto& k = blocking["kv_offload"];
  CHECK(k["loads"].get<std::int64_t>() > 0);
  CHECK(k["load_s"].get<double>() == doctest::Approx(k["load_bytes"].get<double>() / 2e9));
  // Every load, plus each step's prefilled KV saved over the same link (LMCache's wait_for_save).
  CHECK(k["stall_s"].get<double>() > k["load_s"].get<double>());
  const Scenario s = scenario_from(doc);
  const double prompt_bytes = 240.0 * 1000.0 * plan_memory(s).kv_bytes_per_token;  // at most: every prompt whole
  CHECK(k["stall_s"].get<double>() - k["load_s"].get<double>() < prompt_bytes / 2e9);
  CHECK(k["mean_wait_s"].get<double>() == 0.0);
  CHECK(blocking["scenario"]["engine"]["kv_offload"]["load"] == "blocking");
}

TEST_CASE("offload: a small CPU tier spills to disk, and disk hits load at the slower link") {
  auto doc = offload_doc(1e9);
  doc["engine"]["kv_offload"]["disk_bytes"] = 50e9;
  doc["engine"]["kv_offload"]["disk_bandwidth_bytes_per_s"] = 1e9;
  const auto r = report_of(doc);
  const auto& k = r["kv_offload"];
  CHECK(k["disk_hit_tokens"].get<std::int64_t>() > 0);
  CHECK(k["disk_write_bytes"].get<double>() > 0.0);
  const Scenario s = scenario_from(doc);
  const double block_bytes = plan_memory(s).kv_block_bytes();
  const double cpu_bytes = static_cast<double>(k["cpu_hit_tokens"].get<std::int64_t>()) / 16.0 * block_bytes;
  const double disk_bytes = static_cast<double>(k["disk_hit_tokens"].get<std::int64_t>()) / 16.0 * block_bytes;
  CHECK(k["load_s"].get<double>() == doctest::Approx(cpu_bytes / s.hw.host_link_bytes_per_s + disk_bytes / 1e9));
}

TEST_CASE("offload: same scenario, same report; the exact paths agree") {
  const auto doc = offload_doc(20e9);
  const auto a = report_of(doc);
  CHECK(a.dump() == report_of(doc).dump());
  SimHooks reference;
  reference.reference_path = true;
  reference.fast_forward = false;
  CHECK(a.dump() == report_of(doc, reference).dump());
  SimHooks stepwise;
  stepwise.fast_forward = false;
  stepwise.check_every_iteration = true;
  CHECK(a.dump() == report_of(doc, stepwise).dump());
}

TEST_CASE("offload: the parser's refusals name the key") {
  auto no_cache = offload_doc(20e9);
  no_cache["engine"]["enable_prefix_caching"] = false;
  CHECK(contains(parse_error(no_cache), "engine.kv_offload"));
  CHECK(contains(parse_error(no_cache), "enable_prefix_caching"));
  auto disk_alone = offload_doc(0.0);
  disk_alone["engine"]["kv_offload"] = {{"cpu_bytes", 0}, {"disk_bytes", 1e9}, {"disk_bandwidth_bytes_per_s", 1e9}};
  CHECK(contains(parse_error(disk_alone), "engine.kv_offload.disk_bytes"));
  auto no_disk_bw = offload_doc(20e9);
  no_disk_bw["engine"]["kv_offload"]["disk_bytes"] = 1e9;
  CHECK(contains(parse_error(no_disk_bw), "engine.kv_offload.disk_bandwidth_bytes_per_s"));
  auto stray_bw = offload_doc(20e9);
  stray_bw["engine"]["kv_offload"]["disk_bandwidth_bytes_per_s"] = 1e9;
  CHECK(contains(parse_error(stray_bw), "engine.kv_offload.disk_bandwidth_bytes_per_s"));
  auto negative = offload_doc(20e9);
  negative["engine"]["kv_offload"]["cpu_bytes"] = -1;
  CHECK(contains(parse_error(negative), "engine.kv_offload.cpu_bytes"));
  auto unknown = offload_doc(20e9);
  unknown["engine"]["kv_offload"]["cpu_gb"] = 20;
  CHECK(contains(parse_error(unknown), "engine.kv_offload.cpu_gb"));
  auto bad_mode = offload_doc(20e9);
  bad_mode["engine"]["kv_offload"]["load"] = "lazy";
  CHECK(contains(parse_error(bad_mode), "engine.kv_offload.load"));
  auto missing = offload_doc(0.0);
  missing["engine"]["kv_offload"] = nlohmann::json::object();
  CHECK(contains(parse_error(missing), "engine.kv_offload.cpu_bytes"));
  CHECK(parse_error(offload_doc(20e9)).empty());
}
