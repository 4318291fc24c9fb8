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

// Bad user input. what() is one line: "<file>: <json.path>: <message>".
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, const std::string& path, const std::string& message)
      : std::runtime_error(format(file, path, message)), message_(message) {}
  explicit InputError(const std::string& message) : std::runtime_error(message), message_(message) {}
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
