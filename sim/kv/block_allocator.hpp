// Paged KV-cache allocator (PagedAttention style) with a prefix cache: a mechanism only.
// Schedulers ask it whether blocks are free and grow, share or free a sequence's block table;
// policies (reservation, admission, preemption) live in sim/sched.
// Invariants (checked by check_invariants and the unit tests): every block is exactly one of
// free-uncached (on the free list, or never used), free-indexed (evictable, in LRU order) or
// referenced; a free unindexed block is an uncached one on the free list that the counts treat as
// cached (uncached_free_, the LRU gaps: see there); an uncached block is held by
// at most one block table (only indexed blocks are shared); a held indexed block's refcount
// equals the number of block tables holding it; the hash index maps each cached hash to one block
// that carries that hash, and every cached block but the unindexed ones (publish_unindexed) is in
// it; used + free == capacity.
// Refcounts are kept for indexed blocks only: an uncached or unindexed block has one holder or
// none, so growing and freeing tables of uncached blocks (every block without prefix caching)
// moves block ids between the free list and the tables without touching per-block state.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/kv/offload_tiers.hpp"

namespace servesim {

using SeqId = std::uint32_t;

class BlockAllocator {
 public:
  BlockAllocator(std::int64_t capacity_blocks, std::int64_t block_size_tokens);

  std::int64_t capacity_blocks() const { return capacity_blocks_; }
  std::int64_t block_size_tokens() const { return block_size_; }
  // Allocatable blocks: never-used or freed blocks plus cached blocks no sequence holds (these
  // are evicted, least recently freed first, when nothing else is left).
  std::int64_t free_blocks() const {
    return uncached_free_ + evictable_;
  }
  std::int64_t used_blocks() const { return capacity_blocks_ - free_blocks(); }
  std::int64_t cached_free_blocks() const { return evictable_; }
  std::int64_t evictions() const { return evictions_; }
  // Blocks handed out at least once (per-block state exists for these only).
  std::int64_t touched_blocks() const { return fresh_; }
  // A shift for power-of-two block sizes: this runs for every sequence in every iteration.
  std::int64_t blocks_for_tokens(std::int64_t tokens) const {
    return block_shift_ >= 0 ? (tokens + block_size_ - 1) >> block_shift_ : (tokens + block_size_ - 1) / block_size_;
  }

  // Blocks `seq` holds now, and the extra blocks it needs to hold `tokens` in total.
  std::int64_t blocks_of(SeqId seq) const {
    return seq < tables_.size() ? static_cast<std::int64_t>(tables_[seq].size()) : 0;
  }
  std::int64_t extra_blocks_for(SeqId seq, std::int64_t tokens) const;

  // Grows seq's block table with fresh blocks so it holds `tokens` tokens. Returns false (and
  // changes nothing) when not enough blocks are free.
  bool grow_to(SeqId seq, std::int64_t tokens);
  // grow_to by exactly one block when an uncached block is free (a decoding sequence filled its
  // last block: every block_size tokens of every sequence, so it skips grow_to's general path).
  // False, changing nothing, when no uncached block is free (grow_to would evict) or seq has no
  // table yet.
  bool append_free_block(SeqId seq) {
    if (seq >= tables_.size() || uncached_free_ == 0) return false;
    refill_free_list(1);  // cannot fail: the free list and the never-used blocks hold uncached_free_
    tables_[seq].push_back(free_list_.back());
    free_list_.pop_back();
    --uncached_free_;
    return true;
  }
  // One fresh block for each sequence of `seqs` (the decoding sequences whose last block is full:
  // one decode step's worth), with one check and one trim of the free list for all of them; when
  // the free list runs short, the rest are taken by evicting cached blocks, least recently freed
  // first. Each sequence must have a table. False, changing nothing, when fewer than `seqs.size()`
  // blocks are free. Which sequence gets which block is not grow_to's order (the caller's order is
  // not the running order), which nothing observes: the blocks taken are the same, uncached once
  // taken, and interchangeable.
  bool append_free_blocks(const std::vector<std::uint32_t>& seqs) {
    if (static_cast<std::int64_t>(seqs.size()) > uncached_free_) return append_evicting(seqs);
    refill_free_list(seqs.size());  // cannot fail (append_free_block)
    const std::int32_t* top = free_list_.data() + free_list_.size();
    for (const SeqId seq : seqs) tables_[seq].push_back(*--top);
    free_list_.resize(free_list_.size() - seqs.size());
    uncached_free_ -= static_cast<std::int64_t>(seqs.size());
    return true;
  }
  // Drops one reference to each of seq's blocks, last block first; a block nobody holds becomes
  // free (evictable, most recently used, if it is cached). Freeing an empty table is a no-op.
  void free(SeqId seq);

  // Prefix cache. A block is identified by a chained hash of its content (see sched/prefix_hash).
  // The cached block with this hash, or -1.
  std::int32_t cached_block(std::uint64_t hash) const;
  // Whether a cached block is free (so sharing it takes one block of free capacity).
  bool is_free(std::int32_t cached) const { return refcount_[static_cast<std::size_t>(cached)] <= 0; }
  // Appends a cached block to seq's table (refcount + 1; leaves the LRU list if it was free).
  void append_cached(SeqId seq, std::int32_t block);
  // Registers block `index` of seq's table, whose content is final, under `hash`. No-op when the
  // hash is already cached (an identical copy stays uncached) or the block already has a hash.
  void publish(SeqId seq, std::int64_t index, std::uint64_t hash);
  // Makes blocks [first, last) of seq's table, uncached, cached blocks that no lookup can find:
  // blocks whose content only requests that have left could ask for (ReplicaState::shared_blocks).
  // They are freed, kept and evicted (counted, in LRU order) like any cached block, but have no
  // entry in the hash index, so publishing and evicting them costs no hash-table work; and since
  // nothing can tell two of them apart, the LRU order keeps only how many were freed between
  // two indexed blocks, not which (see lru_head_).
  void publish_unindexed(SeqId seq, std::int64_t first, std::int64_t last);

  // KV offload (engine.kv_offload): the cached blocks this allocator evicts go to `tiers` (null:
  // dropped, as without offload). The tiers must outlive the allocator's use of them.
  void set_offload(OffloadTiers* tiers) { offload_ = tiers; }

  // Throws std::logic_error when an invariant is broken. O(capacity); for tests and debug builds.
  void check_invariants() const;

 private:
  // Puts never-used blocks under the free list's freed ones until it holds `want` (or none are
  // left); true when it does. Inline: every decode step that opens blocks asks.
  bool refill_free_list(std::size_t want) {
    if (free_list_.size() >= want) return true;
    return fresh_ < capacity_blocks_ && add_fresh_blocks(want);
  }
  bool add_fresh_blocks(std::size_t want);
  // Moves the free list's top `k` blocks (never-used ones once it runs short) to out[0..k), top
  // first. The caller has counted them (uncached_free_ or an unindexed eviction).
  void take_free(std::int32_t* out, std::size_t k);
  bool append_evicting(const std::vector<std::uint32_t>& seqs);
  // The LRU order of free cached blocks (see lru_head_).
  void lru_push_back(std::int32_t b);
  void lru_remove(std::int32_t b);
  // Evicts `n` blocks into out[0..n), the least recently freed first (n cached blocks are free
  // and uncached_free_ is 0): a run of unindexed blocks at a time (counted; the blocks are the
  // free list's top ones), or the indexed head, whose hash is forgotten (or kept in a lower tier
  // with KV offload).
  void evict_into(std::int32_t* out, std::int64_t n);

  std::int64_t capacity_blocks_;
  std::int64_t block_size_;
  int block_shift_ = -1;  // log2(block_size_) when it is a power of two
  std::vector<std::int32_t> free_list_;             // free, uncached, handed out before (LIFO)
  std::int64_t fresh_ = 0;                          // blocks [fresh_, capacity) never handed out
  // The free blocks an allocation takes before it evicts, as if free unindexed blocks were still
  // cached (see prev_): the free list and the never-used blocks hold these plus unindexed_free_.
  std::int64_t uncached_free_ = 0;
  std::vector<std::vector<std::int32_t>> tables_;   // indexed by SeqId; capacity kept for reuse
  // Per block, while it is indexed: the table references, or while it is free (in the LRU list)
  // minus its gap (below). An unindexed block has one holder (only lookups share blocks) or none.
  std::vector<std::int32_t> refcount_;
  // Per block: kUncached, kIndexed (carries hash_[b], found through index_) or kUnindexed
  // (cached, but no lookup can find it).
  enum : std::uint8_t { kUncached = 0, kIndexed = 1, kUnindexed = 2 };
  std::vector<std::uint8_t> hashed_;
  std::int64_t cached_ = 0;  // blocks not kUncached (held, or free indexed)
  std::vector<std::uint64_t> hash_;
  // The free cached blocks in the order they were freed (evicted oldest first). Free unindexed
  // blocks are interchangeable with each other and with free uncached ones (no lookup finds them,
  // nothing else reads which one is taken), so a freed unindexed block becomes uncached and goes
  // on the free list, and only the counts remember it: the order is kept as the free indexed
  // blocks in a doubly linked list (prev_, next_), each with its gap, the unindexed blocks freed
  // after the one before it and before it (-refcount_), and tail_gap_, those freed after the
  // last. An allocation takes uncached_free_ first and then evicts in that order, as before, but
  // every block it takes that is not an indexed one is the free list's top: the most recently
  // freed, whose state is still in cache. A replica then touches about the blocks it has held at
  // once, not its whole cache (a fleet of thousands of replicas), with the same evictions.
  std::vector<std::int32_t> prev_, next_;
  std::int32_t lru_head_ = -1, lru_tail_ = -1;
  std::int64_t tail_gap_ = 0;
  std::int64_t unindexed_free_ = 0;
  std::int64_t evictable_ = 0;  // free cached blocks: the list's plus the gaps' unindexed ones
  std::int64_t evictions_ = 0;
  std::unordered_map<std::uint64_t, std::int32_t> index_;
  std::vector<std::int32_t> evicted_;  // append_evicting's blocks, kept for reuse
  OffloadTiers* offload_ = nullptr;
};

}  // namespace servesim
