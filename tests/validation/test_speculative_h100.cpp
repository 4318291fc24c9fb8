// Speculative decoding's step costs on our H100 (calibrate/results/h100/specdec.json): the verify
// pass over k + 1 tokens, the draft models' and EAGLE heads' steps, each predicted as the
// independent H100 set's decode steps are (leave-one-model-out; nothing fitted to these rows).
// Bounds: sim/validate/speculative_set.cpp speculative_bounds(), set before the first run.
#include <doctest/doctest.h>

#include <cstdio>

#include "sim/calib/independent.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/validate/speculative_set.hpp"

using namespace servesim;

TEST_CASE("speculative decoding on H100: verify passes and drafters against the measured steps") {
  const IndependentSet set = load_independent_set(independent_files_for("h100-sxm"));
  const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", "h100-sxm", "test", "hw"));
  const std::string file = default_specdec_file();
  const ValidationResult res = validate_speculative(load_json_file(file), file, set, hw);
  CHECK(res.rows.size() > 300);  // 7 k x (8 + 6) batch-context points x 2 for the verify rows, 64 drafter rows
  std::printf("\nspeculative decoding, H100 (%s): %zu rows\n", file.c_str(), res.rows.size());
  for (const auto& s : summarize(res.rows, speculative_bounds())) {
    std::printf("  %-17s %-16s %5zu  median %5.1f%%  worst %5.1f%% (bound %.0f%% / %.0f%%)  worst row %s %s %+.1f%%\n", s.engine.c_str(),
                s.phase.c_str(), s.n, 100 * s.median_abs, 100 * s.worst_abs, s.bound ? 100 * s.bound->median : 0.0,
                s.bound ? 100 * s.bound->worst : 0.0, s.worst_rows.empty() ? "" : s.worst_rows[0].model.c_str(),
                s.worst_rows.empty() ? "" : s.worst_rows[0].point.c_str(), s.worst_rows.empty() ? 0.0 : 100 * s.worst_rows[0].error());
    CAPTURE(s.phase);
    REQUIRE(s.bound.has_value());
    CHECK(s.median_abs <= s.bound->median);
    CHECK(s.worst_abs <= s.bound->worst);
  }
}
