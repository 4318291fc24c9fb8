// Strict JSON reading with file- and path-naming errors.
#include "sim/io/json_reader.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "sim/config/scenario_keys.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"

namespace servesim {

nlohmann::json load_json_file(const std::string& path) {
  InputFile file(path, InputFile::Limit::always);  // held whole in memory: a regular file is checked against the limit too
  try {
    nlohmann::json doc = nlohmann::json::parse(file.stream());
    file.check_read();  // an endless stream of trailing spaces
    return doc;
  } catch (const nlohmann::json::exception& e) {
    file.check_read();  // a read error or the byte limit ended the text, not the writer
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line ..."
    // (out_of_range.406 for a number beyond the double range).
    std::string msg = e.what();
    const auto pos = msg.find("] ");
    if (pos != std::string::npos) msg = msg.substr(pos + 2);
    throw InputError(path, "", "invalid JSON: " + msg);
  }
}

namespace {
const char* type_name(const nlohmann::json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return "null";
}
std::string show(const nlohmann::json& j) {
  std::string s = j.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}
// "an integer 12", "a string \"x\"", "null": the value as a message names it.
std::string described(const nlohmann::json& j) { return j.is_null() ? "null" : type_name(j) + std::string(" ") + show(j); }
std::string show(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

JsonReader::JsonReader(const nlohmann::json& object, std::string file, std::string path)
    : obj_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!obj_.is_object()) {
    throw InputError(file_, path_.empty() ? "(top level)" : path_, std::string("must be an object, got ") + type_name(obj_));
  }
}

std::string JsonReader::path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void JsonReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(file_, path_of(key), message);
}

bool JsonReader::has(const std::string& key) const { return obj_.contains(key); }

const nlohmann::json& JsonReader::need(const std::string& key) {
  read_.insert(key);
  const auto it = obj_.find(key);
  if (it == obj_.end()) fail(key, "missing required key");
  return *it;
}

const nlohmann::json& JsonReader::raw(const std::string& key) { return need(key); }

double JsonReader::number(const std::string& key) {
  const auto& j = need(key);
  if (!j.is_number()) fail(key, std::string("must be a number, got ") + described(j));
  const double v = j.get<double>();
  if (!std::isfinite(v)) fail(key, "must be finite");
  return v;
}

double JsonReader::positive(const std::string& key) {
  const double v = number(key);
  if (!(v > 0.0)) fail(key, "must be > 0, got " + show(v));
  return v;
}

double JsonReader::number_in(const std::string& key, double lo, double hi) {
  const double v = number(key);
  if (v < lo || v > hi) fail(key, "must be in [" + show(lo) + ", " + show(hi) + "], got " + show(v));
  return v;
}
double JsonReader::number_in_or(const std::string& key, double lo, double hi, double fallback) {
  return has(key) ? number_in(key, lo, hi) : (accept(key), fallback);
}

std::int64_t JsonReader::integer(const std::string& key) {
  const auto& j = need(key);
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(key, "must be at most 9223372036854775807 (2^63 - 1), got " + show(j));
  }
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<std::int64_t>(v);
  }
  fail(key, std::string("must be an integer, got ") + described(j));
}

std::int64_t JsonReader::positive_integer(const std::string& key) {
  const std::int64_t v = integer(key);
  if (v <= 0) fail(key, "must be > 0, got " + std::to_string(v));
  return v;
}
std::int64_t JsonReader::positive_integer_or(const std::string& key, std::int64_t fallback) {
  return has(key) ? positive_integer(key) : (accept(key), fallback);
}

std::int64_t JsonReader::integer_in(const std::string& key, std::int64_t lo, std::int64_t hi) {
  const std::int64_t v = integer(key);
  if (v < lo || v > hi) fail(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
  return v;
}
std::int64_t JsonReader::integer_in_or(const std::string& key, std::int64_t lo, std::int64_t hi, std::int64_t fallback) {
  return has(key) ? integer_in(key, lo, hi) : (accept(key), fallback);
}

std::string JsonReader::string(const std::string& key) {
  const auto& j = need(key);
  if (!j.is_string()) fail(key, std::string("must be a string, got ") + described(j));
  return j.get<std::string>();
}
std::string JsonReader::string_or(const std::string& key, const std::string& fallback) { return has(key) ? string(key) : (accept(key), fallback); }

bool JsonReader::boolean(const std::string& key) {
  const auto& j = need(key);
  if (!j.is_boolean()) fail(key, std::string("must be true or false, got ") + described(j));
  return j.get<bool>();
}
bool JsonReader::boolean_or(const std::string& key, bool fallback) { return has(key) ? boolean(key) : (accept(key), fallback); }

JsonReader JsonReader::object(const std::string& key) {
  const auto& j = need(key);
  if (!j.is_object()) fail(key, std::string("must be an object, got ") + type_name(j));
  return JsonReader(j, file_, path_of(key));
}

std::optional<JsonReader> JsonReader::object_if(const std::string& key) {
  if (!has(key)) {
    accept(key);
    return std::nullopt;
  }
  return object(key);
}

void JsonReader::finish() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (!read_.count(it.key())) throw InputError(file_, path_of(it.key()), "unknown key");
  }
}

namespace {

// The value of `--set path=text`, read as the key's declared type (config/scenario_keys): a
// string key takes the text as written (a JSON string literal, "x", is unquoted), so a name
// such as 2024 or true stays a name; every other key takes JSON, and text that is not JSON is
// an error saying which type the key wants. An undeclared path keeps the text's own reading
// (JSON when it parses, else a string) for the parser to reject with the close names.
nlohmann::json override_value(const std::string& path, const std::string& text, const std::string& file) {
  const ScenarioKey* key = find_set_key(path);
  nlohmann::json value;
  if (key && key->type == KeyType::string) {  // a name: the text as written, unquoted if it is a JSON string
    try {
      value = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
      return text;  // a bare word, or a number past the double range such as 1e400
    }
    return value.is_string() ? value : nlohmann::json(text);
  }
  try {
    value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range&) {
    // 1e400: valid JSON syntax, but past the double range (nlohmann's out_of_range.406).
    throw InputError(file, path, "--set: the number in '" + text + "' is out of range (beyond +-1.8e308)");
  } catch (const nlohmann::json::parse_error&) {
    if (key) {
      const std::string type = key_type_name(key->type);
      const char* article = type == "integer" || type == "object" || type == "array" ? "an " : "a ";
      throw InputError(file, path, std::string("--set: expected ") + article + type + ", got '" + text + "'");
    }
    return text;  // a bare word for an undeclared key: the parser rejects it with the close names
  }
  return value;
}

}  // namespace

void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& file) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--set " + assignment, "", "expected key.path=value");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  const nlohmann::json value = override_value(path, text, file);
  nlohmann::json* node = &doc;
  std::string walked;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw InputError(file, path, "--set: empty key in path");
    walked = walked.empty() ? key : walked + "." + key;
    if (!node->is_object()) throw InputError(file, walked, "--set: cannot set a key inside a non-object");
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = nlohmann::json::object();
    start = dot + 1;
  }
}

}  // namespace servesim
