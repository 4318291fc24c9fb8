// Strict reading of JSON input: every key is read with its type and range checked, unknown keys
// are errors, and every error names the file and the JSON path ("x.json: engine.block_size: ...").
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace servesim {

// Reads a whole JSON file or stream (core/input_file.hpp: the byte limit, FIFOs); InputError
// (naming the file) when missing, not readable, past the limit or malformed.
nlohmann::json load_json_file(const std::string& path);

class JsonReader {
 public:
  JsonReader(const nlohmann::json& object, std::string file, std::string path);

  bool has(const std::string& key) const;
  const nlohmann::json& raw(const std::string& key);  // marks the key read; throws if missing

  double number(const std::string& key);
  // Positive (> 0) finite number.
  double positive(const std::string& key);
  // Number within [lo, hi].
  double number_in(const std::string& key, double lo, double hi);
  double number_in_or(const std::string& key, double lo, double hi, double fallback);
  std::int64_t integer(const std::string& key);
  std::int64_t positive_integer(const std::string& key);
  std::int64_t positive_integer_or(const std::string& key, std::int64_t fallback);
  // Integer within [lo, hi]: sizes get an upper bound so arithmetic on them cannot overflow.
  std::int64_t integer_in(const std::string& key, std::int64_t lo, std::int64_t hi);
  std::int64_t integer_in_or(const std::string& key, std::int64_t lo, std::int64_t hi, std::int64_t fallback);
  std::string string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& fallback);
  bool boolean(const std::string& key);
  bool boolean_or(const std::string& key, bool fallback);
  JsonReader object(const std::string& key);
  std::optional<JsonReader> object_if(const std::string& key);

  // Marks keys that are read elsewhere (or deliberately ignored) as known.
  void accept(const std::string& key) { read_.insert(key); }
  // Throws InputError for the first key that was never read.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  std::string path_of(const std::string& key) const;
  const std::string& file() const { return file_; }
  const nlohmann::json& json() const { return obj_; }
  bool was_read(const std::string& key) const { return read_.count(key) > 0; }
  const std::string& path() const { return path_; }

 private:
  const nlohmann::json& need(const std::string& key);
  const nlohmann::json& obj_;
  std::string file_;
  std::string path_;
  std::set<std::string> read_;
};

// Applies a `--set a.b.c=value` override to a scenario document. The value is read as the key's
// declared type (config/scenario_keys): the text as written for a string key, JSON for any
// other (InputError naming the key when it is not JSON); an undeclared key's value parses as
// JSON when it can, else is a string. Intermediate objects are created; a non-object on the way
// is an InputError.
void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& file);

}  // namespace servesim
