// Batching policies, one core behaviour each, driven directly through ReplicaState: the test
// plays the replica (commit = tokens computed, finished requests leave).
#include <doctest/doctest.h>

#include "sim/sched/batch_scheduler.hpp"
#include "sim/sched/token_level.hpp"
#include "scheduler_harness.hpp"

using namespace servesim;

namespace {

using test::Harness;

EngineConfig engine(const std::string& impl) { return test::small_engine(impl); }

}  // namespace

TEST_CASE("continuous: new prompts run alone (prefill-prioritised), then everyone decodes") {
  Harness h(engine("continuous"), 1000);
  h.add(100, 3);
  h.add(200, 3);
  h.step();
  CHECK(h.plan.seqs() == 2);
  CHECK(h.prefill_items() == 2);
  CHECK(h.plan.shape.prefill_tokens == 300);
  h.commit();
  h.add(50, 3);
  h.step();  // the newcomer's prefill preempts the decode step
  CHECK(h.plan.seqs() == 1);
  CHECK(h.plan.shape.prefill_tokens == 50);
  h.commit();
  h.step();
  CHECK(h.plan.shape.decode_seqs == 3);
  CHECK(h.prefill_items() == 0);
}

TEST_CASE("continuous: when blocks run out the youngest is preempted and recomputed") {
  Harness h(engine("continuous"), 13);  // 208 tokens
  h.add(96, 50);  // 6 blocks
  h.add(96, 50);  // 6 blocks
  h.step();
  h.commit();  // both hold 96 tokens (+1 sampled), 12 of 13 blocks
  h.step();    // decode to 97 tokens: each needs a 7th block, only one is free
  CHECK(h.st->preemptions == 1);
  CHECK(h.st->running.size() == 1);
  CHECK(h.plan.shape.decode_seqs == 1);
  CHECK(h.st->recomputed_tokens == 96);
  REQUIRE(h.st->waiting.size() == 1);
  CHECK(h.st->waiting.front().target_tokens == 97);  // prompt + the token it had generated
  CHECK(h.requests[1].preemptions == 1);
  h.st->kv.check_invariants();
}

namespace {
// Two 96-token prompts in 13 blocks (of 1000 bytes) under swap preemption; the second is the
// victim on the first decode step.
std::unique_ptr<Harness> swap_case(double swap_space_bytes, std::int32_t first_output) {
  EngineConfig e = engine("continuous");
  e.preemption_mode = PreemptionMode::swap;
  e.swap_space_bytes = swap_space_bytes;
  auto h = std::make_unique<Harness>(e, 13);
  h->add(96, first_output);
  h->add(96, 50);
  h->step();
  h->commit();
  h->step();
  return h;
}
}  // namespace

TEST_CASE("swap preemption: the victim's KV goes to host memory and comes back without recompute") {
  auto hp = swap_case(1e6, 3);  // room for 1000 blocks
  Harness& h = *hp;
  CHECK(h.st->preemptions == 1);
  CHECK(h.st->recomputed_tokens == 0);
  REQUIRE(h.st->swapped.size() == 1);
  CHECK(h.st->pending_swap_bytes == doctest::Approx(6 * 1000.0));  // 96 tokens = 6 blocks out
  CHECK(h.st->swap_used_blocks == 6);
  h.commit();
  h.step();  // request 0 is done after this step and frees its blocks
  h.commit();
  h.st->pending_swap_bytes = 0.0;
  h.step();  // request 1 swaps back in and decodes
  CHECK(h.st->swapped.empty());
  CHECK(h.st->swap_in_bytes == doctest::Approx(6 * 1000.0));
  CHECK(h.st->pending_swap_bytes == doctest::Approx(6 * 1000.0));
  REQUIRE(h.st->running.size() == 1);
  CHECK(h.st->running[0].computed_tokens == 96);  // nothing recomputed
  CHECK(h.plan.shape.decode_seqs == 1);
  h.st->kv.check_invariants();
}

TEST_CASE("swap preemption falls back to recompute when swap space is full") {
  auto hp = swap_case(5000.0, 50);  // 5 blocks: the victim needs 6
  Harness& h = *hp;
  CHECK(h.st->swapped.empty());
  CHECK(h.st->recomputed_tokens == 96);
}

TEST_CASE("chunked-prefill: decodes first, then chunks capped by the threshold fill the token budget") {
  EngineConfig e = engine("chunked-prefill");
  e.max_num_batched_tokens = 256;
  e.scheduler.long_prefill_token_threshold = 200;
  Harness h(e, 1000);
  h.add(10, 20);
  h.step();
  h.commit();  // request 0 decodes from now on
  h.add(1000, 5);
  h.add(30, 5);
  h.step();
  CHECK(h.plan.shape.decode_seqs == 1);
  CHECK(h.plan.shape.prefill_tokens == 230);  // budget 255 after the decode: 200 (threshold) + 30
  CHECK(h.plan.seqs() == 3);
  CHECK(h.plan.items[1].new_tokens == 200);
  CHECK(h.plan.items[2].new_tokens == 30);
  h.commit();
  CHECK(h.requests[1].generated_tokens == 0);  // a partial prompt samples nothing
  CHECK(h.requests[2].generated_tokens == 1);
  h.step();
  // decodes of 0 and 2, then the long prompt's next chunk of 200
  CHECK(h.plan.shape.decode_seqs == 2);
  CHECK(h.plan.shape.prefill_tokens == 200);
}

TEST_CASE("inflight: decodes first, then whole prompts in queue order; one that does not fit waits") {
  EngineConfig e = engine("inflight");
  e.max_num_batched_tokens = 256;
  Harness h(e, 1000);
  h.add(10, 20);
  h.step();
  h.commit();  // request 0 decodes from now on
  h.add(250, 5);  // 250 > 255 - 10 left after the next prompt: waits whole, never chunked
  h.add(30, 5);
  h.step();
  CHECK(h.plan.shape.decode_seqs == 1);
  CHECK(h.plan.shape.prefill_tokens == 250);  // budget 255 after the decode holds the 250-token prompt
  CHECK(h.plan.seqs() == 2);                  // the 30-token prompt behind it does not fit the 5 left
  h.commit();
  CHECK(h.requests[1].generated_tokens == 1);  // the whole prompt ran: it samples its first token
  h.step();
  CHECK(h.plan.shape.decode_seqs == 2);
  CHECK(h.plan.shape.prefill_tokens == 30);
  h.add(255, 5);  // needs the whole budget: waits while three decodes take 3 tokens
  h.commit();
  h.step();
  CHECK(h.plan.shape.decode_seqs == 3);
  CHECK(h.plan.shape.prefill_tokens == 0);
}

TEST_CASE("static: waits for a full batch or the timeout, pads prompts and rows") {
  EngineConfig e = engine("static");
  e.scheduler.batch_size = 4;
  e.scheduler.batch_timeout_s = 1.0;
  Harness h(e, 1000);
  h.add(100, 2, 0);
  h.add(40, 3, 0);
  h.step(seconds_to_ns(0.5));
  CHECK(h.plan.shape.total_tokens() == 0);
  CHECK(h.plan.wake_at_ns == seconds_to_ns(1.0));
  h.step(seconds_to_ns(1.0));  // timeout: a batch of 2 requests in 4 rows, all padded to 100
  CHECK(h.plan.seqs() == 2);
  CHECK(h.plan.shape.prefill_tokens == 400);
  CHECK(h.plan.padding_tokens == 60 + 2 * 100);
  h.commit();
  h.add(10, 1, seconds_to_ns(1.0));  // cannot join the running batch
  h.step(seconds_to_ns(1.1));
  CHECK(h.plan.shape.decode_seqs == 4);  // 2 live rows + 2 padding rows
  CHECK(h.plan.padding_tokens == 2);
  CHECK(h.plan.seqs() == 2);
  h.commit();  // request 0 done (2 tokens)
  h.step(seconds_to_ns(1.2));
  CHECK(h.plan.shape.decode_seqs == 4);  // its row keeps computing padding
  CHECK(h.plan.padding_tokens == 3);
  h.commit();  // request 1 done: the batch is over
  h.step(seconds_to_ns(1.3));
  CHECK(h.plan.shape.total_tokens() == 0);  // the newcomer waits for its own batch's timeout
  CHECK(h.plan.wake_at_ns == seconds_to_ns(2.0));
}

TEST_CASE("dynamic: a batch forms at max_batch_size without waiting, is ragged, and nothing joins it") {
  EngineConfig e = engine("dynamic");
  e.scheduler.max_batch_size = 2;
  e.scheduler.max_queue_delay_s = 10.0;
  Harness h(e, 1000);
  h.add(100, 1);
  h.add(40, 3);
  h.add(20, 1);
  h.step();
  CHECK(h.plan.seqs() == 2);
  CHECK(h.plan.shape.prefill_tokens == 140);
  CHECK(h.plan.padding_tokens == 0);
  h.commit();  // request 0 finishes at once
  h.step();
  CHECK(h.plan.shape.decode_seqs == 1);
  CHECK(h.plan.shape.prefill_tokens == 0);
}

TEST_CASE("token-level: the peak future KV formula, and admission refused on estimated future tokens") {
  // remaining (10, 5, 1), current (100, 50, 30): peaks 110, 160, 183.
  std::vector<std::pair<std::int64_t, std::int64_t>> seqs{{5, 50}, {1, 30}, {10, 100}};
  CHECK(TokenLevelScheduler::peak_future_tokens(seqs) == 183);

  EngineConfig e = engine("token-level");
  e.kv_reservation = KvReservation::token;
  e.scheduler.expected_output_tokens = 300;
  Harness h(e, 1000);  // 1000 tokens
  h.add(300, 300);
  h.add(300, 300);
  h.step();
  // Now: 300 tokens held, 700 free, so the second prompt fits in blocks; but each would grow to
  // 600 tokens: 1200 > 1000. Only one is admitted.
  CHECK(h.plan.seqs() == 1);
  CHECK(h.st->waiting.size() == 1);
  CHECK(h.st->kv.block_size_tokens() == 1);

  Harness c(engine("continuous"), 1000 / 16);
  c.add(300, 300);
  c.add(300, 300);
  c.step();
  CHECK(c.plan.seqs() == 2);  // continuous admits on current blocks only
}

TEST_CASE("priority scheduling: the most urgent class is admitted first, the least urgent preempted first") {
  EngineConfig e = engine("continuous");
  e.scheduler.order = SchedulerConfig::Order::priority;
  Harness h(e, 13);
  h.add(96, 50, 0, 1);  // class 1, 6 blocks
  h.step();
  h.commit();
  h.add(96, 50, 1, 1);   // class 1, arrives first
  h.add(112, 50, 2, 0);  // class 0, 7 blocks: takes the rest
  h.step();
  REQUIRE(h.st->running.size() == 2);
  CHECK(h.st->running[1].request == 2);  // the urgent one jumped the queue
  CHECK(h.st->waiting.front().request == 1);
  h.commit();
  // No block is free: the oldest running sequence (class 1) is the victim, where FCFS would
  // preempt the youngest (class 0).
  h.step();
  REQUIRE(h.st->running.size() == 1);
  CHECK(h.st->running[0].request == 2);
  CHECK(h.st->waiting.front().request == 0);
  CHECK(h.plan.shape.decode_seqs == 1);
}

TEST_CASE("contiguous reservation: max_model_len at admission, so fewer sequences fit") {
  EngineConfig e = engine("continuous");
  e.kv_reservation = KvReservation::contiguous;
  e.max_model_len = 1024;
  Harness h(e, 150);  // 2400 tokens: two reservations of 1024
  for (int i = 0; i < 4; ++i) h.add(100, 10);
  h.step();
  CHECK(h.plan.seqs() == 2);
  CHECK(h.st->kv.blocks_of(h.st->running[0].slot) == 64);
  h.commit();
  h.step();  // decoding needs no new block
  CHECK(h.st->kv.used_blocks() == 128);
  CHECK(h.st->frag_slots == 2 * (112 - 101));  // 101 tokens each after this step: 7 blocks, 112 slots
}

TEST_CASE("max_waiting_time_s drops requests that never started; preempted ones stay") {
  EngineConfig e = engine("continuous");
  e.scheduler.max_waiting_time_s = 1.0;
  e.max_num_seqs = 1;
  Harness h(e, 1000);
  h.add(10, 100, 0);
  h.add(10, 100, 0);
  h.step(0);
  h.commit();
  h.requests[0].started_ns = 0;
  h.step(seconds_to_ns(2.0));
  CHECK(h.st->dropped_timeout == 1);
  CHECK(h.st->waiting.empty());
  CHECK(h.requests[1].state == RequestState::rejected);
}
