// KV offload tiers below the GPU's prefix cache (engine.kv_offload): host memory, then optionally
// disk. A mechanism only, as BlockAllocator: it knows block hashes and capacities, not time. A
// cached block the GPU evicts is kept in the CPU tier instead of dropped; the CPU tier's least
// recently stored block moves down to disk, and disk's is dropped. A block found here and loaded
// back into the GPU leaves its tier (the tiers are exclusive: a block lives in one place).
// Blocks no lookup can find (BlockAllocator::publish_unindexed) still take their room, as every
// full block does in vLLM's CPU tier; they are kept anonymous.
#pragma once
#include <cstdint>
#include <list>
#include <unordered_map>

namespace servesim {

enum class OffloadTier : std::uint8_t { none, cpu, disk };

class OffloadTiers {
 public:
  OffloadTiers() = default;
  OffloadTiers(std::int64_t cpu_capacity_blocks, std::int64_t disk_capacity_blocks);

  bool enabled() const { return cpu_.capacity > 0; }
  std::int64_t capacity_blocks(OffloadTier t) const { return level(t).capacity; }
  std::int64_t used_blocks(OffloadTier t) const { return static_cast<std::int64_t>(level(t).lru.size()); }

  // A cached block leaves the GPU: `indexed` (findable under `hash`) or anonymous. Into the CPU
  // tier as its most recent block, pushing the CPU tier's oldest down to disk (or out).
  void evicted_from_gpu(bool indexed, std::uint64_t hash);
  // The tier holding the block with this hash, or none.
  OffloadTier find(std::uint64_t hash) const;
  // Removes the block with this hash from its tier (it was loaded into the GPU). No-op if absent.
  void take(std::uint64_t hash);

  // Blocks moved in: GPU -> CPU (stored), CPU -> disk (written), and blocks dropped off the
  // bottom tier.
  std::int64_t stored_blocks() const { return stored_; }
  std::int64_t disk_written_blocks() const { return disk_written_; }
  std::int64_t dropped_blocks() const { return dropped_; }

  // Throws std::logic_error unless every tier is within capacity, its index maps each indexed
  // entry to itself, and no hash is in two tiers. O(blocks); for tests.
  void check_invariants() const;

 private:
  struct Entry {
    std::uint64_t hash = 0;
    bool indexed = false;
  };
  // One tier: its blocks oldest first, and the indexed ones by hash.
  struct Level {
    std::int64_t capacity = 0;
    std::list<Entry> lru;
    std::unordered_map<std::uint64_t, std::list<Entry>::iterator> index;
  };
  const Level& level(OffloadTier t) const { return t == OffloadTier::disk ? disk_ : cpu_; }
  // Appends `e` to `to` (most recent), first making room by moving its oldest to the next tier.
  void push(Level& to, Entry e);

  Level cpu_, disk_;
  std::int64_t stored_ = 0, disk_written_ = 0, dropped_ = 0;
};

}  // namespace servesim
