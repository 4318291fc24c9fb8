// See key_reader.hpp.
#include "sim/io/key_reader.hpp"

#include <cmath>
#include <stdexcept>

#include "sim/core/suggest.hpp"
#include "sim/core/error.hpp"

namespace servesim {

namespace {
std::string join(const std::string& schema, const std::string& key) { return schema.empty() ? key : schema + "." + key; }
std::string show(double v) { return key_number_text(v); }
}  // namespace

KeyReader::KeyReader(JsonReader reader, std::string schema) : r_(std::move(reader)), schema_(std::move(schema)) {}

const ScenarioKey& KeyReader::declared(const std::string& key) const {
  const ScenarioKey* d = find_scenario_key(join(schema_, key));
  if (!d) throw std::logic_error("scenario key " + join(schema_, key) + " is read but not declared in config/scenario_keys.cpp");
  return *d;
}

double KeyReader::in_range(const std::string& key, double v, const ScenarioKey& d) const {
  if (d.range.contains(v)) return v;
  const KeyRange& r = d.range;
  const bool low = r.lo_open ? v <= r.lo : v < r.lo;
  const std::string bound = low ? std::string(r.lo_open ? "> " : ">= ") + show(r.lo) : std::string(r.hi_open ? "< " : "<= ") + show(r.hi);
  fail(key, "must be " + bound + ", got " + show(v) + " (range " + r.text() + ")");
}

std::int64_t KeyReader::integer(const std::string& key) {
  const ScenarioKey& d = declared(key);
  const std::int64_t v = r_.integer(key);
  in_range(key, static_cast<double>(v), d);
  return v;
}
std::int64_t KeyReader::integer(const std::string& key, std::int64_t fallback) {
  if (!has(key)) {
    declared(key);
    accept(key);
    return fallback;
  }
  return integer(key);
}

double KeyReader::number(const std::string& key) {
  const ScenarioKey& d = declared(key);
  return in_range(key, r_.number(key), d);
}
double KeyReader::number(const std::string& key, double fallback) {
  if (!has(key)) {
    declared(key);
    accept(key);
    return fallback;
  }
  return number(key);
}

bool KeyReader::boolean(const std::string& key, bool fallback) {
  declared(key);
  return r_.boolean_or(key, fallback);
}

std::string KeyReader::string(const std::string& key) {
  const ScenarioKey& d = declared(key);
  const std::string v = r_.string(key);
  if (!d.choices.empty()) {
    std::string options = "|" + d.choices + "|";
    if (options.find("|" + v + "|") == std::string::npos) {
      std::string listed;
      for (const char c : d.choices) listed += c == '|' ? std::string(", ") : std::string(1, c);
      fail(key, "must be one of " + listed + ", got '" + v + "'");
    }
  }
  return v;
}
std::string KeyReader::string(const std::string& key, const std::string& fallback) {
  if (!has(key)) {
    declared(key);
    accept(key);
    return fallback;
  }
  return string(key);
}

KeyReader KeyReader::object(const std::string& key, const std::string& schema) {
  declared(key);
  return KeyReader(r_.object(key), schema.empty() ? join(schema_, key) : schema);
}

std::optional<KeyReader> KeyReader::object_if(const std::string& key, const std::string& schema) {
  if (!has(key)) {
    declared(key);
    accept(key);
    return std::nullopt;
  }
  return object(key, schema);
}

const nlohmann::json& KeyReader::raw(const std::string& key) {
  declared(key);
  return r_.raw(key);
}

KeyReader KeyReader::element(const nlohmann::json& value, const std::string& key, std::size_t i) const {
  declared(key);
  return KeyReader(JsonReader(value, file(), path_of(key) + "[" + std::to_string(i) + "]"), join(schema_, key) + "[]");
}

void KeyReader::finish(const std::function<std::string(const std::string& path)>& readers) const {
  try {
    r_.finish();
  } catch (const InputError&) {
    // Say more than "unknown key": which key, declared for which impl, or what is close.
    for (const auto& [key, value] : r_.json().items()) {
      if (r_.was_read(key)) continue;
      if (const ScenarioKey* d = find_scenario_key(join(schema_, key))) {
        std::string when;
        for (const char c : d->when) when += c == '|' ? std::string(", ") : std::string(1, c);
        if (when.empty() && readers) when = readers(d->path);
        if (!when.empty()) fail(key, "only read with impl " + when);
      }
      std::vector<std::string> names;
      for (const ScenarioKey* k : keys_in(schema_)) names.push_back(k->path.substr(schema_.empty() ? 0 : schema_.size() + 1));
      fail(key, "unknown key" + did_you_mean(key, names));
    }
    throw;
  }
}

}  // namespace servesim
