// See options.hpp.
#include <algorithm>
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

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= s.size()) {
    const std::size_t end = std::min(s.find(',', begin), s.size());
    if (end > begin) out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}
}  // namespace servesim::cli
