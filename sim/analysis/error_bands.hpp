// Error bands: servesim's error against measurements it was not fitted to, per (GPU, engine,
// phase), as `servesim validate --bands OUT` wrote them (data/validation/error_bands.json). `plan`
// shows the band of each option's GPU and engine beside its answer; where no measurement of that
// pair exists it says so instead of implying a precision nobody checked. Bands over the published
// attention-DP rows are separate entries (feature "attention_dp", development data): plan shows
// them, and only them, for a scenario that runs attention DP.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct ErrorBand {
  std::string hw, engine, phase;
  std::size_t n = 0;           // validation rows behind the figures
  double median_abs = 0.0;     // median |predicted - measured| / measured
  double worst_abs = 0.0;
  std::string source;          // which measurements, how held out
  std::string feature;         // kAttentionDpFeature: over the rows that ran attention DP; empty: the others
};

// ErrorBand::feature of the bands over the attention-DP rows (development data, not held out).
inline constexpr const char* kAttentionDpFeature = "attention_dp";

// The bundled file: <data_dir>/data/validation/error_bands.json.
std::string default_error_bands_path();

// InputError naming the file and key when the file is missing or malformed.
std::vector<ErrorBand> load_error_bands(const std::string& path);
nlohmann::json error_bands_to_json(const std::vector<ErrorBand>& bands, const std::string& generated_by);

// The band that speaks for a whole serving answer of `engine` on `hw`: the end-to-end phase when
// one was measured, else throughput, token time, decode step, in that order. nullopt: this GPU
// and engine were never validated. Only bands of `feature` count (empty: the plain ones).
std::optional<ErrorBand> serving_band(const std::vector<ErrorBand>& bands, const std::string& hw, const std::string& engine,
                                      const std::string& feature = "");

// The bands a latency SLO is judged by: for each target set (TTFT, TPOT, E2E) the band of that
// metric on `hw` and `engine` at the highest percentile measured (p90, else p50); with no latency
// target, the serving band. A target whose metric was never measured there has none (`missing`
// names it): a throughput band does not speak for a latency. Only bands of `feature` count: an
// attention-DP deployment is judged by the attention-DP bands alone, never the plain ones.
struct SloBands {
  std::vector<ErrorBand> bands;
  std::vector<std::string> missing;  // "TTFT", "TPOT", "E2E"
  std::string feature;               // the feature asked for (kAttentionDpFeature or empty)
};
SloBands slo_bands(const std::vector<ErrorBand>& bands, const std::string& hw, const std::string& engine, bool ttft, bool tpot, bool e2e,
                   const std::string& feature = "");

// "TTFT p90 3% (n 21)"; fewer than 5 rows: "TTFT p90 few rows (n 3)" (no +- from so few). An
// attention-DP band: "attention DP throughput 63% (n 8, development)".
std::string describe_band(const ErrorBand& b);

// What a missing band reads as: "TTFT" or, for attention DP, "attention DP TTFT" (the caller adds
// "?" or "not validated"); `metric` empty: the feature's prefix alone ("", "attention DP").
std::string missing_band_text(const std::string& feature, const std::string& metric);

}  // namespace servesim
