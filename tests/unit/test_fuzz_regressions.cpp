// Every file in the fuzz seed corpus (fuzz/corpus/<target>/) and every input a fuzzer once
// crashed on (tests/fuzz_regressions/<target>-*.json) goes through its parser here: the outcome
// must be a value or an InputError, never another exception or a sanitizer report (the ASan
// build of this suite runs in CI).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support.hpp"
#include "sim/core/error.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
namespace fs = std::filesystem;

namespace {

// Returns "" for a value or InputError, else the unexpected error.
std::string outcome(const std::string& target, const fs::path& file) {
  try {
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
  const fs::path root = fs::path(SERVESIM_TEST_DATA_DIR).parent_path();
  for (const std::string target : {"scenario", "hw", "model"}) {
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
  CHECK(all.size() >= 7);
  for (const auto& [target, path] : all) {
    INFO(target << ": " << path.string());
    CHECK(outcome(target, path) == "");
  }
}
