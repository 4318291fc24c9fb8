// The state of one replica that every batch policy reads and changes (ReplicaState): wait queues
// in priority order, running / swapped / migrated sequences, KV reservation through the block
// allocator, prefix-cache lookups, preemption by recompute or swap, timeouts, and the decode
// window (the fast path of all-running decode steps). Also the plan a policy fills for one
// iteration (IterationPlan). The policies themselves are in batch_scheduler.hpp and beside it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/kv/block_allocator.hpp"
#include "sim/kv/offload_tiers.hpp"
#include "sim/model/ops.hpp"
#include "sim/sched/request.hpp"

namespace servesim {

// Waiting sequences, one FIFO per priority class (a single class under fcfs). front() is the
// oldest sequence of the most urgent non-empty class; preempted sequences re-enter at the front.
class WaitQueue {
 public:
  explicit WaitQueue(std::size_t classes) : queues_(classes) {}
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  Sequence& front();
  const Sequence& front() const;
  void pop_front();
  void push_back(const Sequence& s, std::size_t cls);
  void push_front(const Sequence& s, std::size_t cls);
  std::deque<Sequence>& queue(std::size_t cls) { return queues_[cls]; }
  const std::deque<Sequence>& queue(std::size_t cls) const { return queues_[cls]; }
  std::size_t classes() const { return queues_.size(); }
  void removed_one() { --size_; }

 private:
  std::vector<std::deque<Sequence>> queues_;
  std::size_t size_ = 0;
};

// Cached leading blocks of a waiting sequence's prompt.
struct PrefixProbe {
  std::int64_t hit_blocks = 0;
  std::int64_t free_hit_blocks = 0;  // of those, blocks no one holds: sharing them uses free capacity
  std::uint64_t chain_hash = 0;      // hash of the last hit block
};

struct IterationPlan;

// A waiting sequence whose prefix blocks are being copied up from an offload tier (async loads).
struct OffloadLoad {
  Sequence seq;
  TimeNs ready_ns = 0;
};

// What a policy may read and change. The replica owns it. Not copied or moved: the allocator
// points at the offload tiers beside it.
struct ReplicaState {
  // kv_block_bytes: bytes of one allocation unit (for swap and offload traffic).
  ReplicaState(const EngineConfig& config, std::int64_t kv_capacity_blocks, double kv_block_bytes,
               RequestPool& request_table);
  ReplicaState(const ReplicaState&) = delete;
  ReplicaState& operator=(const ReplicaState&) = delete;

  const EngineConfig& config;
  BlockAllocator kv;  // allocation unit: block_size tokens, or 1 token under token reservation
  RequestPool& requests;
  WaitQueue waiting;
  std::vector<Sequence> running;  // in admission order (oldest first)
  std::deque<Sequence> swapped;   // preempted by swap, oldest first; KV in host memory
  std::deque<Sequence> migrated;  // prefilled elsewhere (disaggregated serving), KV arrived, no blocks yet
  std::vector<std::uint32_t> free_slots;
  std::uint32_t slots_created = 0;
  TimeNs now_ns = 0;
  double kv_block_bytes = 0.0;
  std::int64_t swap_capacity_blocks = 0, swap_used_blocks = 0;
  std::int64_t watermark_blocks = 0;
  std::vector<std::uint32_t> preempted_ids;  // requests preempted since the replica last cleared it
  std::vector<std::uint32_t> dropped_ids;    // requests dropped by max_waiting_time_s, likewise
  std::vector<std::uint32_t> timed_out_ids;  // requests whose client gave up, likewise

  // KV offload (engine.kv_offload; off: the tiers hold nothing and none of this runs). Before the
  // policy runs, waiting prompts whose next blocks after their GPU hit sit in a lower tier get GPU
  // blocks for them and load them (start_offload_loads): the blocks are held by a slot of their
  // own (held_slots, by request) and registered in the GPU cache, so the policy's admission finds
  // them as ordinary hits and the hold is let go then. Async loads take the sequence out of the
  // waiting queue until its copy is done (loading, ready_ns; queued one after another on the host
  // link); blocking loads leave it there and the replica adds the copy time to the next step.
  OffloadTiers offload;
  std::deque<OffloadLoad> loading;  // started first, ready first
  // By request: the slot holding its loaded blocks, and the blocks the rest of its prompt needs
  // (promised: a load starts only if every held prompt can still be admitted whole, so held
  // blocks never leave the policy unable to admit the prompts holding them).
  struct Hold {
    std::uint32_t slot = 0;
    std::int64_t promised_blocks = 0;
  };
  std::unordered_map<std::uint32_t, Hold> held_slots;
  std::int64_t promised_blocks = 0;
  TimeNs load_link_free_ns = 0;
  double pending_load_s = 0.0;  // blocking loads not yet added to a step
  std::int64_t offload_loads = 0, offload_cpu_hit_tokens = 0, offload_disk_hit_tokens = 0;
  double offload_load_bytes = 0.0, offload_load_s = 0.0, offload_wait_s = 0.0;
  // Loads whose copy is done by now_ns go back to the front of their waiting queue (vLLM puts a
  // request whose KV arrived back where it waited).
  void finish_offload_loads();
  // Starts the loads of waiting sequences, front first, as long as running and loading sequences
  // stay under max_num_seqs; stops at the first whose blocks do not fit (vLLM's scheduler stops
  // at the first request it cannot allocate). A blocking load is done at once and its sequence
  // goes to the front of its queue, as an async one does when its copy is done.
  void start_offload_loads();
  // The slot holding `request`'s loaded blocks, if any, is let go (admitted, dropped, aborted).
  void release_held(std::uint32_t request);

  // Counters read by the replica's metrics.
  std::int64_t preemptions = 0, recomputed_tokens = 0, swap_outs = 0;
  double swap_out_bytes = 0.0, swap_in_bytes = 0.0;
  double pending_swap_bytes = 0.0;  // swapped this iteration: the replica adds the transfer time
  std::int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0;
  std::int64_t dropped_timeout = 0;
  std::int64_t frag_slots = 0;  // unused slots in the partly filled last block of each running sequence
  std::int64_t released_reserved_slots = 0, released_unwritten_slots = 0;

  // The decode window. In all-running decode steps (most iterations) the replica does not write
  // the per-token fields of the Requests of sequences in the window: a running sequence with
  // window_base >= 0 has generated window_steps - window_base tokens more than its Request's
  // generated_tokens says, the last of them at window_last_ns (its Request's last_token_ns is
  // stale). It saves two stores and a dependent load per token. A sequence enters the window in
  // the first all-running decode step it takes part in; a newcomer joins with window_base = -1,
  // so admission costs nothing. A sequence that leaves (finished, preempted, timed out) or is
  // planned by item (its Request is about to be read) is settled first; a reader of every
  // running Request closes the window (close_decode_window).
  std::int64_t window_steps = 0;  // all-running decode steps committed
  TimeNs window_last_ns = -1;     // end of the last of them
  // Settles every running sequence: O(running).
  void close_decode_window();
  // Writes the pending tokens into the Request of `seq` and takes it out of the window. Inline:
  // a policy that plans by item (chunked prefill) settles every planned sequence every step,
  // and outside the window (those policies' only case) there is nothing to do.
  void settle(Sequence& seq) {
    if (seq.window_base >= 0) settle_member(seq);
  }
  // `seq` (running, its Request current, kv_tokens == computed_tokens) enters the window.
  void enter_window(Sequence& seq);
  // An all-running decode step is committed at `now` (the replica then adds its tokens).
  void advance_window(TimeNs now);

  // Lazy KV tokens in the decode window, for paged KV with a power-of-two block whose decodes
  // register no prefix-cache block (plain_paged(); the replica sets lazy_kv). decode_all does not
  // write kv_tokens of a sequence in the window: it is computed_tokens, plus one while a planned
  // decode step is in flight (kv_ahead), and settle writes it. Such a sequence needs a fresh
  // block exactly when its computed_tokens is a multiple of the block size, and window_steps -
  // computed_tokens does not change while it is in the window (both grow by one per step); so the
  // sequences are bucketed by that difference mod the block size, and a step visits one bucket
  // and adds the others' context as one sum: O(batch / block size) instead of O(batch).
  bool lazy_kv = false;
  bool kv_ahead = false;
  std::int64_t lazy_members = 0;       // running sequences in the window (lazy_kv only)
  std::int64_t lazy_computed_sum = 0;  // their computed_tokens, summed
  std::vector<std::vector<std::uint32_t>> phase_slots;  // their slots, by phase
  std::vector<std::uint32_t> phase_pos;                 // by slot: index in its phase bucket

  // Lazy computed tokens too (lazy_kv, and a policy that reads the running sequences' progress
  // only through decode_all: BatchScheduler::reads_running_tokens; the replica sets it). The
  // commit of a step then does not write computed_tokens of a sequence in the window: its
  // value is computed_tokens + window_steps - window_base (window_computed), and settle writes
  // it. The sequence finishes at window step done_at_tokens - computed_tokens + window_base,
  // fixed while it is in the window; finish_count counts the sequences by that step (a ring:
  // no sequence is more than max_model_len steps from its end), so a step without finishers
  // costs O(1) for the whole window and one with finishers a scan for them. The sequences in
  // the window are then running[0, lazy_members): newcomers join at the back and enter the
  // window in their first all-running step.
  bool lazy_computed = false;
  std::vector<std::int32_t> finish_count;
  std::int64_t window_computed(const Sequence& seq) const {
    return lazy_computed && seq.window_base >= 0 ? seq.computed_tokens + window_steps - seq.window_base : seq.computed_tokens;
  }
  // The window step at which `seq` (in the lazy window) has all its tokens.
  static std::int64_t finish_step(const Sequence& seq) {
    return seq.done_at_tokens - seq.computed_tokens + seq.window_base;
  }
  // Makes finish_count a ring of at least `steps` slots (a power of two), its counts kept.
  void grow_finish_ring(std::size_t steps);
  std::int32_t& finish_slot(std::int64_t step) {
    return finish_count[static_cast<std::size_t>(step) & (finish_count.size() - 1)];
  }
  // Paged reservation with a power-of-two block (the usual engine): the next token needs a new
  // block exactly when the last one is full, and a decode step registers no block in the prefix
  // cache (the blocks a decode fills are registered when their sequence leaves: shared_blocks),
  // unless requests of one stream run concurrently (concurrent_streams).
  bool plain_paged() const;
  // The workload may run requests of one token stream at the same time (StreamUse::concurrent:
  // a prompt pool); set by the replica. With prefix caching their decodes register blocks.
  bool concurrent_streams = false;
  // Prefix caching: blocks nobody else can look up while their sequence runs are registered when
  // it leaves (shared_blocks). Off (the exact reference path): every block as it fills, which
  // the tests compare the late registration with.
  bool late_registration = true;
  // Throws std::logic_error unless the lazy window's bookkeeping matches the sequences: members
  // counted and summed, each in its phase bucket, every running sequence's block table sized for
  // its (materialised) kv_tokens and its eager blocks registered, frag_slots their unused slots.
  // O(running); lazy_kv only.
  void check_window_invariants() const;

  std::size_t class_of(const Sequence& s) const;
  std::uint32_t take_slot();
  // Tokens to reserve for a sequence that must hold `tokens` (contiguous: max_model_len at once).
  std::int64_t reserve_target(std::int64_t tokens) const {
    return config.kv_reservation == KvReservation::contiguous ? std::max(tokens, config.max_model_len) : tokens;
  }

  // Prefix-cache lookup for a waiting sequence (nothing when caching is off). At least one
  // prompt token is always computed, so the last token never comes from the cache.
  PrefixProbe probe_prefix(const Sequence& seq) const;
  // Free blocks the waiting sequence `seq` needs to hold hit + `chunk_tokens` tokens.
  std::int64_t admission_blocks(const Sequence& seq, const PrefixProbe& probe, std::int64_t chunk_tokens) const;
  // Whether admission keeps the watermark free.
  bool fits_with_watermark(std::int64_t blocks) const { return kv.free_blocks() - blocks >= watermark_blocks; }
  // Moves waiting.front() to running: shares the cached prefix and reserves blocks for its first
  // `chunk_tokens` computed tokens (the caller checked they fit). Returns the running index; the
  // caller plans the chunk.
  std::size_t admit_front(const PrefixProbe& probe, std::int64_t chunk_tokens);
  // Grows running[i]'s reservation to hold `tokens`; false (no change) when blocks are short.
  // Inline for the common case, a reservation that holds them already (a decode token inside
  // its last block: 15 of 16 decode steps of a per-item policy), which only moves the counts.
  bool grow(std::size_t i, std::int64_t tokens) {
    Sequence& seq = running[i];
    if (kv.blocks_for_tokens(reserve_target(tokens)) > kv.blocks_of(seq.slot)) return grow_blocks(seq, tokens);
    set_kv_tokens(seq, tokens);
    publish_full_blocks(seq);
    return true;
  }
  // Grows running[i] to `tokens`, preempting (by preemption_mode) the least urgent, youngest
  // sequence at index >= i until it fits. False when running[i] itself was preempted.
  bool grow_or_preempt(std::size_t i, std::int64_t tokens) { return grow(i, tokens) || preempt_until_grown(i, tokens); }
  // Brings swapped sequences back (oldest first) while their blocks fit above the watermark;
  // each is appended to `running` ready to decode. Returns how many came back.
  std::size_t swap_in();
  // Moves migrated sequences (oldest first) to running while their blocks fit above the
  // watermark and max_num_seqs allows; they need no prefill. Returns how many moved.
  std::size_t admit_migrated();
  // Every prefilled running sequence grows by its next token, oldest first, preempting by
  // grow_or_preempt where blocks run short (a per-item policy's decodes: chunked prefill). The
  // sequences not prefilled are left as they are and their running indices, ascending, replace
  // `unprefilled`. Returns the number of prefilled sequences (each then holds its next token).
  std::size_t grow_prefilled(std::vector<std::uint32_t>& unprefilled);
  // Every running sequence decodes one token (making room by preemption); then, if nothing was
  // preempted, swapped sequences come back and decode too. The continuous decode step.
  void decode_all(IterationPlan& plan);
  // vLLM's multi-step decode window (engine.num_scheduler_steps = `steps` > 1; semantics and
  // sources in continuous.cpp): every running sequence reserves KV for `steps` more tokens at the
  // window's start (1 + num_lookahead_slots, making room by preemption as decode_all does), then
  // swapped sequences come back if nothing was preempted; each is planned as one item of `steps`
  // decode tokens, and plan.decode_steps = steps. The plan's shape is the window's first step.
  void decode_window(IterationPlan& plan, std::int64_t steps);
  // Drops waiting requests (never started) that have waited longer than max_waiting_time_s.
  void drop_expired();
  // Aborts every request older than `timeout_ns` since arrival (its client gave up), wherever it
  // is: waiting, running (blocks freed), swapped out (host blocks freed) or migrated. Marks it
  // timed_out and lists it in timed_out_ids. The engine notices aborts between iterations, as vLLM.
  void abort_older_than(TimeNs timeout_ns);
  // Frees a running sequence's blocks and slot (the caller removes it from `running`): it leaves
  // for good (finished, timed out, handed off) or was preempted (preempt). With prefix caching
  // its blocks past eager_blocks are registered first (register_own_blocks).
  void release(const Sequence& seq);
  // Prefix caching: the leading blocks of a request's sequence that are registered in the cache
  // as they fill (Sequence::eager_blocks); the others when it leaves. Exact: no lookup and no
  // other registration can involve those blocks' hashes while it runs (the .cpp says why).
  std::int32_t shared_blocks(const Request& r) const;
  // Removes running[index] and preempts it: to host memory (swap mode, while swap space lasts)
  // or back to the front of the waiting queue to be recomputed.
  void preempt(std::size_t index);

 private:
  // Appends to `running`; the newcomer is outside the decode window until its first
  // all-running decode step.
  void join_running(const Sequence& seq);
  void set_kv_tokens(Sequence& seq, std::int64_t tokens) {
    const std::int64_t b = kv.block_size_tokens();
    const auto unused = [&](std::int64_t t) { return kv.blocks_for_tokens(t) * b - t; };
    frag_slots += unused(tokens) - unused(seq.kv_tokens);
    seq.kv_tokens = tokens;
  }
  // grow's path when the reservation needs more blocks.
  bool grow_blocks(Sequence& seq, std::int64_t tokens);
  // grow_or_preempt after grow failed: preempts until running[i] grows or is the one preempted.
  bool preempt_until_grown(std::size_t i, std::int64_t tokens);
  // settle for a sequence in the window.
  void settle_member(Sequence& seq);
  std::vector<std::uint32_t>& phase_bucket(const Sequence& seq);
  // decode_all for a batch with sequences in the lazy window, when the free blocks cover every
  // block the step can need (no preemption): false, changing nothing, otherwise.
  bool decode_lazy(std::int64_t& kv_tokens);
  // decode_all one sequence at a time, in order (growth may preempt).
  void decode_each(std::int64_t& kv_tokens);
  // Registers seq's filled blocks up to eager_blocks (the rest wait for register_own_blocks).
  // Inline: every decode step of every sequence comes here, and most have nothing to register.
  void publish_full_blocks(Sequence& seq) {
    if (!config.enable_prefix_caching) return;
    // The blocks past eager_blocks are registered when the sequence leaves (register_own_blocks).
    const std::int64_t full = std::min<std::int64_t>(seq.kv_tokens / kv.block_size_tokens(), seq.eager_blocks);
    if (seq.hashed_blocks < full) publish_blocks(seq, full);
  }
  // Hashes seq's blocks [hashed_blocks, end) along its chain and registers them.
  void publish_blocks(Sequence& seq, std::int64_t end);
  // Registers seq's filled blocks not registered yet (those past eager_blocks): under their
  // hashes when a later request may look them up (`findable`), else as cached blocks no lookup
  // finds (BlockAllocator::publish_unindexed: no hashing, no index entry).
  void register_own_blocks(Sequence& seq, bool findable);
};

// One sequence's share of an iteration.
struct PlannedItem {
  std::uint32_t running_index = 0;
  std::int64_t new_tokens = 0;  // tokens computed this iteration (1 for decode)
  bool prefill = false;
};

struct IterationPlan {
  std::vector<PlannedItem> items;  // prefill chunks and decodes, one per sequence
  BatchShape shape;
  std::int64_t padding_tokens = 0;  // computed for padding only (static batches)
  TimeNs wake_at_ns = -1;           // an idle policy asks to be scheduled again at this time
  // Every running sequence, running[0..all_running_seqs), decodes one token and `items` is empty:
  // most iterations, which the replica commits in one pass, so the n identical items would only
  // be written and read back.
  bool all_running_decode = false;
  std::size_t all_running_seqs = 0;
  // A multi-step decode window (ReplicaState::decode_window): `shape` is its first step, each
  // later step has every sequence's context one token longer; the replica prices and records
  // each step and commits the window's tokens together at its end. 1: an ordinary iteration.
  std::int64_t decode_steps = 1;
  // Sequences in the iteration.
  std::size_t seqs() const { return all_running_decode ? all_running_seqs : items.size(); }
  void clear() {
    items.clear();
    all_running_decode = false;
    all_running_seqs = 0;
    decode_steps = 1;
    shape = BatchShape{};
    padding_tokens = 0;
    wake_at_ns = -1;
  }
  // Adds running[index]'s next `tokens` tokens after `context` cached ones as a prefill chunk.
  void add_prefill(std::size_t index, std::int64_t tokens, const Sequence& seq);
};

}  // namespace servesim
