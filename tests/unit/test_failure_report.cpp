// How a failed command reports itself (cli/failure.hpp): bad input is one line naming the file
// and key, exit 2; anything else, a crash included, is one line saying it is a bug, with the
// version, the hash of the scenario and the command, exit 70. The bug path is driven here with real exceptions thrown into
// report_failure, the function dispatch calls from its catch block.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include <doctest/doctest.h>

#include "sim/cli/failure.hpp"
#include "sim/core/rng.hpp"
#include "tests/support.hpp"

using namespace servesim;

namespace {
// The exit code and stderr of report_failure for an exception thrown by `fail`. (A struct, not
// a structured binding: clang 14 cannot capture those in doctest's assertion lambdas.)
struct Failure {
  int code = -1;
  std::string err;
};
template <class F>
Failure failure_of(F fail) {
  std::ostringstream err;
  Failure f;
  try {
    fail();
  } catch (...) {
    f.code = cli::report_failure(err);
  }
  f.err = err.str();
  return f;
}
std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }
std::string hex16(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}
}  // namespace

TEST_CASE("the scenario hash is FNV-1a 64-bit, which a maintainer can recompute") {
  // Published test vectors of FNV-1a 64.
  CHECK(stable_hash("") == 0xcbf29ce484222325ull);
  CHECK(stable_hash("a") == 0xaf63dc4c8601ec8cull);
  CHECK(stable_hash("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("bad input: one line naming file and key, exit 2") {
  const Failure f = failure_of([] { throw InputError("s.json", "workload.num_requests", "must be >= 0, got -1"); });
  CHECK(f.code == kExitBadInput);
  CHECK(f.err == "servesim: error: s.json: workload.num_requests: must be >= 0, got -1\n");
}

TEST_CASE("an internal failure says it is a bug, with the version and the scenario hash, exit 70") {
  // The first scenario a process loads is the one a bug report hashes; later ones do not replace it.
  const Scenario s = test::scenario_from(test::base_scenario());
  cli::remember_scenario(s);
  const auto remembered = cli::remembered_scenario_hash();
  REQUIRE(remembered.has_value());
  nlohmann::json other = test::base_scenario();
  other["seed"] = 8;
  cli::remember_scenario(test::scenario_from(other));
  CHECK(cli::remembered_scenario_hash() == remembered);

  const Failure f = failure_of([] { throw std::logic_error("simulation invariant: time went backwards"); });
  const std::string& err = f.err;
  CHECK(f.code == kExitInternal);
  CHECK(kExitInternal != kExitOk);
  CHECK(kExitInternal != kExitBadInput);
  CHECK(lines(err) == 1);
  CHECK(err.find("a bug in servesim") != std::string::npos);
  CHECK(err.find("simulation invariant: time went backwards") != std::string::npos);
  CHECK(err.find("scenario " + hex16(*remembered)) != std::string::npos);
  // The version is the one `servesim version` prints.
  const auto version = test::run_cli("version");
  REQUIRE(version.exit_code == 0);
  const std::string v = version.output.substr(0, version.output.find('\n'));  // "servesim X.Y.Z"
  CHECK(err.find("[" + v + ", ") != std::string::npos);
}

TEST_CASE("the hash is of the resolved scenario: defaults written out, so the same scenario hashes alike") {
  const Scenario s = test::scenario_from(test::base_scenario());
  const std::string line = cli::bug_report_line("x", stable_hash(scenario_to_json(s).dump()));
  nlohmann::json spelled_out = test::base_scenario();
  spelled_out["engine"]["preemption_mode"] = "recompute";  // the default, written out
  CHECK(line == cli::bug_report_line("x", stable_hash(scenario_to_json(test::scenario_from(spelled_out)).dump())));
  nlohmann::json changed = test::base_scenario();
  changed["engine"]["max_num_seqs"] = 65;
  CHECK(line != cli::bug_report_line("x", stable_hash(scenario_to_json(test::scenario_from(changed)).dump())));
  CHECK(cli::bug_report_line("x", std::nullopt).find("no scenario]") != std::string::npos);
}

TEST_CASE("a bug message stays one line, and a non-standard exception is a bug too") {
  const Failure multi_line = failure_of([] { throw std::runtime_error("first\nsecond"); });
  CHECK(multi_line.code == kExitInternal);
  CHECK(lines(multi_line.err) == 1);
  CHECK(multi_line.err.find("first second") != std::string::npos);
  const Failure not_std = failure_of([] { throw 42; });
  CHECK(not_std.code == kExitInternal);
  CHECK(not_std.err.find("a bug in servesim") != std::string::npos);
}

TEST_CASE("a crash is a bug: the bug line naming the signal and the command, exit 70, not death by the signal") {
  int err_pipe[2];
  REQUIRE(::pipe(err_pipe) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(err_pipe[1], STDERR_FILENO);
    cli::remember_command({"run", "s.json", "--out", "my out"});
    cli::install_crash_handlers();
    ::raise(SIGBUS);  // what a truncated, mapped file gives
    ::_exit(0);
  }
  ::close(err_pipe[1]);
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = ::read(err_pipe[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  ::close(err_pipe[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == kExitInternal);
  CHECK(lines(err) == 1);
  CHECK(err.find("a bug in servesim") != std::string::npos);
  CHECK(err.find("signal SIGBUS [servesim ") != std::string::npos);
  CHECK(err.find("; command: servesim run s.json --out \"my out\"\n") != std::string::npos);
}
