// Every file in the fuzz seed corpus (fuzz/corpus/<target>/) and every input a fuzzer once
// crashed on (tests/fuzz_regressions/<target>-*) goes through its parser here: the outcome
// must be a value or an InputError, never another exception or a sanitizer report (the ASan
// build of this suite runs in CI).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "../support.hpp"
#include "sim/core/error.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/trace_reader.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
namespace fs = std::filesystem;

namespace {

// Returns "" for a value or InputError, else the unexpected error.
std::string outcome(const std::string& target, const fs::path& file) {
  try {
    if (target == "trace") {
      // As fuzz_trace reads it: the first byte picks the format, the rest is the file.
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (bytes.empty()) return "";
      const auto& formats = trace_formats();
      const std::string& format = formats[static_cast<unsigned char>(bytes[0]) % formats.size()];
      const fs::path body = fs::temp_directory_path() / ("servesim_trace_" + file.filename().string());
      std::ofstream(body, std::ios::binary) << bytes.substr(1);
      struct Cleanup {
        fs::path path;
        ~Cleanup() {
          std::error_code ec;
          fs::remove(path, ec);
        }
      } cleanup{body};
      TraceReader reader(body.string(), format);
      while (reader.next()) {
      }
      return "";
    }
    const auto doc = load_json_file(file.string());
    if (target == "scenario") {
      const Scenario s = parse_scenario(doc, file.string());
      if (s.workload.num_requests <= 64) simulate(s);
    } else if (target == "hw") {
      parse_hw_profile(doc, file.string());
    } else {
      parse_model(doc, file.string());
    }
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::vector<std::pair<std::string, fs::path>> inputs() {
  std::vector<std::pair<std::string, fs::path>> out;
  const fs::path root = fs::path(servesim::test::test_data_dir()).parent_path();
  for (const std::string target : {"scenario", "hw", "model", "trace"}) {
    for (const auto& e : fs::directory_iterator(root / "fuzz" / "corpus" / target)) out.emplace_back(target, e.path());
  }
  for (const auto& e : fs::directory_iterator(root / "tests" / "fuzz_regressions")) {
    const std::string name = e.path().filename().string();
    out.emplace_back(name.substr(0, name.find('-')), e.path());
  }
  return out;
}

}  // namespace

TEST_CASE("fuzz corpus and regressions: a value or InputError, nothing else") {
  const auto all = inputs();
  CHECK(all.size() >= 11);
  for (const auto& input : all) {  // not a structured binding: INFO captures it in a lambda
    INFO(input.first << ": " << input.second.string());
    CHECK(outcome(input.first, input.second) == "");
  }
}
