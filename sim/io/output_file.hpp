// OutputFile: a buffered file written to a temporary of its own (PATH.tmp.PID.N, created
// exclusively, so two processes writing one PATH never share it) and renamed to PATH on commit(),
// so a reader never sees a half-written output; without commit() the temporary is removed. A PATH
// that exists and is not a regular file (/dev/stdout, a pipe, a device) is written in place:
// renaming over it would replace the device. Every failure (open, write, flush, close, rename)
// names PATH. A set of files that belong together (a run's --out folder) is written whole before
// any is renamed (close() each, then commit() each), in a folder held by an OutputDirLock.
#pragma once
#include <cstdio>
#include <string>

#include <nlohmann/json_fwd.hpp>

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
  bool is_open() const { return file_ != nullptr; }
  void write(const char* s);
  void write(const std::string& s);
  // j as nlohmann's dump(indent) prints it, written to the file as it is printed: a fleet's report
  // is tens of MB of text, and dump() holds all of it as one string first (2,048 replicas: 94 MB
  // of a 208 MB peak).
  void write_json(const nlohmann::json& j, int indent);
  // Flushes and closes, keeping the temporary for commit(). Throws InputError when writing failed.
  void close();
  // close() if still open, then renames into place. Throws InputError when writing failed.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;  // tmp_ empty: written in place
  std::FILE* file_ = nullptr;
};

// An exclusive lock on an output folder (created if missing) for as long as the object lives
// (flock on the folder itself: released when the process ends, however it ends). A second
// process asking for the same folder gets an InputError naming it: two runs into one --out would
// otherwise leave one run's report beside the other's trace.
class OutputDirLock {
 public:
  explicit OutputDirLock(const std::string& dir);
  ~OutputDirLock();
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;

 private:
  int fd_ = -1;
};

// Writes `text` to `path` through an OutputFile (creating the parent directories).
void write_file(const std::string& path, const std::string& text);

// Flushes stdout; throws InputError naming stdout when anything written to it was lost (a full
// disk, a closed pipe), so a command whose output did not arrive does not exit 0.
void check_stdout();

// Writes `ns` as microseconds with three decimals ("12000345.678"), the trace format's unit.
int format_ns_as_us(char* buf, std::size_t size, TimeNs ns);

}  // namespace servesim
