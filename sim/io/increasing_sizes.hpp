// A JSON array of strictly increasing positive integers (CUDA-graph capture sizes), read in one
// place for the engine profile (cuda_graphs.batch_sizes) and the scenario
// (engine.cuda_graph_batch_sizes); each caller words its own error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

// Appends `a`'s elements to `sizes` while each is an integer in [1, max] above the one before it
// (`sizes`' last, if any); returns the index of the first that is not, or a.size() when all are.
inline std::size_t read_increasing_sizes(const nlohmann::json& a, std::int64_t max, std::vector<std::int64_t>& sizes) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number_integer()) return i;
    const auto v = a[i].get<std::int64_t>();
    if (v <= 0 || v > max || (!sizes.empty() && v <= sizes.back())) return i;
    sizes.push_back(v);
  }
  return a.size();
}

}  // namespace servesim
