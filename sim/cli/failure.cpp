// See failure.hpp.
#include "sim/cli/failure.hpp"

#include <cstdio>
#include <exception>
#include <mutex>
#include <ostream>

#include "sim/core/error.hpp"
#include "sim/core/rng.hpp"
#include "sim/io/scenario_io.hpp"

namespace servesim::cli {

namespace {
std::mutex remembered_mutex;
std::optional<std::uint64_t> remembered;  // under remembered_mutex
}  // namespace

void remember_scenario(const Scenario& s) {
  {
    const std::lock_guard<std::mutex> lock(remembered_mutex);
    if (remembered) return;
  }
  // Hashed outside the lock: commands load their first scenario before running any in parallel.
  const std::uint64_t hash = stable_hash(scenario_to_json(s).dump());
  const std::lock_guard<std::mutex> lock(remembered_mutex);
  if (!remembered) remembered = hash;
}

std::optional<std::uint64_t> remembered_scenario_hash() {
  const std::lock_guard<std::mutex> lock(remembered_mutex);
  return remembered;
}

std::string bug_report_line(const std::string& what, std::optional<std::uint64_t> scenario_hash) {
  char scenario[40] = "no scenario";
  if (scenario_hash) std::snprintf(scenario, sizeof scenario, "scenario %016llx", static_cast<unsigned long long>(*scenario_hash));
  return "servesim: internal error (a bug in servesim, not in your input; please report this line): " + what + " [servesim " +
         SERVESIM_VERSION + ", " + scenario + "]";
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
