// The committed error bands (data/validation/error_bands.json, what plan shows) against what the
// suites give now: each suite checks its own part, so a fit or mapping change that moves an error
// fails until `servesim validate --bands data/validation/error_bands.json` rewrites the file.
#pragma once
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/analysis/error_bands.hpp"

namespace servesim::test {

// The committed bands whose source starts with `source_prefix` (or does not, when `exclude`).
inline std::vector<ErrorBand> committed_bands(const std::string& source_prefix, bool exclude) {
  std::vector<ErrorBand> out;
  for (const ErrorBand& b : load_error_bands(default_error_bands_path())) {
    if ((b.source.rfind(source_prefix, 0) == 0) != exclude) out.push_back(b);
  }
  return out;
}

// The committed bands of none of the sources named by these prefixes.
inline std::vector<ErrorBand> committed_bands_except(const std::vector<std::string>& source_prefixes) {
  std::vector<ErrorBand> out;
  for (const ErrorBand& b : load_error_bands(default_error_bands_path())) {
    bool named = false;
    for (const std::string& p : source_prefixes) named = named || b.source.rfind(p, 0) == 0;
    if (!named) out.push_back(b);
  }
  return out;
}

inline void check_bands_equal(const std::vector<ErrorBand>& now, const std::vector<ErrorBand>& committed) {
  REQUIRE(now.size() == committed.size());
  for (std::size_t i = 0; i < now.size(); ++i) {
    CAPTURE(now[i].hw);
    CAPTURE(now[i].engine);
    CAPTURE(now[i].phase);
    CAPTURE(now[i].feature);
    CHECK(committed[i].hw == now[i].hw);
    CHECK(committed[i].engine == now[i].engine);
    CHECK(committed[i].phase == now[i].phase);
    CHECK(committed[i].feature == now[i].feature);
    CHECK(committed[i].n == now[i].n);
    CHECK(committed[i].median_abs == doctest::Approx(now[i].median_abs).epsilon(1e-9));
    CHECK(committed[i].worst_abs == doctest::Approx(now[i].worst_abs).epsilon(1e-9));
  }
}

// The source line every published-table band starts with (published_error_bands()).
inline const char* kPublishedBandSource = "published engine tables";
// ... and every band of the real vLLM runs (vllm_runs_error_bands()).
inline const char* kVllmRunsBandSource = "real vLLM";

}  // namespace servesim::test
