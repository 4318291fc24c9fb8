// See input_file.hpp. POSIX descriptors rather than std::ifstream: opening a FIFO must not block
// (O_NONBLOCK), and the kind of file is read from the descriptor (fstat), so it cannot change
// between the check and the read.
#include "sim/core/input_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <streambuf>
#include <vector>

#include "sim/core/error.hpp"

namespace servesim {

namespace {
std::atomic<std::uint64_t> byte_limit{kDefaultInputByteLimit};

// "... the 1 GiB input limit (raise it with --max-input-bytes)".
std::string the_limit() { return "the " + byte_size_text(input_byte_limit()) + " input limit (raise it with --max-input-bytes)"; }

// Closes a descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Waits for the first bytes or the end of a FIFO opened with O_NONBLOCK (a blocking open would
// wait for a writer forever) and returns what it read. Before any writer has opened it, a read
// returns 0 as at the end of an empty FIFO; poll() tells them apart: it reports nothing until a
// writer opens it (then data, or a hang-up when it closes without writing), and reports at once
// on a pipe whose writer has already left (`<(true)`). EAGAIN means a writer that has not
// written yet.
std::string wait_for_writer(int fd, const std::string& path) {
  char chunk[4096];
  const ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0) return std::string(chunk, static_cast<std::size_t>(n));
  if (n < 0 && errno == EAGAIN) return "";
  pollfd p{fd, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, kFifoWriterWaitS * 1000);
  } while (r < 0 && errno == EINTR);
  if (r == 0) {
    throw InputError(path, "", "is a FIFO that nothing opened for writing within " + std::to_string(kFifoWriterWaitS) +
                                   " s (start the writer first, or give a file)");
  }
  return "";
}

// A stream's bytes, in pieces of at most kPiece (a 1 GiB stream read into one string would double
// its capacity as it grows: 2 GiB held to read 1).
using Pieces = std::vector<std::string>;
constexpr std::size_t kPiece = std::size_t{1} << 20;

// The whole of a stream (after the bytes `first` holds), read through the byte limit.
Pieces read_stream(int fd, const std::string& path, std::string first) {
  const std::uint64_t limit = input_byte_limit();
  std::uint64_t total = first.size();
  Pieces pieces;
  if (!first.empty()) pieces.push_back(std::move(first));
  while (true) {
    if (total > limit) throw InputError(path, "", "a stream longer than " + the_limit());
    if (pieces.empty() || pieces.back().size() == kPiece) {
      pieces.emplace_back();
      pieces.back().reserve(kPiece);
    }
    std::string& piece = pieces.back();
    const std::size_t used = piece.size();
    piece.resize(kPiece);  // within the reserved capacity
    const ssize_t n = ::read(fd, piece.data() + used, kPiece - used);
    piece.resize(used + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path, "", std::string("read error: ") + std::strerror(errno));
    if (n == 0) return pieces;
    total += static_cast<std::uint64_t>(n);
  }
}

// Streams are read whole on first use and kept for the process, by path: a trace is read more
// than once (its mean lengths for the saturation batch, then its requests; again for each
// replication, sweep point, probe or loop), and a stream can be read only once. Sweeps open
// inputs from several threads.
std::shared_ptr<const Pieces> stream_contents(int fd, const std::string& path, bool fifo) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Pieces>> kept;
  const std::lock_guard<std::mutex> lock(mu);
  auto& slot = kept[path];
  if (!slot) {
    std::string first = fifo ? wait_for_writer(fd, path) : "";
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // from here a read waits for data
    slot = std::make_shared<const Pieces>(read_stream(fd, path, std::move(first)));
  }
  return slot;
}
}  // namespace

std::uint64_t input_byte_limit() { return byte_limit.load(); }
void set_input_byte_limit(std::uint64_t bytes) { byte_limit.store(bytes); }

std::string byte_size_text(std::uint64_t bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[40];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.4g %s", v, units[u]);
  return buf;
}

// The bytes of a regular file, read as they are needed, or of a stream, from memory.
class InputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd) {}
  explicit Buffer(std::shared_ptr<const Pieces> pieces) : kept_(std::move(pieces)) {}
  ~Buffer() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  int read_errno() const { return read_errno_; }

  // Appends the next line (without its end) to `line`: `found` when a line end was read, `none`
  // at the end of the input (the last line may lack its end), `too_long` past `max` bytes.
  enum class LineEnd { found, none, too_long };
  LineEnd read_line(std::string& line, std::size_t max) {
    while (true) {
      if (gptr() == egptr() && traits_type::eq_int_type(underflow(), traits_type::eof())) return LineEnd::none;
      // The first LF, then a CR before it: memchr twice (a 2M-row, 40 MB CSV: 0.057 s, std::getline
      // 0.070 s, a loop over the bytes 0.097 s).
      const char* begin = gptr();
      const char* lf = static_cast<const char*>(std::memchr(begin, '\n', static_cast<std::size_t>(egptr() - begin)));
      const char* stop = lf ? lf : egptr();
      if (const void* cr = std::memchr(begin, '\r', static_cast<std::size_t>(stop - begin))) stop = static_cast<const char*>(cr);
      if (line.size() + static_cast<std::size_t>(stop - begin) > max) return LineEnd::too_long;
      line.append(begin, stop);
      setg(eback(), const_cast<char*>(stop), egptr());
      if (stop == egptr()) continue;
      const bool cr = *stop == '\r';
      gbump(1);
      // CRLF is one line end, even when the LF comes in the next read.
      if (cr && !traits_type::eq_int_type(sgetc(), traits_type::eof()) && *gptr() == '\n') gbump(1);
      return LineEnd::found;
    }
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (kept_) {  // a stream's next piece (only read: a streambuf's get area is char*)
      while (next_piece_ < kept_->size() && (*kept_)[next_piece_].empty()) ++next_piece_;
      if (next_piece_ == kept_->size()) return traits_type::eof();
      const std::string& piece = (*kept_)[next_piece_++];
      char* begin = const_cast<char*>(piece.data());
      setg(begin, begin, begin + piece.size());
      return traits_type::to_int_type(*gptr());
    }
    if (read_errno_ != 0) return traits_type::eof();
    ssize_t n;
    do {
      n = ::read(fd_, data_, sizeof data_);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      if (n < 0) read_errno_ = errno;
      return traits_type::eof();
    }
    setg(data_, data_, data_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  int fd_ = -1;
  std::shared_ptr<const Pieces> kept_;
  std::size_t next_piece_ = 0;
  int read_errno_ = 0;
  char data_[1 << 16];
};

InputFile::InputFile(std::string path, Limit limit) : path_(std::move(path)) {
  Fd fd{::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (fd.fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw InputError(path_, "", "file not found");
    throw InputError(path_, "", std::string("cannot open: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0 || S_ISDIR(st.st_mode)) throw InputError(path_, "", "is a directory, not a file");
  if (!S_ISREG(st.st_mode)) {
    buf_ = std::make_unique<Buffer>(stream_contents(fd.fd, path_, S_ISFIFO(st.st_mode)));
  } else {
    if (limit == Limit::always && static_cast<std::uint64_t>(st.st_size) > input_byte_limit()) {
      throw InputError(path_, "", byte_size_text(static_cast<std::uint64_t>(st.st_size)) + ", more than " + the_limit());
    }
    ::fcntl(fd.fd, F_SETFL, ::fcntl(fd.fd, F_GETFL) & ~O_NONBLOCK);
    buf_ = std::make_unique<Buffer>(fd.fd);
    fd.fd = -1;  // the buffer closes it
  }
  in_ = std::make_unique<std::istream>(buf_.get());
}

InputFile::~InputFile() = default;

void InputFile::check_read() const {
  if (buf_->read_errno() != 0) throw InputError(path_, "", std::string("read error: ") + std::strerror(buf_->read_errno()));
}

bool InputFile::getline(std::string& line) {
  line.clear();
  const Buffer::LineEnd end = buf_->read_line(line, kMaxLineBytes);
  if (end == Buffer::LineEnd::too_long) {
    throw InputError(path_, "line " + std::to_string(line_ + 1), "longer than " + byte_size_text(kMaxLineBytes) + " (is it a text file?)");
  }
  if (end == Buffer::LineEnd::none) {
    check_read();
    if (line.empty()) return false;
  }
  ++line_;
  return true;
}

}  // namespace servesim
