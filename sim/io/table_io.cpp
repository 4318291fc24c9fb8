// See table_io.hpp. Numbers print with up to 6 significant digits in text/markdown/CSV; JSON keeps
// full precision.
#include "sim/io/table_io.hpp"

#include <cstdio>
#include <sstream>

#include "sim/core/error.hpp"

namespace servesim {

namespace {
std::string cell_text(const Cell& c) {
  if (std::holds_alternative<bool>(c)) return std::get<bool>(c) ? "true" : "false";
  if (std::holds_alternative<std::int64_t>(c)) return std::to_string(std::get<std::int64_t>(c));
  if (std::holds_alternative<double>(c)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", std::get<double>(c));
    return buf;
  }
  if (std::holds_alternative<std::string>(c)) return std::get<std::string>(c);
  return "";
}
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}
}  // namespace

nlohmann::json table_to_json(const Table& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : t.rows) {
    nlohmann::json o = nlohmann::json::object();
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      const Cell& c = i < row.size() ? row[i] : Cell{};
      if (std::holds_alternative<bool>(c)) o[t.columns[i]] = std::get<bool>(c);
      else if (std::holds_alternative<std::int64_t>(c)) o[t.columns[i]] = std::get<std::int64_t>(c);
      else if (std::holds_alternative<double>(c)) o[t.columns[i]] = std::get<double>(c);
      else if (std::holds_alternative<std::string>(c)) o[t.columns[i]] = std::get<std::string>(c);
      else o[t.columns[i]] = nullptr;
    }
    rows.push_back(o);
  }
  return rows;
}

void write_csv(std::ostream& os, const Table& t) {
  for (std::size_t i = 0; i < t.columns.size(); ++i) os << (i ? "," : "") << csv_field(t.columns[i]);
  os << "\n";
  for (const auto& row : t.rows) {
    for (std::size_t i = 0; i < t.columns.size(); ++i) os << (i ? "," : "") << csv_field(i < row.size() ? cell_text(row[i]) : "");
    os << "\n";
  }
}

void write_markdown(std::ostream& os, const Table& t) {
  os << "|";
  for (const auto& c : t.columns) os << " " << c << " |";
  os << "\n|";
  for (std::size_t i = 0; i < t.columns.size(); ++i) os << " --- |";
  os << "\n";
  for (const auto& row : t.rows) {
    os << "|";
    for (std::size_t i = 0; i < t.columns.size(); ++i) os << " " << (i < row.size() ? cell_text(row[i]) : "") << " |";
    os << "\n";
  }
}

void write_text(std::ostream& os, const Table& t) {
  std::vector<std::size_t> width(t.columns.size());
  for (std::size_t i = 0; i < t.columns.size(); ++i) width[i] = t.columns[i].size();
  for (const auto& row : t.rows) {
    for (std::size_t i = 0; i < t.columns.size() && i < row.size(); ++i) width[i] = std::max(width[i], cell_text(row[i]).size());
  }
  auto line = [&](auto get) {
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      const std::string s = get(i);
      os << (i ? "  " : "") << s << std::string(width[i] - s.size(), ' ');
    }
    os << "\n";
  };
  line([&](std::size_t i) { return t.columns[i]; });
  for (const auto& row : t.rows) line([&](std::size_t i) { return i < row.size() ? cell_text(row[i]) : std::string(); });
}

}  // namespace servesim
