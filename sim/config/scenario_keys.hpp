// Every key a scenario file may hold, declared once: name, type, default, physical range, help.
// The parser (io/scenario_io) reads each key through its declaration (type and range checks,
// unknown-key suggestions), `servesim list policies` prints the scheduler's keys from it, and
// `servesim list keys` writes the reference (docs/scenario-keys.md; a test fails when it is stale).
// A default comes from the config struct's initializer (config/scenario.hpp) wherever it is a
// plain value, so it is written once.
#pragma once
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/core/registry.hpp"
#include "sim/core/time.hpp"

namespace servesim {

enum class KeyType { integer, number, boolean, string, object, array };
const char* key_type_name(KeyType t);
// A number as messages and the reference print it: integers below 1e10 in full, others to 6
// significant digits.
std::string key_number_text(double v);

// The physical values a numeric key may take.
struct KeyRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;  // open ends: (0, 1)
  bool contains(double v) const;
  std::string text() const;  // "[0, 3.2e+07]", "(0, 1)"
};

// Time keys may reach kMaxSimulatedTimeS (core/time.hpp, about a year); counts stay within what
// fits in memory.
inline constexpr double kMaxTokens = 1 << 24;  // request lengths are int32 token counts

// Scheduler keys name the SchedulerConfig field they fill: the parser reads and echoes them
// generically, so a new scheduler setting is its field, one declaration and its use.
using SchedulerField = std::variant<std::monostate, std::int64_t SchedulerConfig::*, double SchedulerConfig::*>;

struct ScenarioKey {
  // Where the key lives. Sub-objects that appear in several places are declared once under a
  // schema name in angle brackets: <length> (prompt_tokens / output_tokens), <slo>, <pool>.
  std::string path;
  KeyType type;
  std::string default_text;  // as documented: "8", "none", "required", "model maximum"
  KeyRange range;            // integer and number keys
  std::string choices;       // string keys with fixed values, "|"-separated
  std::string help;
  std::string when;          // read only when the enclosing object's impl is this ("" = always)
  SchedulerField scheduler_field;
};

// Sub-objects declared once and where they appear.
struct KeySchema {
  std::string name;    // "<length>"
  std::string mounts;  // "workload.prompt_tokens, workload.output_tokens, ..."
  std::string help;
};

const std::vector<ScenarioKey>& scenario_keys();
const std::vector<KeySchema>& key_schemas();
// The declaration of `path` (schema paths for sub-objects, "[]" for array elements), or null.
const ScenarioKey* find_scenario_key(const std::string& path);
// The declaration of a key as `--set` names it, a dotted path: a key of a sub-object declared
// under a schema through the place it is mounted ("workload.prompt_tokens.mean_tokens" ->
// "<length>.mean_tokens"); null when undeclared.
const ScenarioKey* find_set_key(const std::string& dotted_path);
// The keys directly inside `object_path` ("engine.scheduler"), in declaration order.
std::vector<const ScenarioKey*> keys_in(const std::string& object_path);
// Declared key `path` as a registry parameter (`servesim list`): its path, type or choices,
// default and help. std::logic_error when `path` is not declared.
RegistryParam key_param(const std::string& path);
// What the registries above this layer (core/registry.hpp) say about keys, for the reference.
struct RegisteredKeys {
  // The names a key accepts ("engine.scheduler.impl" -> the policies), listed as its values.
  std::map<std::string, std::vector<std::string>> values;
  // The impls that read a key as their own ("engine.scheduler.batch_size" -> the policy whose setting it is).
  std::map<std::string, std::vector<std::string>> readers;
};
// docs/scenario-keys.md.
std::string scenario_keys_markdown(const RegisteredKeys& registered);

}  // namespace servesim
