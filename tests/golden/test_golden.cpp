// Golden reports: small scenarios run through the CLI, report.json compared with tests/golden/
// byte for byte apart from wall-clock fields. Regenerate on purpose with SERVESIM_UPDATE_GOLDEN=1.
// Also proves determinism: the same scenario and seed give the same report twice.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "../support.hpp"
#include "sim/io/json_reader.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

nlohmann::json run_report(const std::string& scenario, const std::string& out_dir, const std::string& extra = "") {
  const auto r = run_cli("run " + scenario + " --quiet --out " + out_dir + " " + extra);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return load_json_file(out_dir + "/report.json");
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("same scenario and seed: byte-identical report.json") {
  // The machine's wall time is printed, not written (it made every rerun's report differ).
  const std::string scenario = std::string(servesim::test::test_data_dir()) + "/golden/small.json";
  const auto a = run_report(scenario, "/tmp/servesim_det_a");
  run_report(scenario, "/tmp/servesim_det_b");
  CHECK(file_bytes("/tmp/servesim_det_a/report.json") == file_bytes("/tmp/servesim_det_b/report.json"));
  CHECK(!a["sim"].contains("wall_s"));
  const auto c = run_report(scenario, "/tmp/servesim_det_c", "--seed 99");
  CHECK(a.dump() != c.dump());  // and the seed matters
}

TEST_CASE("golden report: tests/golden/small.json") {
  const std::string dir = servesim::test::test_data_dir();
  const auto report = run_report(dir + "/golden/small.json", "/tmp/servesim_golden");
  const std::string golden_path = dir + "/golden/small.report.json";
  if (std::getenv("SERVESIM_UPDATE_GOLDEN")) {
    std::ofstream(golden_path) << report.dump(2) << "\n";
    MESSAGE("updated " << golden_path);
  }
  const auto golden = load_json_file(golden_path);
  // Compare section by section so a failure says where the drift is.
  for (const auto& item : golden.items()) {  // not a structured binding: INFO captures in a lambda
    const std::string& key = item.key();
    INFO("report section: " << key);
    CHECK(report.contains(key));
    if (report.contains(key)) CHECK(report[key].dump(2) == item.value().dump(2));
  }
  CHECK(report.size() == golden.size());
}
