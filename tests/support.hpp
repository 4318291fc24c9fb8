// Helpers shared by the test suites: build scenarios in memory, run the CLI binary and capture
// its exit code and output.
#pragma once
#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/io/scenario_io.hpp"
#include "paths.hpp"

namespace servesim::test {

// A small valid scenario; tests change what they need. Its engine is `generic` (servesim's own
// defaults, the default until vLLM V1): the unit tests check mechanisms, not an engine's numbers.
inline nlohmann::json base_scenario() {
  return nlohmann::json::parse(R"({
    "name": "test", "seed": 7, "model": "llama-2-7b", "hardware": "a100-80gb-sxm", "dtype": "fp16",
    "engine": {"profile": "generic", "max_num_seqs": 64, "block_size": 16, "gpu_memory_utilization": 0.9},
    "workload": {
      "num_requests": 50,
      "arrival": {"impl": "poisson", "rate_per_s": 2.0},
      "prompt_tokens": {"impl": "fixed", "value_tokens": 128},
      "output_tokens": {"impl": "fixed", "value_tokens": 32}
    }})");
}

inline Scenario scenario_from(const nlohmann::json& doc) { return parse_scenario(doc, "test.json"); }

// The one-line InputError a scenario document raises, or "" when it parses.
inline std::string parse_error(const nlohmann::json& doc) {
  try {
    scenario_from(doc);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the servesim binary with `args` (a shell-quoted string).
inline CommandResult run_cli(const std::string& args) {
  CommandResult r;
  const std::string cmd = std::string(servesim::test::servesim_binary()) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe)) r.output += buf.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string("/tmp/servesim_test_") + std::to_string(::getpid()) + "_" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

}  // namespace servesim::test
