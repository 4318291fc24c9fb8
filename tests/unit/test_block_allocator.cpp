// KV block allocator invariants: no leak, no double ownership, all-or-nothing growth.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

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

TEST_CASE("blocks move between the free list and tables as runs, in take order") {
  // Block ids are read back through the hash index (publish, then cached_block).
  BlockAllocator kv(8, 16);
  REQUIRE(kv.grow_to(0, 48));  // a fresh allocator hands out 0, 1, 2
  REQUIRE(kv.grow_to(1, 16));  // 3
  kv.free(0);                  // last block first: 2, 1, then 0 on top of the free list
  REQUIRE(kv.grow_to(2, 32));  // 0, 1
  REQUIRE(kv.grow_to(0, 16));  // 2
  kv.publish(2, 0, 100);
  kv.publish(2, 1, 101);
  kv.publish(0, 0, 102);
  CHECK(kv.cached_block(100) == 0);
  CHECK(kv.cached_block(101) == 1);
  CHECK(kv.cached_block(102) == 2);
  // One fresh block each, in the order named: seq 3 has 4 (its first block), then seq 1 takes 5
  // and seq 3 takes 6.
  REQUIRE(kv.grow_to(3, 16));
  const std::vector<std::uint32_t> openers{1, 3};
  REQUIRE(kv.append_free_blocks(openers));
  kv.publish(1, 1, 103);
  kv.publish(3, 1, 104);
  CHECK(kv.cached_block(103) == 5);
  CHECK(kv.cached_block(104) == 6);
  CHECK(kv.free_blocks() == 1);
  kv.check_invariants();
  // Fewer free blocks than sequences named: nothing changes.
  const std::vector<std::uint32_t> two{1, 3};
  CHECK_FALSE(kv.append_free_blocks(two));
  CHECK(kv.free_blocks() == 1);
  CHECK(kv.blocks_of(1) == 2);
  kv.check_invariants();
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

// Prefix cache: refcounted sharing, LRU eviction of free cached blocks, and the hash chain.
#include "sim/kv/prefix_hash.hpp"

TEST_CASE("prefix cache: published blocks are shared by refcount and survive their owner as free cached blocks") {
  BlockAllocator kv(8, 16);
  REQUIRE(kv.grow_to(0, 40));  // blocks 0,1,2; two full
  kv.publish(0, 0, 111);
  kv.publish(0, 1, 222);
  CHECK(kv.cached_block(111) == 0);
  CHECK(kv.cached_block(222) == 1);
  kv.publish(0, 1, 333);  // a block keeps its first hash
  CHECK(kv.cached_block(333) == -1);
  // A second sequence shares both: no new blocks used.
  kv.append_cached(1, kv.cached_block(111));
  kv.append_cached(1, kv.cached_block(222));
  CHECK(kv.used_blocks() == 3);
  kv.check_invariants();
  kv.free(0);
  CHECK(kv.used_blocks() == 2);  // the shared two stay held by seq 1; block 2 (uncached) is free
  CHECK(kv.cached_free_blocks() == 0);
  kv.free(1);
  CHECK(kv.used_blocks() == 0);
  CHECK(kv.cached_free_blocks() == 2);  // free but still findable
  CHECK(kv.free_blocks() == 8);
  CHECK(kv.cached_block(111) == 0);
  kv.check_invariants();
  // Taking a free cached block back uses free capacity and leaves the LRU list.
  CHECK(kv.is_free(0));
  kv.append_cached(2, 0);
  CHECK(kv.cached_free_blocks() == 1);
  CHECK(kv.used_blocks() == 1);
  kv.check_invariants();
}

TEST_CASE("prefix cache: uncached blocks go first, then the least recently freed cached block is evicted") {
  BlockAllocator kv(4, 16);
  REQUIRE(kv.grow_to(0, 32));  // blocks 0, 1
  kv.publish(0, 0, 10);
  kv.publish(0, 1, 11);
  REQUIRE(kv.grow_to(1, 32));  // blocks 2, 3
  kv.publish(1, 0, 20);
  kv.publish(1, 1, 21);
  kv.free(1);  // freed first: 21 (tail first), then 20
  kv.free(0);  // then 11, 10
  CHECK(kv.cached_free_blocks() == 4);
  REQUIRE(kv.grow_to(2, 16));  // nothing uncached is left: evicts the LRU head, hash 21
  CHECK(kv.evictions() == 1);
  CHECK(kv.cached_block(21) == -1);
  CHECK(kv.cached_block(20) >= 0);
  REQUIRE(kv.grow_to(2, 48));  // evicts 20, then 11
  CHECK(kv.cached_block(20) == -1);
  CHECK(kv.cached_block(11) == -1);
  CHECK(kv.cached_block(10) >= 0);
  CHECK(kv.evictions() == 3);
  kv.check_invariants();
  CHECK_FALSE(kv.grow_to(3, 32));  // one block left (cached 10): two do not fit
  kv.check_invariants();
}

TEST_CASE("prefix hash chain: equal token sources give equal chains; any earlier difference changes every later block") {
  const TokenSource a{3, 40, 7}, b{3, 40, 8}, c{4, 40, 7};
  std::uint64_t ha = 0, hb = 0, hc = 0;
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t na = chain_block_hash(ha, a, i, 16), nb = chain_block_hash(hb, b, i, 16), nc = chain_block_hash(hc, c, i, 16);
    // Blocks 0 and 1 lie inside the 40-token prefix: the stream does not matter. Block 2 holds
    // tokens 32..47, partly the stream's.
    if (i < 2) CHECK(na == nb);
    else CHECK(na != nb);
    CHECK(na != nc);
    CHECK(na == chain_block_hash(ha, a, i, 16));  // a pure function
    ha = na, hb = nb, hc = nc;
  }
  // Same tokens at a different position are a different block.
  CHECK(chain_block_hash(0, a, 0, 16) != chain_block_hash(0, a, 1, 16));
}

TEST_CASE("prefix cache random workload: refcounts, LRU and the hash index stay consistent") {
  BlockAllocator kv(64, 4);
  RngStream rng(5, "prefix");
  std::vector<std::int64_t> tokens(12, 0);
  for (int step = 0; step < 20000; ++step) {
    const auto seq = static_cast<SeqId>(rng.uniform_int(0, 11));
    const double u = rng.uniform();
    if (u < 0.15) {
      kv.free(seq);
      tokens[seq] = 0;
    } else if (u < 0.3 && tokens[seq] == 0) {
      // Share a chain of cached blocks named by small hashes 1..k, as far as they exist.
      std::int64_t n = 0;
      for (std::uint64_t h = 1; h <= 6; ++h) {
        const std::int32_t b = kv.cached_block(h * 1000 + static_cast<std::uint64_t>(n));
        if (b < 0) break;
        kv.append_cached(seq, b);
        ++n;
      }
      tokens[seq] = n * 4;
    } else {
      const std::int64_t want = tokens[seq] + rng.uniform_int(1, 9);
      if (kv.grow_to(seq, want)) {
        tokens[seq] = want;
        for (std::int64_t i = 0; i < want / 4 && i < 6; ++i) kv.publish(seq, i, static_cast<std::uint64_t>(i + 1) * 1000 + static_cast<std::uint64_t>(i));
      }
    }
    if (step % 500 == 0) kv.check_invariants();
  }
  kv.check_invariants();
  for (SeqId s = 0; s < 12; ++s) kv.free(s);
  CHECK(kv.used_blocks() == 0);
  CHECK(kv.free_blocks() == kv.capacity_blocks());
  kv.check_invariants();
}

// The LRU order of free cached blocks, written out entry by entry (indexed blocks by hash,
// unindexed ones as anonymous entries): what the allocator keeps as indexed blocks with gaps and
// a stack of interchangeable unindexed blocks must evict the same hashes at the same times.
#include <list>
#include <map>

TEST_CASE("prefix cache: indexed and unindexed blocks are evicted in the order they were freed") {
  struct Entry {
    bool cached = false, indexed = false;
    std::uint64_t hash = 0;
  };
  struct Model {
    std::int64_t uncached_free;
    std::list<Entry> lru;  // free cached entries, least recently freed first
    std::map<std::uint64_t, std::int32_t> refs;  // indexed hashes: holders (0: free, in lru)
    std::map<SeqId, std::vector<Entry>> tables;
    std::int64_t evictions = 0, unindexed_evictions = 0;
    void erase_from_lru(std::uint64_t h) {
      for (auto it = lru.begin(); it != lru.end(); ++it)
        if (it->indexed && it->hash == h) return void(lru.erase(it));
      FAIL("hash not in the model's LRU");
    }
    // One block for a table: an uncached free one, else the least recently freed cached one.
    void take_one() {
      if (uncached_free > 0) return void(--uncached_free);
      if (lru.front().indexed) refs.erase(lru.front().hash);
      else ++unindexed_evictions;
      lru.pop_front();
      ++evictions;
    }
  } m{48, {}, {}, {}, 0, 0};
  BlockAllocator kv(48, 4);
  RngStream rng(11, "lru-gaps");
  const auto check_same = [&] {
    CHECK(kv.evictions() == m.evictions);
    CHECK(kv.cached_free_blocks() == static_cast<std::int64_t>(m.lru.size()));
    CHECK(kv.free_blocks() == m.uncached_free + static_cast<std::int64_t>(m.lru.size()));
    for (std::uint64_t i = 1; i <= 8; ++i) {
      for (std::uint64_t v = 0; v < 3; ++v) {
        const std::uint64_t h = i * 1000 + v;
        const auto it = m.refs.find(h);
        REQUIRE((kv.cached_block(h) >= 0) == (it != m.refs.end()));
        if (it != m.refs.end()) CHECK(kv.is_free(kv.cached_block(h)) == (it->second == 0));
      }
    }
  };
  for (int step = 0; step < 30000; ++step) {
    const auto seq = static_cast<SeqId>(rng.uniform_int(0, 9));
    const std::uint64_t variant = seq % 3;
    auto& table = m.tables[seq];
    const double u = rng.uniform();
    if (u < 0.2) {
      kv.free(seq);
      for (auto it = table.rbegin(); it != table.rend(); ++it) {
        if (!it->cached) ++m.uncached_free;
        else if (!it->indexed) m.lru.push_back(*it);
        else if (--m.refs[it->hash] == 0) m.lru.push_back(*it);
      }
      table.clear();
    } else if (u < 0.35 && table.empty()) {
      // Share the chain of variant's indexed blocks, as far as it is cached.
      for (std::uint64_t i = 1; i <= 8; ++i) {
        const std::uint64_t h = i * 1000 + variant;
        const std::int32_t b = kv.cached_block(h);
        if (b < 0) break;
        kv.append_cached(seq, b);
        if (m.refs[h]++ == 0) m.erase_from_lru(h);
        table.push_back({true, true, h});
      }
    } else if (u < 0.5) {
      // Its trailing run of full uncached blocks becomes unindexed.
      std::size_t first = table.size();
      while (first > 0 && !table[first - 1].cached) --first;
      if (first < table.size()) {
        kv.publish_unindexed(seq, static_cast<std::int64_t>(first), static_cast<std::int64_t>(table.size()));
        for (std::size_t k = first; k < table.size(); ++k) table[k] = {true, false, 0};
      }
    } else if (u < 0.6 && step > 100) {
      // A decode step's blocks: one for each of a few sequences (append_free_blocks, evicting
      // when no uncached block is free), or one for one sequence (append_free_block, which
      // refuses rather than evict). Every table exists by now (the grow_to calls below).
      std::vector<std::uint32_t> seqs;
      for (SeqId s = 0; s < 10; ++s)
        if (rng.uniform() < 0.3) seqs.push_back(s);
      const bool one = seqs.size() <= 1;
      if (one) seqs = {seq};
      const auto n = static_cast<std::int64_t>(seqs.size());
      const bool fits = one ? kv.append_free_block(seq) : kv.append_free_blocks(seqs);
      REQUIRE(fits == (one ? m.uncached_free > 0 : n <= m.uncached_free + static_cast<std::int64_t>(m.lru.size())));
      if (!fits) continue;
      for (const std::uint32_t s : seqs) {
        m.take_one();
        m.tables[s].push_back({});
      }
    } else {
      const std::int64_t extra = rng.uniform_int(1, 3);
      const bool fits = kv.grow_to(seq, (static_cast<std::int64_t>(table.size()) + extra) * 4);
      REQUIRE(fits == (extra <= m.uncached_free + static_cast<std::int64_t>(m.lru.size())));
      if (!fits) continue;
      for (std::int64_t k = 0; k < extra; ++k) {
        m.take_one();
        table.push_back({});
      }
      // Publish its first blocks under variant's chain where they are uncached and not cached yet.
      for (std::size_t k = 0; k < table.size() && k < 8; ++k) {
        const std::uint64_t h = (k + 1) * 1000 + variant;
        kv.publish(seq, static_cast<std::int64_t>(k), h);
        if (table[k].cached || m.refs.count(h)) continue;
        table[k] = {true, true, h};
        m.refs[h] = 1;
      }
    }
    check_same();
    if (step % 500 == 0) kv.check_invariants();
  }
  CHECK(m.evictions - m.unindexed_evictions > 1000);  // both kinds, many times
  CHECK(m.unindexed_evictions > 1000);
  kv.check_invariants();
}

TEST_CASE("prefix cache: unindexed blocks are reused from the top, evictions counted as in LRU order") {
  // Requests of 40 blocks each, whose blocks all become unindexed when they finish (no shared
  // prefix): the allocator reuses the blocks just freed, so it touches about one request's
  // blocks (and a first run of never-used ones), not its 4096, while the evictions are counted
  // as taking the never-used blocks first would count them: every block after the first 4096.
  BlockAllocator kv(4096, 16);
  for (int r = 0; r < 1000; ++r) {
    REQUIRE(kv.grow_to(0, 40 * 16));
    kv.publish_unindexed(0, 0, 40);
    kv.free(0);
  }
  CHECK(kv.evictions() == 1000 * 40 - 4096);
  CHECK(kv.cached_free_blocks() == 4096);
  CHECK(kv.touched_blocks() <= 256);
  kv.check_invariants();
}
