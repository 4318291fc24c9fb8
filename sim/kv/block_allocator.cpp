// Paged KV allocator: LIFO free list of uncached blocks, an LRU list of free indexed blocks with
// counts of the unindexed ones between them (evicted when no uncached block is free), refcounted
// block tables and a hash -> block index.
#include "sim/kv/block_allocator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace servesim {

BlockAllocator::BlockAllocator(std::int64_t capacity_blocks, std::int64_t block_size_tokens)
    : capacity_blocks_(capacity_blocks), block_size_(block_size_tokens), uncached_free_(capacity_blocks) {
  if (capacity_blocks < 0 || block_size_tokens <= 0) throw std::logic_error("BlockAllocator: bad sizes");
  if ((block_size_tokens & (block_size_tokens - 1)) == 0) {
    block_shift_ = 0;
    while ((std::int64_t{1} << block_shift_) < block_size_tokens) ++block_shift_;
  }
  // Nothing per block yet: blocks [fresh_, capacity) are the never-used ones (refill_free_list).
}

bool BlockAllocator::add_fresh_blocks(std::size_t want) {
  const auto untouched = static_cast<std::size_t>(capacity_blocks_ - fresh_);
  // The never-used blocks lie beneath every freed one, lowest id nearest the top, so a fresh
  // allocator hands out 0, 1, 2, ... and a freed block is reused before a new one, as a stack of
  // all capacity_blocks ids built up front did; they are added here a run at a time, as the
  // stack reaches them, so a replica that never fills its cache never pays for it (a fleet of
  // thousands of replicas). The per-block state grows with them.
  const std::size_t add = std::min(untouched, std::max(want - free_list_.size(), std::size_t{256}));
  std::vector<std::int32_t> run(add);
  for (std::size_t j = 0; j < add; ++j) run[j] = static_cast<std::int32_t>(fresh_ + static_cast<std::int64_t>(add - 1 - j));
  free_list_.insert(free_list_.begin(), run.begin(), run.end());
  fresh_ += static_cast<std::int64_t>(add);
  const auto n = static_cast<std::size_t>(fresh_);
  refcount_.resize(n, 0);
  hashed_.resize(n, 0);
  hash_.resize(n, 0);
  prev_.resize(n, -1);
  next_.resize(n, -1);
  return free_list_.size() >= want;
}

std::int64_t BlockAllocator::extra_blocks_for(SeqId seq, std::int64_t tokens) const {
  const std::int64_t need = blocks_for_tokens(tokens) - blocks_of(seq);
  return need > 0 ? need : 0;
}

void BlockAllocator::lru_push_back(std::int32_t b) {
  const auto i = static_cast<std::size_t>(b);
  refcount_[i] = static_cast<std::int32_t>(-tail_gap_);  // the unindexed blocks freed since the tail
  tail_gap_ = 0;
  prev_[i] = lru_tail_;
  next_[i] = -1;
  if (lru_tail_ >= 0) next_[static_cast<std::size_t>(lru_tail_)] = b;
  else lru_head_ = b;
  lru_tail_ = b;
  ++evictable_;
}

void BlockAllocator::lru_remove(std::int32_t b) {
  const auto i = static_cast<std::size_t>(b);
  // Its gap's unindexed blocks stay where they were in the order: before its successor.
  if (next_[i] >= 0) refcount_[static_cast<std::size_t>(next_[i])] += refcount_[i];
  else tail_gap_ -= refcount_[i];
  refcount_[i] = 0;
  if (prev_[i] >= 0) next_[static_cast<std::size_t>(prev_[i])] = next_[i];
  else lru_head_ = next_[i];
  if (next_[i] >= 0) prev_[static_cast<std::size_t>(next_[i])] = prev_[i];
  else lru_tail_ = prev_[i];
  prev_[i] = next_[i] = -1;
  --evictable_;
}

void BlockAllocator::take_free(std::int32_t* out, std::size_t k) {
  refill_free_list(k);  // cannot fail: the free list and the never-used blocks hold every counted block
  const std::int32_t* top = free_list_.data() + free_list_.size();
  for (std::size_t j = 0; j < k; ++j) out[j] = *--top;
  free_list_.resize(free_list_.size() - k);
}

void BlockAllocator::evict_into(std::int32_t* out, std::int64_t n) {
  while (n > 0) {
    const std::int32_t head = lru_head_;
    // The unindexed blocks freed before the oldest free indexed block (all of them when none is).
    const std::int64_t gap = head >= 0 ? -static_cast<std::int64_t>(refcount_[static_cast<std::size_t>(head)]) : tail_gap_;
    if (gap == 0) {
      // The oldest is the indexed head.
      const auto i = static_cast<std::size_t>(head);
      lru_remove(head);
      if (offload_) offload_->evicted_from_gpu(true, hash_[i]);
      index_.erase(hash_[i]);
      hashed_[i] = kUncached;
      *out++ = head;
      --cached_;
      ++evictions_;
      --n;
      continue;
    }
    // A run of unindexed blocks: counted as evicted, and any free non-indexed blocks will do (they
    // went on the free list uncached when freed), so the free list's top ones.
    const std::int64_t k = std::min(gap, n);
    if (head >= 0) refcount_[static_cast<std::size_t>(head)] += static_cast<std::int32_t>(k);
    else tail_gap_ -= k;
    take_free(out, static_cast<std::size_t>(k));
    out += k;
    unindexed_free_ -= k;
    evictable_ -= k;
    evictions_ += k;
    if (offload_) {
      for (std::int64_t j = 0; j < k; ++j) offload_->evicted_from_gpu(false, 0);
    }
    n -= k;
  }
}

bool BlockAllocator::append_evicting(const std::vector<std::uint32_t>& seqs) {
  const auto n = static_cast<std::int64_t>(seqs.size());
  if (n > free_blocks()) return false;
  // The uncached free blocks first (the free list's top first), then evicted ones.
  evicted_.resize(seqs.size());
  const std::int64_t plain = std::min(n, uncached_free_);
  take_free(evicted_.data(), static_cast<std::size_t>(plain));
  uncached_free_ -= plain;
  evict_into(evicted_.data() + plain, n - plain);
  for (std::size_t k = 0; k < seqs.size(); ++k) tables_[seqs[k]].push_back(evicted_[k]);
  return true;
}

bool BlockAllocator::grow_to(SeqId seq, std::int64_t tokens) {
  const std::int64_t extra = extra_blocks_for(seq, tokens);
  if (extra == 0) return true;
  if (extra > free_blocks()) return false;
  if (seq >= tables_.size()) tables_.resize(static_cast<std::size_t>(seq) + 1);
  auto& table = tables_[seq];
  // The uncached free blocks first, the free list's top first, moved as one run (an admission
  // takes a whole prompt's blocks, 64 for a 1024-token prompt, and uncached blocks carry no
  // refcount to set), then evictions.
  const std::size_t filled = table.size();
  table.resize(filled + static_cast<std::size_t>(extra));
  const std::int64_t plain = std::min(extra, uncached_free_);
  take_free(table.data() + filled, static_cast<std::size_t>(plain));
  uncached_free_ -= plain;
  if (extra > plain) evict_into(table.data() + filled + plain, extra - plain);
  return true;
}

void BlockAllocator::free(SeqId seq) {
  if (seq >= tables_.size()) return;
  auto& table = tables_[seq];
  if (cached_ == 0) {
    // No block is cached (prefix caching off, or nothing cached yet), so every block of the
    // table is uncached, held by this table alone, and goes back to the free list: the table is
    // moved there as one run, last block first (the order the general loop below frees them in).
    free_list_.insert(free_list_.end(), table.rbegin(), table.rend());
    uncached_free_ += static_cast<std::int64_t>(table.size());
    table.clear();  // capacity kept: slots are reused, so no allocation per request
    return;
  }
  // Last block first, so that under LRU a sequence's tail is evicted before its (more widely
  // shared) head, as vLLM does. An uncached or unindexed block has no other holder; an indexed
  // one is free when its last holder lets go. Unindexed blocks become uncached on the free list
  // and are counted into the gap after the list's tail (added before an indexed block joins it).
  std::int64_t uncached = 0, unindexed = 0;
  const auto add_gap = [&] {
    tail_gap_ += unindexed;
    unindexed_free_ += unindexed;
    evictable_ += unindexed;
    unindexed = 0;
  };
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    const std::int32_t b = *it;
    const auto i = static_cast<std::size_t>(b);
    if (hashed_[i] == kUncached) {
      free_list_.push_back(b);
      ++uncached;
    } else if (hashed_[i] == kUnindexed) {
      hashed_[i] = kUncached;
      free_list_.push_back(b);
      ++unindexed;
      --cached_;
    } else {
      if (refcount_[i] <= 0) throw std::logic_error("BlockAllocator: cached block freed twice");
      if (--refcount_[i] == 0) {
        add_gap();
        lru_push_back(b);
      }
    }
  }
  add_gap();
  uncached_free_ += uncached;
  table.clear();
}

std::int32_t BlockAllocator::cached_block(std::uint64_t hash) const {
  const auto it = index_.find(hash);
  return it == index_.end() ? -1 : it->second;
}

void BlockAllocator::append_cached(SeqId seq, std::int32_t block) {
  const auto i = static_cast<std::size_t>(block);
  if (hashed_[i] != kIndexed) throw std::logic_error("BlockAllocator: append_cached on a block no lookup finds");
  if (refcount_[i] <= 0) lru_remove(block);
  refcount_[i] += 1;
  if (seq >= tables_.size()) tables_.resize(static_cast<std::size_t>(seq) + 1);
  tables_[seq].push_back(block);
}

void BlockAllocator::publish(SeqId seq, std::int64_t index, std::uint64_t hash) {
  const std::int32_t b = tables_.at(seq).at(static_cast<std::size_t>(index));
  const auto i = static_cast<std::size_t>(b);
  if (hashed_[i] || index_.count(hash)) return;
  hashed_[i] = kIndexed;
  hash_[i] = hash;
  refcount_[i] = 1;  // uncached until now: seq's table is its only holder
  ++cached_;
  index_.emplace(hash, b);
}

void BlockAllocator::publish_unindexed(SeqId seq, std::int64_t first, std::int64_t last) {
  const auto& table = tables_.at(seq);
  if (first < 0 || last > static_cast<std::int64_t>(table.size())) throw std::logic_error("publish_unindexed: blocks out of range");
  for (std::int64_t k = first; k < last; ++k) {
    const auto i = static_cast<std::size_t>(table[static_cast<std::size_t>(k)]);
    if (hashed_[i]) throw std::logic_error("publish_unindexed: block already cached");
    hashed_[i] = kUnindexed;  // seq's table stays its only holder: no refcount
  }
  cached_ += last - first;
}

void BlockAllocator::check_invariants() const {
  const auto n = static_cast<std::size_t>(capacity_blocks_);
  const auto touched = static_cast<std::size_t>(fresh_);
  if (refcount_.size() != touched || hashed_.size() != touched || hash_.size() != touched || prev_.size() != touched ||
      next_.size() != touched) {
    throw std::logic_error("BlockAllocator: per-block state not sized to the blocks handed out");
  }
  // Blocks never handed out: uncached, in no table, free.
  const auto state = [&](std::size_t i) -> std::uint8_t { return i < touched ? hashed_[i] : std::uint8_t{kUncached}; };
  std::vector<std::int32_t> refs(n, 0);
  for (const auto& table : tables_) {
    for (const std::int32_t b : table) {
      if (b < 0 || b >= fresh_) throw std::logic_error("BlockAllocator: block id out of range");
      ++refs[static_cast<std::size_t>(b)];
    }
  }
  std::vector<std::int8_t> free_seen(n, 0);
  for (std::size_t i = touched; i < n; ++i) free_seen[i] = 1;
  for (const std::int32_t b : free_list_) {
    const auto i = static_cast<std::size_t>(b);
    if (i >= touched) throw std::logic_error("BlockAllocator: a never-used block on the free list");
    if (free_seen[i]++ || refs[i] > 0)
      throw std::logic_error("BlockAllocator: block both free and owned, or free twice (block " + std::to_string(b) + ")");
    if (hashed_[i]) throw std::logic_error("BlockAllocator: cached block on the uncached free list");
  }
  std::int64_t lru = 0, gaps = tail_gap_;
  for (std::int32_t b = lru_head_, prev = -1; b >= 0; prev = b, b = next_[static_cast<std::size_t>(b)]) {
    const auto i = static_cast<std::size_t>(b);
    if (prev_[i] != prev || (next_[i] < 0 && lru_tail_ != b)) throw std::logic_error("BlockAllocator: LRU list links broken");
    if (free_seen[i]++ || refs[i] > 0 || hashed_[i] != kIndexed || refcount_[i] > 0)
      throw std::logic_error("BlockAllocator: LRU block not free-indexed");
    gaps -= refcount_[i];
    if (++lru > capacity_blocks_) throw std::logic_error("BlockAllocator: LRU list cycles");
  }
  if (gaps != unindexed_free_ || tail_gap_ < 0 || unindexed_free_ < 0 || uncached_free_ < 0)
    throw std::logic_error("BlockAllocator: the LRU gaps do not count the free unindexed blocks");
  if (static_cast<std::int64_t>(free_list_.size()) + (capacity_blocks_ - fresh_) != uncached_free_ + unindexed_free_)
    throw std::logic_error("BlockAllocator: the free list does not hold the uncached and unindexed free blocks");
  if (lru + unindexed_free_ != evictable_) throw std::logic_error("BlockAllocator: evictable count wrong");
  std::int64_t used = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (state(i) == kIndexed && refs[i] > 0 ? refs[i] != refcount_[i] : refs[i] > 1) {
      throw std::logic_error("BlockAllocator: refcount differs from table references, or an unindexed block is shared");
    }
    if (refs[i] > 0) ++used;
    else if (!free_seen[i]) throw std::logic_error("BlockAllocator: block lost (block " + std::to_string(i) + ")");
  }
  std::int64_t indexed = 0, cached = 0;
  for (std::size_t i = 0; i < n; ++i) {
    indexed += state(i) == kIndexed;
    cached += state(i) != kUncached;
  }
  if (indexed != static_cast<std::int64_t>(index_.size())) throw std::logic_error("BlockAllocator: hash index size differs");
  if (cached != cached_) throw std::logic_error("BlockAllocator: cached block count differs");
  for (const auto& [h, b] : index_) {
    if (hashed_[static_cast<std::size_t>(b)] != kIndexed || hash_[static_cast<std::size_t>(b)] != h)
      throw std::logic_error("BlockAllocator: hash index points at the wrong block");
  }
  if (used + free_blocks() != capacity_blocks_) throw std::logic_error("BlockAllocator: blocks lost");
}

}  // namespace servesim
