// Block identity for prefix caching: a token is named by its source (a shared prefix or a
// conversation stream) and its offset there, and block i's hash chains block i-1's hash with the
// names of its own tokens, so two blocks match only if every token before and in them matches.
#pragma once
#include <algorithm>
#include <cstdint>

#include "sim/core/rng.hpp"

namespace servesim {

// Where a sequence's tokens come from: the first prefix_tokens are prefix `prefix_id`'s, the rest
// are stream `stream_id`'s (a conversation: later turns repeat earlier turns' tokens in order).
struct TokenSource {
  std::int32_t prefix_id = -1;
  std::int64_t prefix_tokens = 0;
  std::uint32_t stream_id = 0;
};

// Which other requests may use a request's stream. It decides when a sequence's KV blocks must be
// findable in the prefix cache (ReplicaState::shared_blocks): blocks nobody else can look up while
// it runs are registered only when it leaves the running set.
enum class StreamUse : std::uint8_t {
  alone,        // no other request: once it has left, nobody can look its stream's blocks up
  later_turns,  // the later turns of its session, which arrive only after it has completed
  concurrent,   // requests that may run beside it (a prompt pool sends the same prompt again)
};

// Hash of block `index` (block_size tokens) given the previous block's chained hash (0 for the
// first block). O(1): a block covers at most two sources.
inline std::uint64_t chain_block_hash(std::uint64_t previous, const TokenSource& src, std::int64_t index,
                                      std::int64_t block_size) {
  const std::int64_t lo = index * block_size, hi = lo + block_size;
  std::uint64_t h = splitmix64(previous ^ 0x5bd1e995ull);
  if (lo < src.prefix_tokens) {
    h = splitmix64(h ^ (1ull << 62) ^ static_cast<std::uint32_t>(src.prefix_id));
    h = splitmix64(h ^ static_cast<std::uint64_t>(lo) ^ (static_cast<std::uint64_t>(std::min(hi, src.prefix_tokens)) << 32));
  }
  if (hi > src.prefix_tokens) {
    h = splitmix64(h ^ (2ull << 62) ^ src.stream_id);
    const std::int64_t a = std::max(lo, src.prefix_tokens) - src.prefix_tokens, b = hi - src.prefix_tokens;
    h = splitmix64(h ^ static_cast<std::uint64_t>(a) ^ (static_cast<std::uint64_t>(b) << 32));
  }
  return h;
}

}  // namespace servesim
