// See options.hpp.
#include "sim/cli/options.hpp"

#include "sim/core/error.hpp"

namespace servesim::cli {

cxxopts::ParseResult parse_args(cxxopts::Options& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.push_back(options.program().c_str());
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    return options.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const cxxopts::exceptions::exception& e) {
    throw InputError(options.program(), "", e.what());
  }
}

}  // namespace servesim::cli

namespace servesim::cli {
std::string join_args(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) {
    const bool quote = a.find_first_of(" ,\"'") != std::string::npos && a.find('"') == std::string::npos;
    s += (s.empty() ? "" : " ") + (quote ? "\"" + a + "\"" : a);
  }
  return s;
}
}  // namespace servesim::cli
