// Latency against offered load, per configuration: what the load pages draw (html_report.hpp's
// write_load_html) and what `--load-csv FILE` writes, in the same columns for `saturate` (its
// probes), `sweep` (its rows over the arrival rate) and `plan` (every option's probes).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/io/table.hpp"

namespace servesim {

// One simulated load level of a sweep or saturation search.
struct LoadPoint {
  double load = 0.0;  // in the page's load unit, e.g. arrival rate in req/s
  double ttft_p50_s = 0, ttft_p99_s = 0, tpot_p50_s = 0, tpot_p99_s = 0, e2e_p50_s = 0, e2e_p99_s = 0;
  double requests_per_s = 0, output_tokens_per_s = 0;
  std::optional<bool> meets_slo;
};

// What identifies a configuration in --load-csv's rows.
struct LoadConfig {
  std::string model, hw, quant, engine;  // quant: the quantization scheme, else the weights' dtype
  std::int64_t tp = 1, ep = 1, replicas = 1;
};
LoadConfig load_config(const Scenario& s);

// One configuration's load levels: a plan option's probes, or saturate's / sweep's scenario.
struct LoadCurve {
  std::string name;  // e.g. "h100-sxm bf16 tp 2" (empty for a page of one configuration)
  LoadConfig config;
  std::vector<LoadPoint> points;       // any order; drawn and written sorted by load
  std::optional<double> marked_load;   // the stable rate, when a search found one
  std::optional<double> usd_per_hour;  // the configuration's GPUs at their price per GPU-hour
  std::string note;                    // one line under its heading on the page (plan: the row's answer)
};

// --load-csv's table: one row per curve and load level, in the curves' order and by load: the
// configuration, rate_per_s (offered), requests_per_s and output_tokens_per_s (achieved), TTFT, TPOT
// and E2E p50/p99, meets_slo, stable_rate_per_s, usd_per_hour and usd_per_million_output_tokens
// (at that level's output rate); a figure a curve does not know is left empty.
Table load_table(const std::vector<LoadCurve>& curves);

// The columns of load_table, in order (the file's header).
const std::vector<std::string>& load_table_columns();

}  // namespace servesim
