// Paged KV-cache allocator (PagedAttention style): a mechanism only. Schedulers ask it whether
// blocks are free and grow or free a sequence's block table; policies live in sim/sched.
// Invariants (checked by check_invariants and the unit tests): every block is either free or
// owned by exactly one sequence; used + free == capacity.
#pragma once
#include <cstdint>
#include <vector>

namespace servesim {

using SeqId = std::uint32_t;

class BlockAllocator {
 public:
  BlockAllocator(std::int64_t capacity_blocks, std::int64_t block_size_tokens);

  std::int64_t capacity_blocks() const { return capacity_blocks_; }
  std::int64_t block_size_tokens() const { return block_size_; }
  std::int64_t free_blocks() const { return static_cast<std::int64_t>(free_list_.size()); }
  std::int64_t used_blocks() const { return capacity_blocks_ - free_blocks(); }
  std::int64_t blocks_for_tokens(std::int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Blocks `seq` holds now, and the extra blocks it needs to hold `tokens` in total.
  std::int64_t blocks_of(SeqId seq) const;
  std::int64_t extra_blocks_for(SeqId seq, std::int64_t tokens) const;
  bool can_grow_to(SeqId seq, std::int64_t tokens) const { return extra_blocks_for(seq, tokens) <= free_blocks(); }

  // Grows seq's block table so it holds `tokens` tokens. Returns false (and changes nothing)
  // when not enough blocks are free.
  bool grow_to(SeqId seq, std::int64_t tokens);
  // Returns all of seq's blocks to the free list. Freeing a sequence without blocks is a no-op;
  // a block freed twice is a logic error (throws).
  void free(SeqId seq);

  // Throws std::logic_error when an invariant is broken. O(capacity); for tests and debug builds.
  void check_invariants() const;

 private:
  std::int64_t capacity_blocks_;
  std::int64_t block_size_;
  std::vector<std::int32_t> free_list_;
  std::vector<std::vector<std::int32_t>> tables_;  // indexed by SeqId
  std::vector<std::int8_t> owned_;                // per block: 1 = owned by a sequence
};

}  // namespace servesim
