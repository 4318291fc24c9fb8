// Every numeric flag of the command line has a declared range (cli/options.hpp's RangedFlag: the
// help shows it, reading checks it): no command adds a numeric cxxopts value of its own, and the
// declared ranges are the ones enforced.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "../support.hpp"

using namespace servesim::test;

TEST_CASE("cli: no numeric flag is added without its range (RangedFlag)") {
  const std::filesystem::path cli = std::filesystem::path(servesim::test::test_data_dir()) / ".." / "sim" / "cli";
  const std::regex numeric(R"(cxxopts::value<\s*(int|long|long long|unsigned|double|float|std::u?int\d+_t|std::size_t)\s*>)");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cli)) {
    const std::string name = entry.path().filename().string();
    if (name == "options.cpp") continue;  // RangedFlag::add itself
    ++files;
    std::ifstream in(entry.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      INFO(name << ":" << line_no << ": " << line);
      CHECK(!std::regex_search(line, numeric));
    }
  }
  CHECK(files > 20);
}

TEST_CASE("cli: a numeric flag outside its declared range exits 2 naming the command, the flag and the range") {
  const struct {
    std::string args, want;
  } cases[] = {
      {"contention --model llama-3-8b --hw h100-sxm --batch 10000000000", "servesim contention: --batch: must be in [1, 1048576], got 1e+10"},
      {"step --model llama-3-8b --hw h100-sxm --batch 0 --context 16", "servesim step: --batch: must be in [1, 1048576], got 0"},
      {"plan --model llama-3-8b --rate 1e308 --slo ttft=1s", "servesim plan: --rate: must be in (0, 1000000000], got 1e+308"},
      {"op gemm --m 1 --n 1 --k 10000000 --hw h100-sxm", "servesim op gemm: --k: must be in [1, 1048576], got 10000000"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    INFO(c.args << " -> " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output == "servesim: error: " + c.want + "\n");
  }
  const auto help = run_cli("contention --help");
  CHECK(help.output.find("decode batch per instance ([1, 1048576])") != std::string::npos);
}
