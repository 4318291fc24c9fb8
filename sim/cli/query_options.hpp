// The command-line half of a what-if question (`step`, `quant-table`, `contention`, `op`): the
// shared --model/--hw/--quant/... flags, read into a StepQuery (sim/analysis/step_query.hpp).
#pragma once
#include <string>

#include "sim/analysis/step_query.hpp"
#include "sim/cli/options.hpp"

namespace servesim::cli {

// The ranges the what-if commands share: sequences in a batch (the scenario's engine.max_num_seqs
// range: a batch past it is no GPU's, and would be timed op by op) and tokens in a sequence's KV
// cache (2^24).
const KeyRange& batch_range();
const KeyRange& context_range();

// Adds --model --hw --quant --dtype --group-size --kv-cache-dtype --engine --tp --pp --micro-batches.
void add_query_options(cxxopts::Options& opts);
StepQuery load_query(const cxxopts::ParseResult& p, const std::string& cmd);

// One step as `step` and `roofline` ask for it: --phase decode (--batch, --context: required, no
// silent 0) or prefill (--prompt, --context default 0), --eager. read_step checks the values, that
// the model runs with the context (its max context) and that the weights and the batch's KV cache
// fit (check_step_fits), then times the step.
void add_step_options(cxxopts::Options& opts);
struct StepAsked {
  std::string phase;
  long long batch = 0, context = 0, prompt = 0;
  TimedStep timed;
};
StepAsked read_step(const cxxopts::ParseResult& p, const StepQuery& q, const std::string& cmd);

// "host H + GPU G (of which waiting on launches W)", or, when the engine overlaps its host work
// with the GPU (async scheduling: the step takes the longer of the two), "GPU G, host H
// overlapped": the words after "step T =" in `step` and `roofline`.
std::string step_split(double time_s, double host_s, double launch_wait_s, bool host_overlapped);
// The engine line of `step` and `roofline`: name, graphs or eager launches, host terms.
std::string engine_line(const StepQuery& q, const LaunchConfig& launch, bool cuda_graphs);

}  // namespace servesim::cli
