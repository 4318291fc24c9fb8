// See table.hpp.
#include "sim/io/table.hpp"

namespace servesim {

std::size_t Table::column(const std::string& name) {
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return i;
  }
  columns.push_back(name);
  for (auto& row : rows) row.resize(columns.size());
  return columns.size() - 1;
}

void Table::set(std::size_t r, const std::string& name, Cell value) {
  const std::size_t c = column(name);
  while (rows.size() <= r) rows.emplace_back(columns.size());
  rows[r][c] = std::move(value);
}

}  // namespace servesim
