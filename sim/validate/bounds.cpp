#include "sim/validate/bounds.hpp"

#include <filesystem>
#include <map>
#include <mutex>

#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {
namespace {

// The file's tables and scalars, parsed strictly once (tests and validate ask many times).
struct BoundsFile {
  std::map<std::string, std::vector<ValidationBound>> tables;
  std::map<std::string, double> scalars;
};

// The history and reasons are for people and for test_bounds_file; here they are only accepted.
void accept_notes(JsonReader& r) {
  for (const char* k : {"why", "history", "test"}) r.accept(k);
}

BoundsFile read_bounds(const std::string& file) {
  const nlohmann::json doc = load_json_file(file);
  JsonReader top(doc, file, "");
  if (top.string("schema") != "servesim-bounds/1") top.fail("schema", "expected servesim-bounds/1");
  top.accept("about");
  BoundsFile out;
  JsonReader tables = top.object("tables");
  for (const auto& [set, rows] : doc.at("tables").items()) {
    tables.accept(set);
    if (!rows.is_array()) tables.fail(set, "must be an array of bounds");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      JsonReader r(rows[i], file, tables.path_of(set) + "[" + std::to_string(i) + "]");
      ValidationBound b{r.string("group"), r.string("engine"), r.string("phase"), r.number_in("median", 0.0, 10.0),
                        r.number_in("worst", 0.0, 10.0)};
      accept_notes(r);
      r.finish();
      out.tables[set].push_back(b);
    }
  }
  tables.finish();
  JsonReader scalars = top.object("scalars");
  for (const auto& [id, entry] : doc.at("scalars").items()) {
    JsonReader r = scalars.object(id);
    out.scalars[id] = r.number_in("bound", 0.0, 10.0);
    accept_notes(r);
    r.finish();
  }
  scalars.finish();
  top.finish();
  return out;
}

const BoundsFile& bounds_file() {
  static std::once_flag once;
  static BoundsFile file;
  std::call_once(once, [] { file = read_bounds(default_bounds_file()); });
  return file;
}

}  // namespace

std::string default_bounds_file() {
  return (std::filesystem::path(data_dir()) / "data" / "validation" / "bounds.json").string();
}

std::vector<ValidationBound> bound_table(const std::string& set) {
  const auto& tables = bounds_file().tables;
  const auto it = tables.find(set);
  if (it == tables.end()) throw InputError(default_bounds_file(), "tables." + set, "no such bound table");
  return it->second;
}

double validation_bound(const std::string& id) {
  const auto& scalars = bounds_file().scalars;
  const auto it = scalars.find(id);
  if (it == scalars.end()) throw InputError(default_bounds_file(), "scalars." + id, "no such bound");
  return it->second;
}

}  // namespace servesim
