// Reading an input whatever the path turns out to be. A regular file is read as it is. Anything
// else that can be opened for reading (a FIFO, a pipe such as `<(zcat trace.gz)`, a character
// device such as /dev/zero) is a stream: it is read through a byte limit (input_byte_limit(),
// 1 GiB unless --max-input-bytes says otherwise), so an endless one ends in an error naming the
// limit, and a named FIFO that nothing opens for writing is refused after kFifoWriterWaitS instead
// of blocking forever. A directory, a missing or unreadable path is an InputError naming it.
// Lines end in LF, CRLF or a lone CR (classic-Mac CSV exports); one line is at most kMaxLineBytes.
#pragma once
#include <cstdint>
#include <istream>
#include <memory>
#include <string>

namespace servesim {

inline constexpr std::uint64_t kDefaultInputByteLimit = std::uint64_t{1} << 30;
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
inline constexpr int kFifoWriterWaitS = 5;

// The most bytes read from one stream (and, for whole documents, one file). Process-wide: the
// command line sets it before any input is read (cli/options.cpp, --max-input-bytes).
std::uint64_t input_byte_limit();
void set_input_byte_limit(std::uint64_t bytes);
// "1 GiB", "1.5 MiB", "300 bytes": a size as messages write it.
std::string byte_size_text(std::uint64_t bytes);

class InputFile {
 public:
  // Which inputs the byte limit applies to: streams only (a regular file streamed row by row may
  // be any size), or every input (a document held in memory whole: a regular file past the limit
  // is refused before it is read).
  enum class Limit { streams, always };
  // Opens `path`; InputError naming it when it is missing, a directory, unreadable, a FIFO with
  // no writer, or (Limit::always) a regular file over the limit.
  explicit InputFile(std::string path, Limit limit = Limit::streams);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The bytes, up to the limit (then end of file: call check_limit()).
  std::istream& stream() { return *in_; }
  // The next line without its line end; false at the end of the input. InputError naming the
  // line past kMaxLineBytes, on a read error, or past the byte limit.
  bool getline(std::string& line);
  // Lines returned so far (the number of the last one).
  std::int64_t line() const { return line_; }
  // InputError naming the limit and the flag that raises it when reading stopped at the limit,
  // or naming the read error when one stopped it.
  void check_read() const;
  const std::string& path() const { return path_; }

 private:
  class Buffer;
  std::string path_;
  std::unique_ptr<Buffer> buf_;
  std::unique_ptr<std::istream> in_;
  std::int64_t line_ = 0;
};

}  // namespace servesim
