// cxxopts glue shared by the subcommands: parse a vector of arguments, turning cxxopts errors
// into InputError so they exit with code 2 and one line.
#pragma once
#include <string>
#include <vector>

// Repeatable flags take each value whole: "--grid k=1,2" and "--set k=[1,2]" must not be split at
// commas (cxxopts' default), so the delimiter is a character no argument contains.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

#include "sim/config/scenario_keys.hpp"

namespace servesim::cli {

cxxopts::ParseResult parse_args(cxxopts::Options& options, const std::vector<std::string>& args);

// InputError for a bad flag value: "CMD: --flag: MESSAGE" ("--flag: MESSAGE" without CMD). While `merge` re-runs a command with
// the arguments its partial files recorded (a RecordedArgsScope), the error names the partial
// file and its "args" key instead: the user did not type those arguments.
[[noreturn]] void flag_error(const std::string& cmd, const std::string& flag, const std::string& message);
class RecordedArgsScope {
 public:
  RecordedArgsScope(const std::string& file, const std::string& command, const std::vector<std::string>& args);
  ~RecordedArgsScope();
  RecordedArgsScope(const RecordedArgsScope&) = delete;
  RecordedArgsScope& operator=(const RecordedArgsScope&) = delete;
};

// A numeric flag and its declared range (T: long long or double). add() writes the range into the
// help text and read() checks the value against it, so the range --help documents is the one
// enforced. A flag without a default is read only when given (has()).
template <class T>
struct RangedFlag {
  std::string name;           // without the dashes
  std::string help;
  KeyRange range;
  std::string default_value;  // "" = none
  void add(cxxopts::Options& opts) const;
  bool has(const cxxopts::ParseResult& p) const { return p.count(name) > 0; }
  // The value (the default when not given); flag_error naming `cmd` and the flag outside the range.
  T read(const cxxopts::ParseResult& p, const std::string& cmd) const;
};
using IntegerFlag = RangedFlag<long long>;
using NumberFlag = RangedFlag<double>;

}  // namespace servesim::cli

namespace servesim::cli {
// The arguments as one line (for "reproduce with" notes in written tables).
std::string join_args(const std::vector<std::string>& args);
// The non-empty items of a comma-separated flag value ("--hw a,b").
std::vector<std::string> split_commas(const std::string& s);
}  // namespace servesim::cli
