// Error bands: servesim's error against measurements it was not fitted to, per (GPU, engine,
// phase), as `servesim validate --bands OUT` wrote them (data/validation/error_bands.json). `plan`
// shows the band of each option's GPU and engine beside its answer; where no measurement of that
// pair exists it says so instead of implying a precision nobody checked.
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
};

// The bundled file: <data_dir>/data/validation/error_bands.json.
std::string default_error_bands_path();

// InputError naming the file and key when the file is missing or malformed.
std::vector<ErrorBand> load_error_bands(const std::string& path);
nlohmann::json error_bands_to_json(const std::vector<ErrorBand>& bands, const std::string& generated_by);

// The band that speaks for a whole serving answer of `engine` on `hw`: the end-to-end phase when
// one was measured, else throughput, token time, decode step, in that order. nullopt: this GPU
// and engine were never validated.
std::optional<ErrorBand> serving_band(const std::vector<ErrorBand>& bands, const std::string& hw, const std::string& engine);

// The bands a latency SLO is judged by: for each target set (TTFT, TPOT, E2E) the band of that
// metric on `hw` and `engine` at the highest percentile measured (p90, else p50); with no latency
// target, the serving band. A target whose metric was never measured there has none (`missing`
// names it): a throughput band does not speak for a latency.
struct SloBands {
  std::vector<ErrorBand> bands;
  std::vector<std::string> missing;  // "TTFT", "TPOT", "E2E"
};
SloBands slo_bands(const std::vector<ErrorBand>& bands, const std::string& hw, const std::string& engine, bool ttft, bool tpot, bool e2e);

// "TTFT p90 3% (n 21)"; fewer than 5 rows: "TTFT p90 few rows (n 3)" (no +- from so few).
std::string describe_band(const ErrorBand& b);

}  // namespace servesim
