// Error types and the exit codes they map to: bad input (2) names the file and JSON path;
// anything else is a bug in servesim (70, sysexits.h's EX_SOFTWARE: distinct from every exit
// code a command returns on purpose; cli/failure.hpp prints it).
#pragma once
#include <stdexcept>
#include <string>

namespace servesim {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 70;
constexpr int kExitBadInput = 2;

// `s` with control bytes (NUL, CR, LF, ESC, ...: below 0x20, and 0x7f) written as \xNN, so a value
// echoed from a hostile file prints as one line, whole (what() stops at a NUL) and harmless to a
// terminal.
inline std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else {
      const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

// Bad user input. what() is one line: "<file>: <json.path>: <message>" (control bytes escaped).
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, const std::string& path, const std::string& message)
      : std::runtime_error(printable(format(file, path, message))), message_(message) {}
  explicit InputError(const std::string& message) : std::runtime_error(printable(message)), message_(message) {}
  // The message without the file and path (for a note that should not name a file).
  const std::string& message() const { return message_; }

 private:
  std::string message_;
  static std::string format(const std::string& file, const std::string& path, const std::string& message) {
    std::string s = file.empty() ? std::string("<input>") : file;
    if (!path.empty()) s += ": " + path;
    return s + ": " + message;
  }
};

}  // namespace servesim
