// What servesim prints when a command fails, and its exit code. Bad input is one line naming the
// file and key (exit 2). Anything else is a bug in servesim, never the user's input (exit 70): one
// line that says so, with what a maintainer needs to reproduce it, the version and a hash of the
// scenario.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"

namespace servesim::cli {

// Remembers the first scenario this process loads (the one the command line names, with its
// --set overrides) for a bug report: the FNV-1a 64-bit hash of its resolved JSON, the text of
// report.json's "scenario" object (io/scenario_io.hpp). Thread-safe; later scenarios are ignored.
void remember_scenario(const Scenario& s);
std::optional<std::uint64_t> remembered_scenario_hash();

// Remembers the command line (dispatch's arguments) for a bug report.
void remember_command(const std::vector<std::string>& args);

// "servesim: internal error (a bug in servesim, not in your input; please report this line):
// WHAT [servesim VERSION, scenario HASH]; command: servesim ARGS", HASH as 16 hex digits, "no
// scenario" without one; the command once remember_command has run.
std::string bug_report_line(const std::string& what, std::optional<std::uint64_t> scenario_hash);

// A crash is a bug like any other: SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT print the bug line
// (WHAT: "signal SIGBUS") and exit with kExitInternal instead of dying by the signal (exit 128+N,
// no message). SIGPIPE is ignored: a closed pipe is a failed write, exit 2 naming the output
// (check_stdout), not a signal. Call after remember_command (the line is prepared here, since a
// signal handler may not allocate).
void install_crash_handlers();

// For a catch block: writes the message for the exception in flight to `err` (one line) and
// returns the exit code: kExitBadInput for InputError, kExitInternal for anything else.
int report_failure(std::ostream& err);

}  // namespace servesim::cli
