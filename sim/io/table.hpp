// A result table: named columns and rows of cells, the common output of every analysis. The CLI
// turns it into JSON, CSV or markdown (sim/io/table_io); analyses never format text themselves.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace servesim {

using Cell = std::variant<std::monostate, bool, std::int64_t, double, std::string>;  // monostate: no value

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  // Index of `name` in columns, adding it if new (rows grow with empty cells).
  std::size_t column(const std::string& name);
  // Sets row `r`, column `name` (creating either as needed).
  void set(std::size_t r, const std::string& name, Cell value);
};

}  // namespace servesim
