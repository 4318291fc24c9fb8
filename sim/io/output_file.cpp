// Temporary-then-rename buffered output; see output_file.hpp.
#include "sim/io/output_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"

namespace servesim {

namespace {
std::string errno_text(int err) { return err ? std::string(": ") + std::strerror(err) : std::string(); }
}  // namespace

namespace {
// A temporary beside `path` that no other writer has: PATH.tmp.PID.N, created with O_EXCL (a name
// left by a crashed process of the same PID is skipped). Returns the open stream and sets `tmp`.
std::FILE* create_temporary(const std::string& path, std::string& tmp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // the umask applies, as for fopen
    if (fd >= 0) return ::fdopen(fd, "wb");
    if (errno != EEXIST) break;
  }
  return nullptr;
}
}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  const auto st = std::filesystem::status(path_, ec);
  if (std::filesystem::is_directory(st)) throw InputError(path_, "", "is a directory, not a file");
  const bool in_place = std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
  errno = 0;
  file_ = in_place ? std::fopen(path_.c_str(), "wb") : create_temporary(path_, tmp_);
  if (!file_) {
    const int err = errno;
    tmp_.clear();
    throw InputError(path_, "", "cannot write" + errno_text(err));
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
  if (!tmp_.empty()) std::remove(tmp_.c_str());  // never committed
}

void OutputFile::write(const char* s) { std::fputs(s, file_); }
void OutputFile::write(const std::string& s) { std::fwrite(s.data(), 1, s.size(), file_); }

namespace {
// nlohmann's serializer writes a report in pieces of a few characters; through an ostream each
// piece pays a sentry and a virtual call (callgrind, 2,048 replicas: 2.2G instructions, 48% of the
// run). This adapter gathers them as dump()'s string adapter does and hands the FILE* 256 KB at a
// time. output_adapter_protocol is in nlohmann's detail namespace: Debian's 3.11.2 (the version
// CMake's find_package pins through the package) keeps it as the stream and string adapters' base.
class FileJsonAdapter final : public nlohmann::detail::output_adapter_protocol<char> {
 public:
  explicit FileJsonAdapter(std::FILE* f) : f_(f) { buf_.reserve(kFlushBytes + 4096); }
  ~FileJsonAdapter() override { flush(); }
  void write_character(char c) override {
    buf_.push_back(c);
    if (buf_.size() >= kFlushBytes) flush();
  }
  void write_characters(const char* s, std::size_t n) override {
    buf_.append(s, n);
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush() {
    std::fwrite(buf_.data(), 1, buf_.size(), f_);  // errors show in ferror(), which close() checks
    buf_.clear();
  }

 private:
  static constexpr std::size_t kFlushBytes = 256 * 1024;
  std::FILE* f_;
  std::string buf_;
};
}  // namespace

void OutputFile::write_json(const nlohmann::json& j, int indent) {
  auto adapter = std::make_shared<FileJsonAdapter>(file_);
  nlohmann::detail::serializer<nlohmann::json> out(adapter, ' ');
  out.dump(j, indent >= 0, false, static_cast<unsigned int>(std::max(indent, 0)));  // as j.dump(indent)
  adapter->flush();
}

void OutputFile::close() {
  if (!file_) return;
  errno = 0;
  const bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0;
  const int err = errno;
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed || close_failed) throw InputError(path_, "", "write failed" + errno_text(err ? err : errno));
}

void OutputFile::commit() {
  close();
  if (tmp_.empty()) return;
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw InputError(path_, "", "cannot write: " + ec.message());
  tmp_.clear();
}

OutputDirLock::OutputDirLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir, "", "cannot create output directory: " + ec.message());
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(dir, "", "cannot open output directory" + errno_text(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw InputError(dir, "", "another servesim is writing into this folder; wait for it to end or give another --out");
    }
    throw InputError(dir, "", "cannot lock output directory" + errno_text(err));
  }
}

OutputDirLock::~OutputDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
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

int format_ns_as_us(char* buf, std::size_t size, TimeNs ns) {
  const char* sign = ns < 0 ? "-" : "";
  const std::int64_t a = ns < 0 ? -ns : ns;
  return std::snprintf(buf, size, "%s%" PRId64 ".%03" PRId64, sign, a / 1000, a % 1000);
}

}  // namespace servesim
