// KV offload tiers: exclusive LRU tiers of block hashes (see offload_tiers.hpp).
#include "sim/kv/offload_tiers.hpp"

#include <iterator>
#include <stdexcept>

namespace servesim {

OffloadTiers::OffloadTiers(std::int64_t cpu_capacity_blocks, std::int64_t disk_capacity_blocks) {
  if (cpu_capacity_blocks < 0 || disk_capacity_blocks < 0) throw std::logic_error("OffloadTiers: negative capacity");
  cpu_.capacity = cpu_capacity_blocks;
  // Disk sits below the CPU tier: without a CPU tier nothing reaches it.
  disk_.capacity = cpu_capacity_blocks > 0 ? disk_capacity_blocks : 0;
}

void OffloadTiers::push(Level& to, Entry e) {
  if (to.capacity <= 0) {
    ++dropped_;
    return;
  }
  if (static_cast<std::int64_t>(to.lru.size()) >= to.capacity) {
    const Entry oldest = to.lru.front();
    if (oldest.indexed) to.index.erase(oldest.hash);
    to.lru.pop_front();
    if (&to == &cpu_ && disk_.capacity > 0) {
      ++disk_written_;
      push(disk_, oldest);
    } else {
      ++dropped_;
    }
  }
  to.lru.push_back(e);
  if (e.indexed) to.index[e.hash] = std::prev(to.lru.end());
}

void OffloadTiers::evicted_from_gpu(bool indexed, std::uint64_t hash) {
  if (!enabled()) return;
  // A copy of this content may still sit in a lower tier (the GPU computed it again after it
  // was offloaded): the newer copy replaces it.
  if (indexed) take(hash);
  ++stored_;
  push(cpu_, Entry{hash, indexed});
}

OffloadTier OffloadTiers::find(std::uint64_t hash) const {
  if (cpu_.index.count(hash)) return OffloadTier::cpu;
  if (disk_.index.count(hash)) return OffloadTier::disk;
  return OffloadTier::none;
}

void OffloadTiers::take(std::uint64_t hash) {
  for (Level* l : {&cpu_, &disk_}) {
    const auto it = l->index.find(hash);
    if (it == l->index.end()) continue;
    l->lru.erase(it->second);
    l->index.erase(it);
    return;
  }
}

void OffloadTiers::check_invariants() const {
  for (const Level* l : {&cpu_, &disk_}) {
    if (static_cast<std::int64_t>(l->lru.size()) > l->capacity) throw std::logic_error("OffloadTiers: a tier over capacity");
    std::size_t indexed = 0;
    for (auto it = l->lru.begin(); it != l->lru.end(); ++it) {
      if (!it->indexed) continue;
      ++indexed;
      const auto found = l->index.find(it->hash);
      if (found == l->index.end() || found->second != it) throw std::logic_error("OffloadTiers: index does not point at its entry");
    }
    if (indexed != l->index.size()) throw std::logic_error("OffloadTiers: index size differs from indexed entries");
  }
  for (const auto& entry : cpu_.index) {
    if (disk_.index.count(entry.first)) throw std::logic_error("OffloadTiers: a block in two tiers");
  }
}

}  // namespace servesim
