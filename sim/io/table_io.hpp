// Writing analysis tables: JSON (array of row objects), CSV, markdown and aligned text.
#pragma once
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/io/table.hpp"

namespace servesim {

nlohmann::json table_to_json(const Table& t);
void write_csv(std::ostream& os, const Table& t);
void write_markdown(std::ostream& os, const Table& t);
void write_text(std::ostream& os, const Table& t);

}  // namespace servesim
