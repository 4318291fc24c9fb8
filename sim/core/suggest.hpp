// "Did you mean" for names typed by people (GPU, model, precision, metric names): the known names
// that start with or contain what was typed, else those within a small edit distance.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace servesim {

// Levenshtein distance (insertions, deletions, substitutions).
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The names in `known` that `typed` most likely meant, best first (at most `limit`).
inline std::vector<std::string> close_names(const std::string& typed, const std::vector<std::string>& known, std::size_t limit = 3) {
  std::vector<std::string> out;
  for (const auto& k : known) {
    if (k.rfind(typed, 0) == 0) out.push_back(k);
  }
  for (const auto& k : known) {
    if (typed.size() >= 2 && k.find(typed) != std::string::npos && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  if (out.empty()) {
    const std::size_t budget = std::max<std::size_t>(1, typed.size() / 3);
    std::vector<std::pair<std::size_t, std::string>> near;
    for (const auto& k : known) {
      const std::size_t d = edit_distance(typed, k);
      if (d <= budget) near.emplace_back(d, k);
    }
    std::sort(near.begin(), near.end());
    for (const auto& [d, k] : near) out.push_back(k);
  }
  if (out.size() > limit) out.resize(limit);
  return out;
}

// "a, b, c": a list of names for a message.
inline std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// "; did you mean a, b or c?" for the close names, or "" when there is none.
inline std::string did_you_mean(const std::string& typed, const std::vector<std::string>& known) {
  const auto names = close_names(typed, known);
  if (names.empty()) return "";
  std::string s = "; did you mean ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += i + 1 == names.size() ? " or " : ", ";
    s += names[i];
  }
  return s + "?";
}

}  // namespace servesim
