// Reads scenario keys through their declarations (config/scenario_keys): the type and physical
// range a value must have come from the declaration, never from the call, and an unknown key is
// reported with the close declared ones. Reading a key that is not declared is a bug
// (std::logic_error), so every key the parser reads is in the reference.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sim/config/scenario_keys.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

class KeyReader {
 public:
  // `schema`: the declared path of this object ("engine.scheduler", "<length>", "" at the top).
  KeyReader(JsonReader reader, std::string schema);

  bool has(const std::string& key) const { return r_.has(key); }
  std::int64_t integer(const std::string& key);  // required
  std::int64_t integer(const std::string& key, std::int64_t fallback);
  double number(const std::string& key);  // required
  double number(const std::string& key, double fallback);
  bool boolean(const std::string& key, bool fallback);
  // Checked against the declared choices, if any.
  std::string string(const std::string& key);
  std::string string(const std::string& key, const std::string& fallback);
  // A sub-object, declared at schema.key, or under `schema` when it is given ("<length>").
  KeyReader object(const std::string& key, const std::string& schema = "");
  std::optional<KeyReader> object_if(const std::string& key, const std::string& schema = "");
  // The value itself (arrays), its type and range left to the caller; the key must be declared.
  const nlohmann::json& raw(const std::string& key);
  // Element i of the declared array `key`, as an object whose keys are declared at key[].
  KeyReader element(const nlohmann::json& value, const std::string& key, std::size_t i) const;
  void accept(const std::string& key) { r_.accept(key); }
  // InputError for the first key never read: unknown (with close declared names), or declared
  // for another impl. `readers`, when given: the impls that read a declared key (its path) as
  // their own, "a, b" or "" (a registry's Registry::readers_of).
  void finish(const std::function<std::string(const std::string& path)>& readers = {}) const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const { r_.fail(key, message); }
  std::string path_of(const std::string& key) const { return r_.path_of(key); }
  const std::string& file() const { return r_.file(); }
  const std::string& schema() const { return schema_; }
  // The declaration of `key` in this object (std::logic_error if there is none).
  const ScenarioKey& declared(const std::string& key) const;

 private:
  double in_range(const std::string& key, double v, const ScenarioKey& d) const;
  JsonReader r_;
  std::string schema_;
};

}  // namespace servesim
