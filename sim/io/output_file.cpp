// Temporary-then-rename buffered output; see output_file.hpp.
#include "sim/io/output_file.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "sim/core/error.hpp"

namespace servesim {

namespace {
std::string errno_text(int err) { return err ? std::string(": ") + std::strerror(err) : std::string(); }
}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  const auto st = std::filesystem::status(path_, ec);
  if (std::filesystem::is_directory(st)) throw InputError(path_, "", "is a directory, not a file");
  const bool in_place = std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
  if (!in_place) tmp_ = path_ + ".tmp";
  errno = 0;
  file_ = std::fopen(in_place ? path_.c_str() : tmp_.c_str(), "wb");
  if (!file_) throw InputError(path_, "", "cannot write" + errno_text(errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

OutputFile::~OutputFile() {
  if (file_) {
    std::fclose(file_);
    if (!tmp_.empty()) std::remove(tmp_.c_str());
  }
}

void OutputFile::write(const char* s) { std::fputs(s, file_); }
void OutputFile::write(const std::string& s) { std::fwrite(s.data(), 1, s.size(), file_); }

void OutputFile::commit() {
  errno = 0;
  const bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0;
  const int err = errno;
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed || close_failed) {
    if (!tmp_.empty()) std::remove(tmp_.c_str());
    throw InputError(path_, "", "write failed" + errno_text(err ? err : errno));
  }
  if (tmp_.empty()) return;
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::remove(tmp_.c_str());
    throw InputError(path_, "", "cannot write: " + ec.message());
  }
}

void write_file(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) throw InputError(path, "", "cannot create its directory: " + ec.message());
  OutputFile out(path);
  out.write(text);
  out.commit();
}

void check_stdout() {
  std::cout.flush();
  errno = 0;
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (failed) throw InputError("<stdout>", "", "write failed" + errno_text(errno));
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
