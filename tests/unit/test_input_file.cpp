// core/input_file: line ends (LF, CRLF, lone CR, and a CRLF split by a read), the line and byte
// limits, and the errors for a path that is not a file. (Streams, FIFOs and /dev/zero through
// the command line: tests/hostile, stream_*.)
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"

namespace servesim {

namespace {
std::string write_temp(const std::string& name, const std::string& bytes) {
  const auto path = std::filesystem::temp_directory_path() / ("servesim_input_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

std::vector<std::string> lines_of(const std::string& path) {
  InputFile in(path);
  std::vector<std::string> lines;
  for (std::string line; in.getline(line);) lines.push_back(line);
  CHECK(in.line() == static_cast<std::int64_t>(lines.size()));
  return lines;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("input_file: LF, CRLF and lone CR each end a line; the last line may lack its end") {
  const std::string path = write_temp("ends", "a\nb\r\nc\rd\r\r\ne");
  CHECK(lines_of(path) == std::vector<std::string>{"a", "b", "c", "d", "", "e"});
  std::filesystem::remove(path);
}

TEST_CASE("input_file: a CRLF split between two reads of 64 KiB is one line end") {
  const std::string first(65535, 'x');  // the CR is the read's last byte, the LF the next read's first
  const std::string path = write_temp("split", first + "\r\ny\n");
  CHECK(lines_of(path) == std::vector<std::string>{first, "y"});
  std::filesystem::remove(path);
}

TEST_CASE("input_file: a line past 1 MiB names the file and the line") {
  const std::string path = write_temp("long", "ok\n" + std::string(kMaxLineBytes + 1, 'x') + "\n");
  const std::string e = error_of([&] { lines_of(path); });
  CHECK(e.find("line 2: longer than 1 MiB (is it a text file?)") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("input_file: a document over the limit is refused before reading; a directory and a missing path name the path") {
  const std::string path = write_temp("doc", std::string(2048, ' '));
  const std::uint64_t before = input_byte_limit();
  set_input_byte_limit(1024);
  const std::string e = error_of([&] { InputFile f(path, InputFile::Limit::always); });
  set_input_byte_limit(before);
  CHECK(e == path + ": 2 KiB, more than the 1 KiB input limit (raise it with --max-input-bytes)");
  CHECK(error_of([&] { InputFile f(path); }).empty());  // streamed row by row: any size
  std::filesystem::remove(path);
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK(error_of([&] { InputFile f(dir); }) == dir + ": is a directory, not a file");
  CHECK(error_of([&] { InputFile f(dir + "/servesim-no-such-file"); }) == dir + "/servesim-no-such-file: file not found");
}

TEST_CASE("input_error: control bytes in a message are written as \\xNN (a NUL no longer cuts it short)") {
  const char raw[] = "not an integer: '10\0'\x1b[31m";
  const InputError e("t.csv", "line 2", std::string(raw, sizeof raw - 1));
  CHECK(std::string(e.what()) == "t.csv: line 2: not an integer: '10\\x00'\\x1b[31m");
}

}  // namespace servesim
