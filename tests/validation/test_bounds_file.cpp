// data/validation/bounds.json: every validation bound in one file. A bound only tightens; one that
// is looser than an earlier value of its history must say why on that entry ("changed" naming the
// loosening), and each scalar is used by the test the file names.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/validate/bounds.hpp"
#include "sim/validate/independent_set.hpp"
#include "sim/validate/published_set.hpp"

using namespace servesim;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Walks one bound's history (oldest first) up to its current value: each step to a looser value
// needs the earlier entry's "changed" to say it was loosened and why.
void check_history(const nlohmann::json& entry, const std::vector<std::string>& keys, const std::string& name) {
  if (!entry.contains("history")) return;
  const auto& history = entry["history"];
  REQUIRE(history.is_array());
  for (std::size_t i = 0; i < history.size(); ++i) {
    const nlohmann::json& earlier = history[i];
    const nlohmann::json& later = i + 1 < history.size() ? history[i + 1] : entry;
    INFO(name << ", history entry " << i);
    const std::string changed = earlier.value("changed", "");
    CHECK_FALSE(changed.empty());
    for (const std::string& k : keys) {
      REQUIRE(earlier.contains(k));
      if (later[k].get<double>() > earlier[k].get<double>()) {
        INFO(k << " " << earlier[k].get<double>() << " -> " << later[k].get<double>());
        CHECK(changed.find("loosened") != std::string::npos);
      }
    }
  }
}

}  // namespace

TEST_CASE("bounds.json: a looser bound than before says why; the tables validate reads exist") {
  const std::string file = default_bounds_file();
  const nlohmann::json doc = load_json_file(file);
  std::size_t with_history = 0;
  for (const auto& [set, rows] : doc["tables"].items()) {
    for (const auto& row : rows) {
      check_history(row, {"median", "worst"}, set + " " + row["engine"].get<std::string>() + " " + row["phase"].get<std::string>());
      with_history += row.contains("history");
    }
  }
  for (const auto& [id, entry] : doc["scalars"].items()) {
    check_history(entry, {"bound"}, id);
    with_history += entry.contains("history");
  }
  CHECK(with_history >= 4);  // the four loosening commits of 2026-12-06 at least
  CHECK(published_bounds().size() == doc["tables"]["published"].size());
  CHECK(!validation_bounds("h200-sxm").empty());
  CHECK(!validation_bounds("h100-sxm").empty());
  CHECK_THROWS_AS(validation_bound("no/such/bound"), InputError);
}

TEST_CASE("bounds.json: every scalar is used by its test, and every bound a test asks for is in the file") {
  const std::filesystem::path repo = std::filesystem::path(default_bounds_file()).parent_path().parent_path().parent_path();
  const nlohmann::json doc = load_json_file(default_bounds_file());
  std::set<std::string> in_file;
  for (const auto& item : doc["scalars"].items()) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in INFO's lambda.
    const std::string id = item.key();
    const nlohmann::json& entry = item.value();
    in_file.insert(id);
    const std::string test = entry.value("test", "");
    INFO(id << " in " << test);
    REQUIRE_FALSE(test.empty());
    CHECK(read_text(repo / test).find("\"" + id + "\"") != std::string::npos);
  }
  const std::regex call(R"re(validation_bound\("([^"]+)"\))re");
  std::size_t calls = 0;
  for (const auto& f : std::filesystem::directory_iterator(repo / "tests" / "validation")) {
    if (f.path().extension() != ".cpp" || f.path().filename() == "test_bounds_file.cpp") continue;
    const std::string text = read_text(f.path());
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
      INFO(f.path().filename().string());
      CHECK(in_file.count((*it)[1].str()) == 1);
      ++calls;
    }
  }
  CHECK(calls >= in_file.size());
}
