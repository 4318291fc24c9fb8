// OutputFile: a buffered file written to PATH.tmp and renamed to PATH on commit(), so a reader
// never sees a half-written output; without commit() the temporary is removed. A PATH that exists
// and is not a regular file (/dev/stdout, a pipe, a device) is written in place: renaming over it
// would replace the device. Every failure (open, write, flush, close, rename) names PATH.
#pragma once
#include <cstdio>
#include <string>

#include "sim/core/time.hpp"

namespace servesim {

class OutputFile {
 public:
  // Throws InputError naming `path` when it cannot be created.
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* get() { return file_; }
  void write(const char* s);
  void write(const std::string& s);
  // Flushes, closes and renames into place. Throws InputError when writing failed.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;  // tmp_ empty: written in place
  std::FILE* file_ = nullptr;
};

// Writes `text` to `path` through an OutputFile (creating the parent directories).
void write_file(const std::string& path, const std::string& text);

// Flushes stdout; throws InputError naming stdout when anything written to it was lost (a full
// disk, a closed pipe), so a command whose output did not arrive does not exit 0.
void check_stdout();

// Writes `ns` as decimal seconds with all nine digits ("12.000345678"), exactly, for CSV cells.
int format_ns_as_seconds(char* buf, std::size_t size, TimeNs ns);
// Writes `ns` as microseconds with three decimals ("12000345.678"), the trace format's unit.
int format_ns_as_us(char* buf, std::size_t size, TimeNs ns);

}  // namespace servesim
