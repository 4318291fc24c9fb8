// cxxopts glue shared by the subcommands: parse a vector of arguments, turning cxxopts errors
// into InputError so they exit with code 2 and one line.
#pragma once
#include <string>
#include <vector>

// Repeatable flags take each value whole: "--grid k=1,2" and "--set k=[1,2]" must not be split at
// commas (cxxopts' default), so the delimiter is a character no argument contains.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

namespace servesim::cli {

cxxopts::ParseResult parse_args(cxxopts::Options& options, const std::vector<std::string>& args);

}  // namespace servesim::cli

namespace servesim::cli {
// The arguments as one line (for "reproduce with" notes in written tables).
std::string join_args(const std::vector<std::string>& args);
// The non-empty items of a comma-separated flag value ("--hw a,b").
std::vector<std::string> split_commas(const std::string& s);
}  // namespace servesim::cli
