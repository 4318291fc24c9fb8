// The small engine the scheduler tests drive ReplicaState with: 16 sequences, 4096 batched tokens
// and context, 16-token blocks, no watermark (so admission is decided by free blocks alone).
#pragma once
#include <string>

#include "sim/config/scenario.hpp"

namespace servesim::test {

inline EngineConfig small_engine(const std::string& scheduler_impl) {
  EngineConfig e;
  e.max_num_seqs = 16;
  e.max_num_batched_tokens = 4096;
  e.max_model_len = 4096;
  e.block_size = 16;
  e.watermark_frac = 0.0;
  e.scheduler.impl = scheduler_impl;
  return e;
}

}  // namespace servesim::test
