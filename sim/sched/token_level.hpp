// LightLLM-style token-level admission (see token_level.cpp).
#pragma once
#include <utility>
#include <vector>

#include "sim/sched/continuous.hpp"

namespace servesim {

class TokenLevelScheduler final : public ContinuousScheduler {
 public:
  explicit TokenLevelScheduler(const SchedulerConfig& config) : expected_output_tokens_(config.expected_output_tokens) {}

  // The peak KV tokens that `current` (tokens held now) and `remaining` (tokens still to come)
  // reach if every sequence grows one token per step until done: with remaining sorted in
  // decreasing order, max over i of sum_{j<=i} current_j + (i + 1) * remaining_i. Sorts `seqs`.
  static std::int64_t peak_future_tokens(std::vector<std::pair<std::int64_t, std::int64_t>>& seqs);
  // LightLLM has no multi-step windows; only vLLM's continuous policy models them.
  bool supports_multi_step() const override { return false; }

 protected:
  bool admit_ok(ReplicaState& state, const Sequence& head) override;

 private:
  std::int64_t expected_output_tokens_;
  std::vector<std::pair<std::int64_t, std::int64_t>> scratch_;  // (remaining, current) per sequence
};

}  // namespace servesim
