// One registry per plug-in family (scheduler policies, routers, step cost models, arrival
// processes, length distributions, engine profiles, report metrics): a table with one entry per
// implementation, {name, description, parameters, factory}. The table is the only list of the
// family: `servesim list` prints it, the parser checks names against it (an unknown one gets the
// close names), and the scenario-key reference takes the names and the keys each entry reads from it.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/suggest.hpp"

namespace servesim {

// A parameter an implementation reads, as `servesim list` prints it.
struct RegistryParam {
  std::string name, type, default_value, description;
};

// What every family's entry holds; a family adds its factory (and whatever it needs to build one).
struct RegistryEntry {
  std::string name, description;
  std::vector<RegistryParam> params;
  // Declared scenario keys only this entry reads: the reference marks them "(impl NAME)" and the
  // parser rejects them beside another impl ("only read with impl NAME").
  std::vector<std::string> own_keys;
  bool owns(const std::string& path) const { return std::find(own_keys.begin(), own_keys.end(), path) != own_keys.end(); }
};

// An entry of a family whose Entry adds only `make` (its factory).
template <class Entry, class Make>
Entry registry_entry(std::string name, std::string description, std::vector<RegistryParam> params, Make make) {
  Entry e;
  e.name = std::move(name);
  e.description = std::move(description);
  e.params = std::move(params);
  e.make = make;
  return e;
}

template <class Entry>
class Registry {
 public:
  // `family`: the word messages use for one entry ("scheduler", "router", "cost model").
  Registry(std::string family, std::vector<Entry> entries) : family_(std::move(family)), entries_(std::move(entries)) {}

  const std::string& family() const { return family_; }
  const std::vector<Entry>& entries() const { return entries_; }
  typename std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  typename std::vector<Entry>::const_iterator end() const { return entries_.end(); }

  const Entry* find(const std::string& name) const {
    for (const Entry& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }
  // "unknown scheduler 'x' (a, b, c)", then the close names if any.
  std::string unknown(const std::string& name) const {
    return "unknown " + family_ + " '" + name + "' (" + join_names(names()) + ")" + did_you_mean(name, names());
  }
  // The entries that read declared key `path` as their own, "a, b" (`separator` between), or "".
  std::string readers_of(const std::string& path, const std::string& separator = ", ") const {
    std::string out;
    for (const Entry& e : entries_) {
      for (const std::string& k : e.own_keys) {
        if (k == path) out += (out.empty() ? "" : separator) + e.name;
      }
    }
    return out;
  }

 private:
  std::string family_;
  std::vector<Entry> entries_;
};

}  // namespace servesim
