// See options.hpp.
#include "sim/cli/options.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/suggest.hpp"

namespace servesim::cli {

namespace {
// The flag whose value cxxopts could not parse ("Argument 'abc' failed to parse" names only the
// value): the first --flag=VALUE or --flag VALUE whose VALUE the message quotes; "" if none.
std::string flag_of_bad_value(const std::vector<std::string>& args, const std::string& message) {
  const auto quoted = [&message](const std::string& v) {
    return message.find("\u2018" + v + "\u2019") != std::string::npos || message.find("'" + v + "'") != std::string::npos;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') continue;
    const auto eq = a.find('=');
    if (eq != std::string::npos ? quoted(a.substr(eq + 1)) : i + 1 < args.size() && quoted(args[i + 1])) return a.substr(0, eq);
  }
  return "";
}

// "--max-input-bytes 4G": bytes, or with a K, M, G or T (powers of 1024; "GB" and "GiB" too),
// in [1, 1T].
std::uint64_t parse_byte_size(const std::string& text) {
  std::uint64_t v = 0;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, v);
  const std::string unit(end, last);
  int power = -1;
  const char* prefixes[] = {"", "K", "M", "G", "T"};
  for (int i = 0; i < 5; ++i) {
    const std::string p = prefixes[i];
    if (unit == p || unit == p + "B" || (i > 0 && unit == p + "iB")) power = i;
  }
  constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 40;
  if (ec != std::errc() || power < 0 || v == 0 || v > (kMaxBytes >> (10 * power))) {
    throw InputError("--max-input-bytes", "", "must be a size in [1, 1T] (bytes, or with K, M, G or T: 4G), got '" + text + "'");
  }
  return v << (10 * power);
}
// The texts a cxxopts message quotes (‘x’ or 'x'), in order.
std::vector<std::string> quoted(const std::string& message) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (true) {
    std::size_t open = message.find("\u2018", at), skip = 3;
    if (open == std::string::npos) {
      open = message.find('\'', at);
      skip = 1;
    }
    if (open == std::string::npos) return out;
    const std::size_t close = skip == 3 ? message.find("\u2019", open + 3) : message.find('\'', open + 1);
    if (close == std::string::npos) return out;
    out.push_back(message.substr(open + skip, close - open - skip));
    at = close + skip;
  }
}

// The long names of every flag `options` knows ("--out"), for "did you mean"; with `switches`,
// only those that take no value.
std::vector<std::string> flag_names(const cxxopts::Options& options, bool switches = false) {
  std::vector<std::string> names;
  for (const std::string& group : options.groups()) {
    for (const auto& o : options.group_help(group).options) {
      if (switches && !o.is_boolean) continue;
      for (const auto& l : o.l) names.push_back("--" + l);
    }
  }
  return names;
}
}  // namespace

cxxopts::ParseResult parse_args(cxxopts::Options& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.push_back(options.program().c_str());
  for (const auto& a : args) argv.push_back(a.c_str());
  options.add_options()("max-input-bytes", "most bytes read from a stream input (a FIFO, <(zcat ...)) or held from one JSON file: "
                                           "1 to 1T, with K, M, G or T (default 1G)",
                        cxxopts::value<std::string>());
  try {
    const cxxopts::ParseResult parsed = options.parse(static_cast<int>(argv.size()), argv.data());
    if (parsed.count("max-input-bytes")) set_input_byte_limit(parse_byte_size(parsed["max-input-bytes"].as<std::string>()));
    return parsed;
  } catch (const cxxopts::exceptions::exception& e) {
    // cxxopts' own wording ("Option 'x' does not exist", "Argument 'abc' failed to parse") is
    // not shown: it names values rather than flags.
    const std::vector<std::string> q = quoted(e.what());
    const std::string first = q.empty() ? "" : q[0];
    if (dynamic_cast<const cxxopts::exceptions::incorrect_argument_type*>(&e)) {
      const std::string flag = flag_of_bad_value(args, e.what());
      const auto switches = flag_names(options, true);
      double v = 0.0;
      const auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), v);
      const bool a_number = ec == std::errc() && end == first.data() + first.size();
      const bool a_switch = std::find(switches.begin(), switches.end(), flag) != switches.end();
      flag_error(options.program(), flag,
                 std::string(a_switch ? "takes no value" : a_number ? "must be a whole number" : "must be a number") + ", got '" + first + "'");
    }
    if (dynamic_cast<const cxxopts::exceptions::no_such_option*>(&e)) {
      flag_error(options.program(), (first.size() == 1 ? "-" : "--") + first,
                 "unknown flag" + did_you_mean("--" + first, flag_names(options)) + " (see --help)");
    }
    if (dynamic_cast<const cxxopts::exceptions::missing_argument*>(&e) ||
        dynamic_cast<const cxxopts::exceptions::option_requires_argument*>(&e)) {
      flag_error(options.program(), "--" + first, "needs a value");
    }
    if (dynamic_cast<const cxxopts::exceptions::gratuitous_argument_for_option*>(&e)) {
      flag_error(options.program(), "--" + first, "takes no value, got '" + (q.size() > 1 ? q[1] : "") + "'");
    }
    if (dynamic_cast<const cxxopts::exceptions::invalid_option_syntax*>(&e)) {
      flag_error(options.program(), "", "'" + first + "' is not a flag (--name or --name=value)");
    }
    flag_error(options.program(), "", e.what());
  }
}

namespace {
// The partial file and command line `merge` is re-running, or nothing (RecordedArgsScope).
struct RecordedArgs {
  std::string file, command_line;
};
std::optional<RecordedArgs> recorded;
}  // namespace

void flag_error(const std::string& cmd, const std::string& flag, const std::string& message) {
  if (!recorded) throw cmd.empty() ? InputError(flag, "", message) : InputError(cmd, flag, message);
  throw InputError(recorded->file, "args", "`" + recorded->command_line + "` (as the shards recorded it): " +
                                               (flag.empty() ? "" : flag + ": ") + message);
}

RecordedArgsScope::RecordedArgsScope(const std::string& file, const std::string& command, const std::vector<std::string>& args) {
  recorded = RecordedArgs{file, "servesim " + command + (args.empty() ? "" : " " + join_args(args))};
}
RecordedArgsScope::~RecordedArgsScope() { recorded.reset(); }

template <class T>
void RangedFlag<T>::add(cxxopts::Options& opts) const {
  const std::string text = help + " (" + range.text() + ")";
  if (default_value.empty()) opts.add_options()(name, text, cxxopts::value<T>());
  else opts.add_options()(name, text, cxxopts::value<T>()->default_value(default_value));
}

template <class T>
T RangedFlag<T>::read(const cxxopts::ParseResult& p, const std::string& cmd) const {
  const T v = p[name].as<T>();
  if (!range.contains(static_cast<double>(v))) {
    flag_error(cmd, "--" + name, "must be in " + range.text() + ", got " + key_number_text(static_cast<double>(v)));
  }
  return v;
}

template struct RangedFlag<long long>;
template struct RangedFlag<double>;

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
