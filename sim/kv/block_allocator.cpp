// Paged KV allocator: LIFO free list of block ids, one block table per sequence.
#include "sim/kv/block_allocator.hpp"

#include <stdexcept>
#include <string>

namespace servesim {

BlockAllocator::BlockAllocator(std::int64_t capacity_blocks, std::int64_t block_size_tokens)
    : capacity_blocks_(capacity_blocks), block_size_(block_size_tokens) {
  if (capacity_blocks < 0 || block_size_tokens <= 0) throw std::logic_error("BlockAllocator: bad sizes");
  free_list_.reserve(static_cast<std::size_t>(capacity_blocks));
  // Lowest ids on top of the stack so a fresh allocator hands out 0, 1, 2, ...
  for (std::int64_t b = capacity_blocks - 1; b >= 0; --b) free_list_.push_back(static_cast<std::int32_t>(b));
  owned_.assign(static_cast<std::size_t>(capacity_blocks), 0);
}

std::int64_t BlockAllocator::blocks_of(SeqId seq) const {
  return seq < tables_.size() ? static_cast<std::int64_t>(tables_[seq].size()) : 0;
}

std::int64_t BlockAllocator::extra_blocks_for(SeqId seq, std::int64_t tokens) const {
  const std::int64_t need = blocks_for_tokens(tokens) - blocks_of(seq);
  return need > 0 ? need : 0;
}

bool BlockAllocator::grow_to(SeqId seq, std::int64_t tokens) {
  const std::int64_t extra = extra_blocks_for(seq, tokens);
  if (extra > free_blocks()) return false;
  if (seq >= tables_.size()) tables_.resize(static_cast<std::size_t>(seq) + 1);
  auto& table = tables_[seq];
  for (std::int64_t i = 0; i < extra; ++i) {
    const std::int32_t b = free_list_.back();
    free_list_.pop_back();
    owned_[static_cast<std::size_t>(b)] = 1;
    table.push_back(b);
  }
  return true;
}

void BlockAllocator::free(SeqId seq) {
  if (seq >= tables_.size()) return;
  auto& table = tables_[seq];
  for (const std::int32_t b : table) {
    if (!owned_[static_cast<std::size_t>(b)]) throw std::logic_error("BlockAllocator: block freed twice");
    owned_[static_cast<std::size_t>(b)] = 0;
    free_list_.push_back(b);
  }
  table.clear();
  table.shrink_to_fit();
}

void BlockAllocator::check_invariants() const {
  std::vector<std::int8_t> seen(static_cast<std::size_t>(capacity_blocks_), 0);
  std::int64_t owned = 0;
  for (const auto& table : tables_) {
    for (const std::int32_t b : table) {
      if (b < 0 || b >= capacity_blocks_) throw std::logic_error("BlockAllocator: block id out of range");
      if (seen[static_cast<std::size_t>(b)]++) throw std::logic_error("BlockAllocator: block owned twice");
      ++owned;
    }
  }
  for (const std::int32_t b : free_list_) {
    if (seen[static_cast<std::size_t>(b)]++)
      throw std::logic_error("BlockAllocator: block both free and owned, or free twice (block " + std::to_string(b) + ")");
  }
  if (owned + free_blocks() != capacity_blocks_) throw std::logic_error("BlockAllocator: blocks lost");
}

}  // namespace servesim
