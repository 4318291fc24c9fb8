// cxxopts glue shared by the subcommands: parse a vector of arguments, turning cxxopts errors
// into InputError so they exit with code 2 and one line.
#pragma once
#include <string>
#include <vector>

// `--set key=[1,3]` and `--set key={"a":1,"b":2}` are one value each: never split repeatable
// options at commas (cxxopts' default). Every use of cxxopts comes through this header.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

namespace servesim::cli {

cxxopts::ParseResult parse_args(cxxopts::Options& options, const std::vector<std::string>& args);

}  // namespace servesim::cli
