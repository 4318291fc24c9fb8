// Temporary-then-rename buffered output; see output_file.hpp.
#include "sim/io/output_file.hpp"

#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "sim/core/error.hpp"

namespace servesim {

OutputFile::OutputFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) throw InputError(tmp_, "", "cannot write");
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

OutputFile::~OutputFile() {
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
}

void OutputFile::write(const char* s) { std::fputs(s, file_); }

void OutputFile::commit() {
  const bool failed = std::ferror(file_) != 0;
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed || close_failed) {
    std::remove(tmp_.c_str());
    throw InputError(tmp_, "", "write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw InputError(path_, "", "cannot write: " + ec.message());
}

int format_ns_as_seconds(char* buf, std::size_t size, TimeNs ns) {
  const char* sign = ns < 0 ? "-" : "";
  const std::int64_t a = ns < 0 ? -ns : ns;
  return std::snprintf(buf, size, "%s%" PRId64 ".%09" PRId64, sign, a / 1'000'000'000, a % 1'000'000'000);
}

int format_ns_as_us(char* buf, std::size_t size, TimeNs ns) {
  const char* sign = ns < 0 ? "-" : "";
  const std::int64_t a = ns < 0 ? -ns : ns;
  return std::snprintf(buf, size, "%s%" PRId64 ".%03" PRId64, sign, a / 1000, a % 1000);
}

}  // namespace servesim
