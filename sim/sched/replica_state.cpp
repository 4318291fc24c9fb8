// The toolkit every policy shares: see replica_state.hpp.
#include "sim/sched/replica_state.hpp"

#include <bit>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "sim/kv/prefix_hash.hpp"

namespace servesim {

const Sequence& WaitQueue::front() const {
  for (const auto& q : queues_) {
    if (!q.empty()) return q.front();
  }
  throw std::logic_error("WaitQueue::front on an empty queue");
}

Sequence& WaitQueue::front() { return const_cast<Sequence&>(std::as_const(*this).front()); }

void WaitQueue::pop_front() {
  for (auto& q : queues_) {
    if (!q.empty()) {
      q.pop_front();
      --size_;
      return;
    }
  }
}

void WaitQueue::push_back(const Sequence& s, std::size_t cls) {
  queues_[cls].push_back(s);
  ++size_;
}

void WaitQueue::push_front(const Sequence& s, std::size_t cls) {
  queues_[cls].push_front(s);
  ++size_;
}

void IterationPlan::add_prefill(std::size_t index, std::int64_t tokens, const Sequence& seq) {
  items.push_back({static_cast<std::uint32_t>(index), tokens, true});
  shape.add_prefill(tokens, seq.computed_tokens, seq.computed_tokens + tokens >= seq.target_tokens);
}

namespace {
constexpr std::size_t kPriorityClasses = 16;  // the parser caps priority_class_weights at 16
}

ReplicaState::ReplicaState(const EngineConfig& cfg, std::int64_t kv_capacity_blocks, double block_bytes,
                           RequestPool& table)
    : config(cfg),
      kv(kv_capacity_blocks, cfg.kv_reservation == KvReservation::token ? 1 : cfg.block_size),
      requests(table),
      waiting(cfg.scheduler.order == SchedulerConfig::Order::priority ? kPriorityClasses : 1),
      kv_block_bytes(block_bytes) {
  watermark_blocks = static_cast<std::int64_t>(std::floor(cfg.watermark_frac * static_cast<double>(kv_capacity_blocks)));
  if (block_bytes > 0.0) swap_capacity_blocks = static_cast<std::int64_t>(std::floor(cfg.swap_space_bytes / block_bytes));
  const KvOffloadConfig& o = cfg.kv_offload;
  if (o.enabled() && block_bytes > 0.0) {
    offload = OffloadTiers(static_cast<std::int64_t>(std::floor(o.cpu_bytes / block_bytes)),
                           static_cast<std::int64_t>(std::floor(o.disk_bytes / block_bytes)));
    kv.set_offload(&offload);
  }
}

std::size_t ReplicaState::class_of(const Sequence& s) const {
  if (waiting.classes() == 1) return 0;
  return std::min<std::size_t>(requests[s.request].priority, waiting.classes() - 1);
}

std::uint32_t ReplicaState::take_slot() {
  if (free_slots.empty()) return slots_created++;
  const std::uint32_t s = free_slots.back();
  free_slots.pop_back();
  return s;
}

std::int32_t ReplicaState::shared_blocks(const Request& r) const {
  // Blocks no other request can look up or hold a copy of while this one runs may be registered
  // late: the cache then differs only in entries nobody reads before the sequence leaves. Who may:
  // - concurrent streams (a prompt pool): another copy of the prompt may run beside it and fill
  //   the same output blocks, and the first to fill one registers it (the other copy stays
  //   uncached and is freed, not kept), so every block is registered as it fills;
  // - a later turn: its prompt repeats earlier turns' prompts and answers, whose blocks may still
  //   be cached, and a copy of a cached block stays uncached, so its prompt's blocks are;
  // - a shared prefix: other requests look its blocks up at any time.
  // Everything else (the blocks holding its own new tokens, all of its output) is its own until it
  // leaves: even a later turn of its session arrives only after it completes. (Chained 64-bit
  // hashes name token contents; two different contents sharing a hash, which the per-block
  // registration would take for a hit, is a ~1e-9 event per run and is not reproduced.)
  const std::int64_t b = kv.block_size_tokens();
  if (r.stream_use == StreamUse::concurrent || !late_registration) return std::numeric_limits<std::int32_t>::max();
  if (r.turn > 0) return static_cast<std::int32_t>(r.prompt_tokens / b);
  return r.prefix_id >= 0 ? static_cast<std::int32_t>(r.prefix_tokens / b) : 0;
}

void ReplicaState::publish_blocks(Sequence& seq, std::int64_t end) {
  const Request& r = requests[seq.request];
  const TokenSource src{r.prefix_id, r.prefix_tokens, r.stream_id};
  const std::int64_t b = kv.block_size_tokens();
  for (std::int64_t i = seq.hashed_blocks; i < end; ++i) {
    seq.chain_hash = chain_block_hash(seq.chain_hash, src, i, b);
    kv.publish(seq.slot, i, seq.chain_hash);
  }
  seq.hashed_blocks = static_cast<std::int32_t>(end);
}

void ReplicaState::register_own_blocks(Sequence& seq, bool findable) {
  const std::int64_t full = seq.kv_tokens / kv.block_size_tokens();
  if (!config.enable_prefix_caching || seq.hashed_blocks >= full) return;
  if (findable) {
    publish_blocks(seq, full);
  } else {
    kv.publish_unindexed(seq.slot, seq.hashed_blocks, full);
    seq.hashed_blocks = static_cast<std::int32_t>(full);
  }
}

PrefixProbe ReplicaState::probe_prefix(const Sequence& seq) const {
  PrefixProbe p;
  if (!config.enable_prefix_caching) return p;
  const Request& r = requests[seq.request];
  const TokenSource src{r.prefix_id, r.prefix_tokens, r.stream_id};
  const std::int64_t b = kv.block_size_tokens();
  const std::int64_t max_blocks = (seq.target_tokens - 1) / b;
  std::uint64_t h = 0;
  for (std::int64_t i = 0; i < max_blocks; ++i) {
    h = chain_block_hash(h, src, i, b);
    const std::int32_t block = kv.cached_block(h);
    if (block < 0) break;
    p.hit_blocks += 1;
    if (kv.is_free(block)) p.free_hit_blocks += 1;
    p.chain_hash = h;
  }
  return p;
}

std::int64_t ReplicaState::admission_blocks(const Sequence& seq, const PrefixProbe& probe, std::int64_t chunk_tokens) const {
  (void)seq;
  const std::int64_t hit_tokens = probe.hit_blocks * kv.block_size_tokens();
  return kv.blocks_for_tokens(reserve_target(hit_tokens + chunk_tokens)) - probe.hit_blocks + probe.free_hit_blocks;
}

std::size_t ReplicaState::admit_front(const PrefixProbe& probe, std::int64_t chunk_tokens) {
  Sequence seq = waiting.front();
  waiting.pop_front();
  seq.slot = take_slot();
  const std::int64_t b = kv.block_size_tokens();
  if (config.enable_prefix_caching) {
    const Request& r = requests[seq.request];
    const TokenSource src{r.prefix_id, r.prefix_tokens, r.stream_id};
    std::uint64_t h = 0;
    for (std::int64_t i = 0; i < probe.hit_blocks; ++i) {
      h = chain_block_hash(h, src, i, b);
      kv.append_cached(seq.slot, kv.cached_block(h));
    }
    prefix_query_tokens += seq.target_tokens;
    prefix_hit_tokens += probe.hit_blocks * b;
  }
  if (config.enable_prefix_caching) seq.eager_blocks = std::max(seq.eager_blocks, shared_blocks(requests[seq.request]));
  if (!held_slots.empty()) release_held(seq.request);  // its loaded blocks are its own now
  seq.computed_tokens = probe.hit_blocks * b;
  seq.chain_hash = probe.chain_hash;
  seq.hashed_blocks = static_cast<std::int32_t>(probe.hit_blocks);
  seq.kv_tokens = 0;
  const std::int64_t tokens = seq.computed_tokens + chunk_tokens;
  if (!kv.grow_to(seq.slot, reserve_target(tokens))) throw std::logic_error("admit_front: blocks were checked");
  set_kv_tokens(seq, tokens);
  publish_full_blocks(seq);
  requests[seq.request].state = RequestState::running;
  join_running(seq);
  return running.size() - 1;
}

bool ReplicaState::grow_blocks(Sequence& seq, std::int64_t tokens) {
  if (!kv.grow_to(seq.slot, reserve_target(tokens))) return false;
  set_kv_tokens(seq, tokens);
  publish_full_blocks(seq);
  return true;
}

bool ReplicaState::preempt_until_grown(std::size_t i, std::int64_t tokens) {
  do {
    // vLLM preempts from the back of the running queue (the youngest); under priority
    // scheduling, the youngest of the least urgent class.
    std::size_t victim = running.size() - 1;
    if (waiting.classes() > 1) {
      for (std::size_t j = running.size(); j-- > i;) {
        if (requests[running[j].request].priority > requests[running[victim].request].priority) victim = j;
      }
    }
    preempt(victim);
    if (victim == i) return false;
  } while (!grow(i, tokens));
  return true;
}

void ReplicaState::preempt(std::size_t index) {
  Sequence seq = running[index];
  settle(seq);
  running.erase(running.begin() + static_cast<std::ptrdiff_t>(index));
  Request& r = requests[seq.request];
  r.state = RequestState::waiting;
  r.preemptions += 1;
  preemptions += 1;
  preempted_ids.push_back(seq.request);
  const std::int64_t blocks = kv.blocks_for_tokens(seq.computed_tokens);
  // It comes back and looks its own blocks up (recompute), or may (a swapped sequence can be
  // preempted again by recompute): they must be findable. Copies of them may now stay cached, so
  // when it fills them again they are registered as they fill (eager_blocks).
  register_own_blocks(seq, true);
  seq.eager_blocks = std::max(seq.eager_blocks, seq.hashed_blocks);
  release(seq);
  if (config.preemption_mode == PreemptionMode::swap && swap_used_blocks + blocks <= swap_capacity_blocks) {
    // Swap: the written KV goes to host memory over the host link; nothing is recomputed.
    const double bytes = static_cast<double>(blocks) * kv_block_bytes;
    swap_out_bytes += bytes;
    pending_swap_bytes += bytes;
    swap_used_blocks += blocks;
    swap_outs += 1;
    seq.kv_tokens = seq.computed_tokens;
    swapped.push_back(seq);
    return;
  }
  // Recompute (also the fallback when swap space is full): the prompt and every token generated
  // so far are prefilled again.
  recomputed_tokens += seq.computed_tokens;
  seq.target_tokens = r.prompt_tokens + r.generated_tokens;
  seq.computed_tokens = 0;
  seq.kv_tokens = 0;
  seq.chain_hash = 0;
  seq.hashed_blocks = 0;
  waiting.push_front(seq, class_of(seq));
}

std::size_t ReplicaState::swap_in() {
  std::size_t n = 0;
  while (!swapped.empty() && static_cast<std::int64_t>(running.size()) < config.max_num_seqs) {
    const Sequence& front = swapped.front();
    if (!fits_with_watermark(kv.blocks_for_tokens(reserve_target(front.computed_tokens + 1)))) break;
    Sequence seq = front;
    swapped.pop_front();
    const std::int64_t blocks = kv.blocks_for_tokens(seq.computed_tokens);
    const double bytes = static_cast<double>(blocks) * kv_block_bytes;
    swap_used_blocks -= blocks;
    swap_in_bytes += bytes;
    pending_swap_bytes += bytes;
    seq.slot = take_slot();
    kv.grow_to(seq.slot, reserve_target(seq.computed_tokens));
    seq.kv_tokens = 0;
    set_kv_tokens(seq, seq.computed_tokens);
    // Copies come back uncached: later blocks still chain from the sequence's own hashes.
    seq.hashed_blocks = static_cast<std::int32_t>(std::max<std::int64_t>(seq.hashed_blocks, seq.computed_tokens / kv.block_size_tokens()));
    requests[seq.request].state = RequestState::running;
    join_running(seq);
    ++n;
  }
  return n;
}

std::size_t ReplicaState::admit_migrated() {
  std::size_t n = 0;
  while (!migrated.empty() && static_cast<std::int64_t>(running.size()) < config.max_num_seqs) {
    Sequence seq = migrated.front();
    if (!fits_with_watermark(kv.blocks_for_tokens(reserve_target(seq.computed_tokens)))) break;
    migrated.pop_front();
    seq.slot = take_slot();
    kv.grow_to(seq.slot, reserve_target(seq.computed_tokens));
    seq.kv_tokens = 0;
    set_kv_tokens(seq, seq.computed_tokens);
    seq.chain_hash = 0;
    seq.hashed_blocks = 0;
    if (config.enable_prefix_caching) {
      seq.eager_blocks = shared_blocks(requests[seq.request]);
      publish_full_blocks(seq);
    }
    requests[seq.request].state = RequestState::running;
    join_running(seq);
    ++n;
  }
  return n;
}

bool ReplicaState::plain_paged() const {
  return config.kv_reservation != KvReservation::contiguous && !(config.enable_prefix_caching && (concurrent_streams || !late_registration)) &&
         std::has_single_bit(static_cast<std::uint64_t>(kv.block_size_tokens()));
}

void ReplicaState::check_window_invariants() const {
  if (!lazy_kv) return;
  const std::int64_t b = kv.block_size_tokens();
  std::int64_t members = 0, computed_sum = 0, frag = 0;
  for (std::size_t i = 0; i < running.size(); ++i) {
    const Sequence& seq = running[i];
    // lazy_computed: the members are running[0, lazy_members), so each follows only members.
    if (lazy_computed && seq.window_base >= 0 && static_cast<std::size_t>(members) != i) {
      throw std::logic_error("decode window: a sequence in the window follows one outside it");
    }
    std::int64_t kv_now = seq.kv_tokens;
    if (seq.window_base >= 0) {
      members += 1;
      const std::int64_t computed = window_computed(seq);
      computed_sum += computed;
      kv_now = computed + (kv_ahead ? 1 : 0);
      if (lazy_computed && finish_step(seq) <= window_steps) throw std::logic_error("decode window: a sequence is past its finish step");
      const auto& bucket = phase_slots[static_cast<std::uint64_t>(window_steps - computed) & static_cast<std::uint64_t>(b - 1)];
      const std::uint32_t pos = seq.slot < phase_pos.size() ? phase_pos[seq.slot] : 0;
      if (pos >= bucket.size() || bucket[pos] != seq.slot) throw std::logic_error("decode window: a sequence is not in its phase bucket");
    }
    if (kv.blocks_of(seq.slot) != kv.blocks_for_tokens(kv_now)) throw std::logic_error("decode window: a block table does not match kv_tokens");
    // The window's steps register no block: a sequence's eager blocks were all registered before.
    if (config.enable_prefix_caching && seq.hashed_blocks < std::min<std::int64_t>(kv_now / b, seq.eager_blocks)) {
      throw std::logic_error("decode window: a block that must be registered as it fills is not");
    }
    frag += kv.blocks_for_tokens(kv_now) * b - kv_now;
  }
  std::size_t bucketed = 0;
  for (const auto& bucket : phase_slots) bucketed += bucket.size();
  if (members != lazy_members || computed_sum != lazy_computed_sum || bucketed != static_cast<std::size_t>(members)) {
    throw std::logic_error("decode window: member count or context sum is off");
  }
  if (frag != frag_slots) throw std::logic_error("decode window: frag_slots is off");
  std::int64_t counted = 0;
  for (const std::int32_t c : finish_count) counted += c;
  if (lazy_computed && counted != members) throw std::logic_error("decode window: finish counts are off");
}

std::vector<std::uint32_t>& ReplicaState::phase_bucket(const Sequence& seq) {
  const auto mask = static_cast<std::uint64_t>(kv.block_size_tokens() - 1);
  return phase_slots[static_cast<std::uint64_t>(window_steps - window_computed(seq)) & mask];
}

bool ReplicaState::decode_lazy(std::int64_t& kv_tokens) {
  const std::int64_t b = kv.block_size_tokens();
  const std::vector<std::uint32_t>& opening = phase_slots[static_cast<std::uint64_t>(window_steps) & static_cast<std::uint64_t>(b - 1)];
  // Outside the window a decode needs at most one block (kv_tokens >= computed_tokens).
  const auto others = static_cast<std::int64_t>(running.size()) - lazy_members;
  if (kv.free_blocks() < static_cast<std::int64_t>(opening.size()) + others) return false;
  kv.append_free_blocks(opening);  // cannot fail: counted above
  // In the window: b - 1 unused slots more for each fresh block, one fewer for every other token.
  frag_slots += static_cast<std::int64_t>(opening.size()) * b - lazy_members;
  kv_tokens += lazy_computed_sum + lazy_members;
  // Sequences outside the window joined since the last step, at the back: search from there.
  // (Their order does not matter: no growth can fail, and only which free block each takes
  // changes, which nothing observes.)
  std::int64_t left = others;
  for (std::size_t i = running.size(); left > 0 && i-- > 0;) {
    Sequence& seq = running[i];
    if (seq.window_base >= 0) continue;
    --left;
    const std::int64_t tokens = seq.computed_tokens + 1;
    if (kv.blocks_for_tokens(tokens) == kv.blocks_for_tokens(seq.kv_tokens)) {
      set_kv_tokens(seq, tokens);
    } else if (!grow(i, tokens)) {
      throw std::logic_error("decode_lazy: a counted free block was missing");
    }
    kv_tokens += tokens;
  }
  kv_ahead = true;
  return true;
}

void ReplicaState::decode_each(std::int64_t& kv_tokens) {
  const std::int64_t b = kv.block_size_tokens();
  const bool contiguous = config.kv_reservation == KvReservation::contiguous;  // else reserve_target(t) == t
  const bool caching = config.enable_prefix_caching;
  // This loop runs once per generated token, so it keeps its counters in locals (stores through
  // `seq` could alias members) and leaves the slow path, grow_or_preempt, only when a sequence
  // needs a new block.
  std::int64_t frag = frag_slots;
  const bool plain = plain_paged();
  const std::int64_t block_mask = b - 1;
  // Context of the decoding sequences, summed as they go: preemption only takes sequences not
  // yet visited (index >= i), so the visited ones are the batch.
  std::size_t i = 0;
  while (i < running.size()) {
    Sequence* seqs = running.data();
    const std::size_t n = running.size();
    for (; plain && i < n; ++i) {
      Sequence& seq = seqs[i];
      const std::int64_t tokens = seq.computed_tokens + 1;
      if (tokens != seq.kv_tokens + 1) break;
      if ((seq.kv_tokens & block_mask) != 0) {
        frag -= 1;  // one more slot of the last block written
      } else {
        // The last block is full: one fresh block, what grow() takes while the free list lasts;
        // its other b - 1 slots are unused. Else grow_or_preempt decides.
        if (!kv.append_free_block(seq.slot)) break;
        frag += b - 1;
      }
      seq.kv_tokens = tokens;
      kv_tokens += tokens;
    }
    if (i == n) break;
    Sequence& seq = seqs[i];
    const std::int64_t tokens = seq.computed_tokens + 1;
    // The reservation already holds the next token when its block count is unchanged (blocks
    // are whole), which is what grow() would find; only the accounting moves.
    const std::int64_t blocks = kv.blocks_for_tokens(tokens), had = kv.blocks_for_tokens(seq.kv_tokens);
    if (blocks == had || (contiguous && kv.blocks_for_tokens(reserve_target(tokens)) ==
                                            kv.blocks_for_tokens(reserve_target(seq.kv_tokens)))) {
      frag += (blocks - had) * b - (tokens - seq.kv_tokens);
      seq.kv_tokens = tokens;
      if (caching) publish_full_blocks(seq);
      kv_tokens += tokens;
      ++i;
      continue;
    }
    frag_slots = frag;
    if (grow_or_preempt(i, tokens)) {
      kv_tokens += tokens;
      ++i;
    }
    frag = frag_slots;
  }
  frag_slots = frag;
}

std::size_t ReplicaState::grow_prefilled(std::vector<std::uint32_t>& unprefilled) {
  // Once per running sequence per step: the common case (paged power-of-two blocks, the next
  // token inside the last block or a fresh block off the free list) keeps the counters in
  // locals, as decode_each; anything else takes grow_or_preempt.
  const std::int64_t b = kv.block_size_tokens();
  const bool plain = config.kv_reservation != KvReservation::contiguous && std::has_single_bit(static_cast<std::uint64_t>(b));
  const std::int64_t block_mask = b - 1;
  const int block_shift = std::countr_zero(static_cast<std::uint64_t>(b));
  const bool caching = config.enable_prefix_caching;
  // publish_full_blocks with the shift for the division: whether a block to register filled.
  const auto registers = [&](const Sequence& seq) {
    return caching && seq.hashed_blocks < std::min<std::int64_t>(seq.kv_tokens >> block_shift, seq.eager_blocks);
  };
  std::int64_t frag = frag_slots;
  unprefilled.clear();
  // Preemption takes sequences at index >= i only, so the indices listed stay valid.
  for (std::size_t i = 0; i < running.size();) {
    Sequence& seq = running[i];
    if (!seq.prefilled()) {
      unprefilled.push_back(static_cast<std::uint32_t>(i++));
      continue;
    }
    const std::int64_t tokens = seq.computed_tokens + 1;
    if (plain && tokens == seq.kv_tokens + 1) {
      if ((seq.kv_tokens & block_mask) != 0) {
        frag -= 1;  // one more slot of the last block written
        seq.kv_tokens = tokens;
        if (registers(seq)) publish_full_blocks(seq);
        ++i;
        continue;
      }
      if (seq.kv_tokens > 0 && kv.blocks_of(seq.slot) == kv.blocks_for_tokens(seq.kv_tokens) && kv.append_free_block(seq.slot)) {
        frag += b - 1;  // a fresh block (grow_to's choice while the free list lasts), one slot written
        seq.kv_tokens = tokens;
        if (registers(seq)) publish_full_blocks(seq);
        ++i;
        continue;
      }
    }
    frag_slots = frag;
    if (grow_or_preempt(i, tokens)) ++i;
    frag = frag_slots;
  }
  frag_slots = frag;
  return running.size() - unprefilled.size();
}

void ReplicaState::decode_all(IterationPlan& plan) {
  const std::int64_t preemptions_before = preemptions;
  std::int64_t kv_tokens = 0;  // context of the decoding sequences (integers: exact in any order)
  const bool lazy = lazy_kv && lazy_members > 0 && plan.items.empty();
  if (!lazy || !decode_lazy(kv_tokens)) {
    // Blocks may run short: every sequence leaves the window, and decode_each decides who gets
    // a block and who is preempted, in order.
    if (lazy) close_decode_window();
    decode_each(kv_tokens);
  }
  // vLLM swaps sequences back in only in a step that preempted nothing.
  if (preemptions == preemptions_before && !swapped.empty()) {
    const std::size_t first = running.size();
    swap_in();
    for (std::size_t j = first; j < running.size(); ++j) {
      grow(j, running[j].computed_tokens + 1);
      kv_tokens += running[j].computed_tokens + 1;
    }
  }
  if (plan.items.empty()) {
    // Every running sequence decodes, in order: the replica commits such a plan in one pass.
    plan.all_running_decode = true;
    plan.all_running_seqs = running.size();
  } else {
    for (std::size_t j = 0; j < running.size(); ++j) plan.items.push_back({static_cast<std::uint32_t>(j), 1, false});
  }
  plan.shape.decode_seqs += static_cast<std::int64_t>(running.size());
  plan.shape.decode_kv_tokens += static_cast<double>(kv_tokens);
}

void ReplicaState::decode_window(IterationPlan& plan, std::int64_t steps) {
  // The decode window is off under multi-step (Replica::set_checks), so every sequence's
  // kv_tokens and computed_tokens are current here.
  const std::int64_t preemptions_before = preemptions;
  std::int64_t kv_tokens = 0;  // context of the window's first step
  std::size_t i = 0;
  while (i < running.size()) {
    // vLLM's _append_slots reserves 1 + num_lookahead_slots (= steps - 1) slots per sequence at
    // the window's start; a sequence that holds them already (none does: a window ends with
    // kv_tokens == computed_tokens) needs nothing.
    const std::int64_t tokens = running[i].computed_tokens + steps;
    if (running[i].kv_tokens >= tokens || grow_or_preempt(i, tokens)) {
      kv_tokens += running[i].computed_tokens + 1;
      ++i;
    }
  }
  if (preemptions == preemptions_before && !swapped.empty()) {
    const std::size_t first = running.size();
    swap_in();
    for (std::size_t j = first; j < running.size(); ++j) {
      // swap_in checked room for the next token only. A lookahead that does not fit (at most a
      // block or two past the watermark: rare) is not made by preemption in a step that swaps
      // in (as decode_all); that sequence then gets its tokens for the slots it holds only.
      if (!grow(j, running[j].computed_tokens + steps)) grow(j, running[j].computed_tokens + 1);
      kv_tokens += running[j].computed_tokens + 1;
    }
  }
  for (std::size_t j = 0; j < running.size(); ++j) {
    const std::int64_t held = std::min(steps, running[j].kv_tokens - running[j].computed_tokens);
    plan.items.push_back({static_cast<std::uint32_t>(j), held, false});
  }
  plan.decode_steps = steps;
  plan.shape.decode_seqs += static_cast<std::int64_t>(running.size());
  plan.shape.decode_kv_tokens += static_cast<double>(kv_tokens);
}

void ReplicaState::drop_expired() {
  if (config.scheduler.max_waiting_time_s <= 0.0) return;
  const TimeNs limit = seconds_to_ns(config.scheduler.max_waiting_time_s);
  for (std::size_t c = 0; c < waiting.classes(); ++c) {
    auto& q = waiting.queue(c);
    while (!q.empty()) {
      Request& r = requests[q.front().request];
      // Only requests that never started: dropping a preempted one would waste its tokens.
      if (r.started_ns >= 0 || now_ns - r.arrival_ns <= limit) break;
      r.state = RequestState::rejected;
      if (!held_slots.empty()) release_held(q.front().request);
      dropped_ids.push_back(q.front().request);
      q.pop_front();
      waiting.removed_one();
      dropped_timeout += 1;
    }
  }
}

void ReplicaState::abort_older_than(TimeNs timeout_ns) {
  const auto expired = [&](const Sequence& seq) {
    Request& r = requests[seq.request];
    if (now_ns - r.arrival_ns < timeout_ns) return false;
    r.state = RequestState::timed_out;
    timed_out_ids.push_back(seq.request);
    if (!held_slots.empty()) release_held(seq.request);
    return true;
  };
  for (std::size_t c = 0; c < waiting.classes(); ++c) {
    auto& q = waiting.queue(c);
    const std::size_t before = q.size();
    std::erase_if(q, expired);
    for (std::size_t i = q.size(); i < before; ++i) waiting.removed_one();
  }
  std::erase_if(running, [&](Sequence& seq) {
    if (!expired(seq)) return false;
    settle(seq);
    release(seq);
    return true;
  });
  std::erase_if(swapped, [&](const Sequence& seq) {
    if (!expired(seq)) return false;
    swap_used_blocks -= kv.blocks_for_tokens(seq.computed_tokens);
    return true;
  });
  std::erase_if(migrated, expired);
  std::erase_if(loading, [&](const OffloadLoad& l) { return expired(l.seq); });
}

void ReplicaState::join_running(const Sequence& seq) {
  running.push_back(seq);  // window_base -1: whoever left running was settled
}

void ReplicaState::settle_member(Sequence& seq) {
  const std::int64_t pending = window_steps - seq.window_base;
  if (pending > 0) {
    Request& r = requests[seq.request];
    r.generated_tokens += static_cast<std::int32_t>(pending);
    r.last_token_ns = window_last_ns;
  }
  // Out of its phase bucket and finish count first: both are found from the lazy values.
  if (lazy_kv) {
    std::vector<std::uint32_t>& bucket = phase_bucket(seq);
    const std::uint32_t pos = phase_pos[seq.slot];
    bucket[pos] = bucket.back();
    phase_pos[bucket[pos]] = pos;
    bucket.pop_back();
    lazy_members -= 1;
  }
  if (lazy_computed) {
    // One that finishes now is counted out by the commit that found it.
    if (finish_step(seq) > window_steps) finish_slot(finish_step(seq)) -= 1;
    seq.computed_tokens += pending;
  }
  if (lazy_kv) {
    seq.kv_tokens = seq.computed_tokens + (kv_ahead ? 1 : 0);
    lazy_computed_sum -= seq.computed_tokens;
  }
  seq.window_base = -1;
}

void ReplicaState::grow_finish_ring(std::size_t steps) {
  // Sized to the longest remaining output seen, not max_model_len up front (64 KB at 8192
  // tokens, for each replica of a fleet that may never run such a sequence). The pending counts
  // are for steps window_steps .. window_steps + old size - 1: each moves to its step's slot.
  const std::size_t size = std::max<std::size_t>(std::bit_ceil(steps), 64);
  std::vector<std::int32_t> ring(size, 0);
  const std::size_t old_size = finish_count.size();
  for (std::size_t k = 0; k < old_size; ++k) {
    const auto step = static_cast<std::size_t>(window_steps) + k;
    ring[step & (size - 1)] = finish_count[step & (old_size - 1)];
  }
  finish_count.swap(ring);
}

void ReplicaState::enter_window(Sequence& seq) {
  seq.window_base = window_steps;
  if (!lazy_kv) return;
  if (phase_slots.empty()) phase_slots.resize(static_cast<std::size_t>(kv.block_size_tokens()));
  if (phase_pos.size() <= seq.slot) phase_pos.resize(seq.slot + 1);
  std::vector<std::uint32_t>& bucket = phase_bucket(seq);
  phase_pos[seq.slot] = static_cast<std::uint32_t>(bucket.size());
  bucket.push_back(seq.slot);
  lazy_members += 1;
  lazy_computed_sum += seq.computed_tokens;
  if (lazy_computed) {
    const std::int64_t left = seq.done_at_tokens - seq.computed_tokens;
    if (left <= 0 || left > config.max_model_len) {
      throw std::logic_error("enter_window: a sequence's remaining tokens are outside (0, max_model_len]");
    }
    if (left >= static_cast<std::int64_t>(finish_count.size())) grow_finish_ring(static_cast<std::size_t>(left) + 2);
    finish_slot(finish_step(seq)) += 1;
  }
}

void ReplicaState::advance_window(TimeNs now) {
  window_steps += 1;
  window_last_ns = now;
  kv_ahead = false;
  lazy_computed_sum += lazy_members;  // each of them computes one token (the replica adds it)
}

void ReplicaState::close_decode_window() {
  for (Sequence& seq : running) settle(seq);
}

void ReplicaState::release(const Sequence& seq) {
  if (config.enable_prefix_caching && seq.hashed_blocks < seq.kv_tokens / kv.block_size_tokens()) {
    // It leaves for good (preempt registered its blocks already): only its session's later turns
    // could look its own blocks up.
    Sequence leaving = seq;
    register_own_blocks(leaving, requests[seq.request].stream_use != StreamUse::alone);
  }
  const std::int64_t reserved = kv.blocks_of(seq.slot) * kv.block_size_tokens();
  released_reserved_slots += reserved;
  released_unwritten_slots += reserved - seq.kv_tokens;
  frag_slots -= kv.blocks_for_tokens(seq.kv_tokens) * kv.block_size_tokens() - seq.kv_tokens;
  kv.free(seq.slot);
  free_slots.push_back(seq.slot);
}

void ReplicaState::release_held(std::uint32_t request) {
  const auto it = held_slots.find(request);
  if (it == held_slots.end()) return;
  kv.free(it->second.slot);
  free_slots.push_back(it->second.slot);
  promised_blocks -= it->second.promised_blocks;
  held_slots.erase(it);
}

void ReplicaState::finish_offload_loads() {
  std::size_t ready = 0;
  while (ready < loading.size() && loading[ready].ready_ns <= now_ns) ++ready;
  for (std::size_t k = ready; k-- > 0;) waiting.push_front(loading[k].seq, class_of(loading[k].seq));
  loading.erase(loading.begin(), loading.begin() + static_cast<std::ptrdiff_t>(ready));
}

namespace {
// A waiting sequence's prompt blocks, as far as the GPU cache and then the offload tiers hold
// them in a row (the last prompt token is always computed, as probe_prefix).
struct TierWalk {
  std::vector<std::uint64_t> hashes;  // GPU hits, then lower-tier blocks
  std::vector<OffloadTier> tiers;     // of the lower-tier blocks
  std::int64_t gpu_hits = 0, free_gpu_hits = 0, cpu_blocks = 0, disk_blocks = 0;
};
}  // namespace

void ReplicaState::start_offload_loads() {
  if (!offload.enabled() || waiting.empty()) return;
  const std::int64_t b = kv.block_size_tokens();
  std::int64_t room = config.max_num_seqs - static_cast<std::int64_t>(running.size() + loading.size());
  TierWalk walk;
  bool full = false;
  for (std::size_t c = 0; c < waiting.classes() && room > 0 && !full; ++c) {
    auto& q = waiting.queue(c);
    for (std::size_t i = 0; i < q.size() && room > 0; --room) {
      const Sequence seq = q[i];
      if (held_slots.count(seq.request)) {  // loaded, not admitted yet
        ++i;
        continue;
      }
      const Request& r = requests[seq.request];
      const TokenSource src{r.prefix_id, r.prefix_tokens, r.stream_id};
      walk = TierWalk{};
      std::uint64_t h = 0;
      for (std::int64_t k = 0; k < (seq.target_tokens - 1) / b; ++k) {
        h = chain_block_hash(h, src, k, b);
        if (walk.tiers.empty()) {
          if (const std::int32_t block = kv.cached_block(h); block >= 0) {
            walk.hashes.push_back(h);
            walk.gpu_hits += 1;
            walk.free_gpu_hits += kv.is_free(block) ? 1 : 0;
            continue;
          }
        }
        const OffloadTier t = offload.find(h);
        if (t == OffloadTier::none) break;
        walk.hashes.push_back(h);
        walk.tiers.push_back(t);
        (t == OffloadTier::cpu ? walk.cpu_blocks : walk.disk_blocks) += 1;
      }
      const auto lower = static_cast<std::int64_t>(walk.tiers.size());
      if (lower == 0) {
        ++i;
        continue;
      }
      const std::int64_t rest = std::max<std::int64_t>(0, kv.blocks_for_tokens(reserve_target(seq.target_tokens)) - walk.gpu_hits - lower);
      if (!fits_with_watermark(lower + walk.free_gpu_hits + rest + promised_blocks)) {
        full = true;
        break;
      }
      // Hold the GPU hits, take the blocks out of their tiers (before new GPU blocks evict
      // others into them), then give them GPU blocks registered under their hashes.
      const std::uint32_t slot = take_slot();
      for (std::int64_t k = 0; k < walk.gpu_hits; ++k) kv.append_cached(slot, kv.cached_block(walk.hashes[static_cast<std::size_t>(k)]));
      for (std::int64_t k = walk.gpu_hits; k < walk.gpu_hits + lower; ++k) offload.take(walk.hashes[static_cast<std::size_t>(k)]);
      if (!kv.grow_to(slot, (walk.gpu_hits + lower) * b)) throw std::logic_error("start_offload_loads: blocks were checked");
      for (std::int64_t k = walk.gpu_hits; k < walk.gpu_hits + lower; ++k) kv.publish(slot, k, walk.hashes[static_cast<std::size_t>(k)]);
      held_slots.emplace(seq.request, Hold{slot, rest});
      promised_blocks += rest;
      // Disk blocks are read into host memory and copied on, chunk by chunk, so the slower of
      // the two links sets their pace.
      const KvOffloadConfig& o = config.kv_offload;
      const double cpu_bytes = static_cast<double>(walk.cpu_blocks) * kv_block_bytes;
      const double disk_bytes = static_cast<double>(walk.disk_blocks) * kv_block_bytes;
      double copy_s = cpu_bytes / o.cpu_bandwidth_bytes_per_s;
      if (disk_bytes > 0.0) copy_s += disk_bytes / std::min(o.disk_bandwidth_bytes_per_s, o.cpu_bandwidth_bytes_per_s);
      offload_loads += 1;
      offload_cpu_hit_tokens += walk.cpu_blocks * b;
      offload_disk_hit_tokens += walk.disk_blocks * b;
      offload_load_bytes += cpu_bytes + disk_bytes;
      offload_load_s += copy_s;
      TimeNs ready = now_ns;
      if (o.blocking_load) {
        pending_load_s += copy_s;
      } else {
        ready = std::max(now_ns, load_link_free_ns) + std::max<TimeNs>(1, seconds_to_ns(copy_s));
        load_link_free_ns = ready;
        offload_wait_s += ns_to_seconds(ready - now_ns);
      }
      loading.push_back({seq, ready});
      q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
      waiting.removed_one();
    }
  }
  if (config.kv_offload.blocking_load) finish_offload_loads();
}

}  // namespace servesim
