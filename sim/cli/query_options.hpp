// The command-line half of a what-if question (`step`, `quant-table`, `contention`, `op`): the
// shared --model/--hw/--quant/... flags, read into a StepQuery (sim/analysis/step_query.hpp).
#pragma once
#include <string>

#include <cxxopts.hpp>

#include "sim/analysis/step_query.hpp"

namespace servesim::cli {

// Adds --model --hw --quant --dtype --group-size --kv-cache-dtype --engine --tp --pp --micro-batches.
void add_query_options(cxxopts::Options& opts);
StepQuery load_query(const cxxopts::ParseResult& p, const std::string& cmd);

}  // namespace servesim::cli
