// See failure.hpp.
#include "sim/cli/failure.hpp"

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <ostream>

#include "sim/cli/options.hpp"

#include "sim/core/error.hpp"
#include "sim/core/rng.hpp"
#include "sim/io/scenario_io.hpp"

namespace servesim::cli {

namespace {
std::mutex remembered_mutex;
std::optional<std::uint64_t> remembered;  // under remembered_mutex
std::string command;                      // "servesim run s.json ...", set once before any thread starts

// The crash line in two halves around the signal's name, written by the handler with write(2).
char crash_head[512], crash_tail[4096];

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "signal SIGSEGV";
    case SIGBUS: return "signal SIGBUS";
    case SIGFPE: return "signal SIGFPE";
    case SIGILL: return "signal SIGILL";
    case SIGABRT: return "signal SIGABRT";
    default: return "a signal";
  }
}

void write_all(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

extern "C" void on_crash(int sig) {
  write_all(crash_head);
  write_all(signal_name(sig));
  write_all(crash_tail);
  ::_exit(kExitInternal);
}

// Writes the crash line's halves (again once a scenario is remembered, for its hash).
void prepare_crash_line(std::optional<std::uint64_t> scenario_hash) {
  const std::string line = bug_report_line("\x01", scenario_hash);
  const std::size_t cut = line.find('\x01');
  std::snprintf(crash_head, sizeof crash_head, "%s", line.substr(0, cut).c_str());
  std::snprintf(crash_tail, sizeof crash_tail, "%s\n", line.substr(cut + 1).c_str());
}
}  // namespace

void remember_command(const std::vector<std::string>& args) { command = "servesim " + join_args(args); }

void install_crash_handlers() {
  prepare_crash_line(remembered_scenario_hash());
  // The handler runs on its own stack, so a stack overflow (SIGSEGV) still reports.
  static char alt_stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

void remember_scenario(const Scenario& s) {
  {
    const std::lock_guard<std::mutex> lock(remembered_mutex);
    if (remembered) return;
  }
  // Hashed outside the lock: commands load their first scenario before running any in parallel.
  const std::uint64_t hash = stable_hash(scenario_to_json(s).dump());
  const std::lock_guard<std::mutex> lock(remembered_mutex);
  if (!remembered) {
    remembered = hash;
    prepare_crash_line(hash);
  }
}

std::optional<std::uint64_t> remembered_scenario_hash() {
  const std::lock_guard<std::mutex> lock(remembered_mutex);
  return remembered;
}

std::string bug_report_line(const std::string& what, std::optional<std::uint64_t> scenario_hash) {
  char scenario[40] = "no scenario";
  if (scenario_hash) std::snprintf(scenario, sizeof scenario, "scenario %016llx", static_cast<unsigned long long>(*scenario_hash));
  return "servesim: internal error (a bug in servesim, not in your input; please report this line): " + what + " [servesim " +
         SERVESIM_VERSION + ", " + scenario + "]" + (command.empty() ? "" : "; command: " + command);
}

int report_failure(std::ostream& err) {
  try {
    throw;
  } catch (const InputError& e) {
    err << "servesim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::string what = e.what();
    for (char& c : what) {
      if (c == '\n' || c == '\r') c = ' ';  // one line
    }
    err << bug_report_line(what, remembered_scenario_hash()) << "\n";
  } catch (...) {
    err << bug_report_line("an exception that is not a std::exception", remembered_scenario_hash()) << "\n";
  }
  return kExitInternal;
}

}  // namespace servesim::cli
