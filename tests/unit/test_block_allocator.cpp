// KV block allocator invariants: no leak, no double ownership, all-or-nothing growth.
#include <doctest/doctest.h>

#include <stdexcept>

#include "sim/core/rng.hpp"
#include "sim/kv/block_allocator.hpp"

using namespace servesim;

TEST_CASE("grow and free keep used + free == capacity") {
  BlockAllocator kv(10, 16);
  CHECK(kv.blocks_for_tokens(1) == 1);
  CHECK(kv.blocks_for_tokens(16) == 1);
  CHECK(kv.blocks_for_tokens(17) == 2);
  REQUIRE(kv.grow_to(0, 40));  // 3 blocks
  CHECK(kv.used_blocks() == 3);
  REQUIRE(kv.grow_to(0, 48));  // still 3
  CHECK(kv.used_blocks() == 3);
  REQUIRE(kv.grow_to(1, 100));  // 7 blocks
  CHECK(kv.free_blocks() == 0);
  CHECK_FALSE(kv.grow_to(2, 1));  // nothing left: no change
  CHECK(kv.blocks_of(2) == 0);
  kv.check_invariants();
  kv.free(0);
  CHECK(kv.free_blocks() == 3);
  kv.free(0);  // freeing an empty table is a no-op, not a double free
  CHECK(kv.free_blocks() == 3);
  kv.check_invariants();
}

TEST_CASE("a failed grow changes nothing") {
  BlockAllocator kv(4, 16);
  REQUIRE(kv.grow_to(0, 32));
  CHECK_FALSE(kv.grow_to(0, 16 * 7));
  CHECK(kv.blocks_of(0) == 2);
  CHECK(kv.free_blocks() == 2);
}

TEST_CASE("random workload: no leak, invariants hold throughout") {
  BlockAllocator kv(500, 16);
  RngStream rng(1, "alloc");
  std::vector<std::int64_t> tokens(40, 0);
  for (int step = 0; step < 20000; ++step) {
    const auto seq = static_cast<SeqId>(rng.uniform_int(0, 39));
    if (rng.uniform() < 0.2) {
      kv.free(seq);
      tokens[seq] = 0;
    } else {
      const std::int64_t want = tokens[seq] + rng.uniform_int(1, 64);
      if (kv.grow_to(seq, want)) tokens[seq] = want;
    }
    if (step % 1000 == 0) kv.check_invariants();
  }
  std::int64_t expected_used = 0;
  for (SeqId s = 0; s < 40; ++s) expected_used += kv.blocks_for_tokens(tokens[s]);
  CHECK(kv.used_blocks() == expected_used);
  for (SeqId s = 0; s < 40; ++s) kv.free(s);
  CHECK(kv.free_blocks() == kv.capacity_blocks());
  kv.check_invariants();
}
