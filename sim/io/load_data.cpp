// See load_data.hpp.
#include "sim/io/load_data.hpp"

#include <algorithm>

#include "sim/model/quant.hpp"

namespace servesim {

LoadConfig load_config(const Scenario& s) {
  LoadConfig c;
  c.model = s.model.name;
  c.hw = s.hw.name;
  c.quant = s.precision.quant == QuantScheme::none ? dtype_name(s.precision.weights) : quant_name(s.precision.quant);
  c.engine = s.engine.profile.name;
  c.tp = s.parallel.tensor_parallel_size;
  c.ep = s.parallel.expert_parallel_size;
  c.replicas = s.parallel.data_parallel_size;
  return c;
}

const std::vector<std::string>& load_table_columns() {
  static const std::vector<std::string> columns = {
      "model", "hw", "quant", "tp", "ep", "replicas", "engine", "rate_per_s", "requests_per_s", "output_tokens_per_s",
      "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s", "meets_slo", "stable_rate_per_s",
      "usd_per_hour", "usd_per_million_output_tokens"};
  return columns;
}

namespace {
void set_point(Table& t, std::size_t row, const LoadPoint& p) {
  t.set(row, "rate_per_s", p.load);
  t.set(row, "requests_per_s", p.requests_per_s);
  t.set(row, "output_tokens_per_s", p.output_tokens_per_s);
  t.set(row, "ttft_p50_s", p.ttft_p50_s);
  t.set(row, "ttft_p99_s", p.ttft_p99_s);
  t.set(row, "tpot_p50_s", p.tpot_p50_s);
  t.set(row, "tpot_p99_s", p.tpot_p99_s);
  t.set(row, "e2e_p50_s", p.e2e_p50_s);
  t.set(row, "e2e_p99_s", p.e2e_p99_s);
  if (p.meets_slo) t.set(row, "meets_slo", *p.meets_slo);
}
}  // namespace

Table load_table(const std::vector<LoadCurve>& curves) {
  Table t;
  for (const std::string& c : load_table_columns()) t.column(c);
  std::size_t row = 0;
  for (const LoadCurve& curve : curves) {
    std::vector<LoadPoint> points = curve.points;
    std::stable_sort(points.begin(), points.end(), [](const LoadPoint& a, const LoadPoint& b) { return a.load < b.load; });
    for (const LoadPoint& p : points) {
      const LoadConfig& c = curve.config;
      t.set(row, "model", c.model);
      t.set(row, "hw", c.hw);
      t.set(row, "quant", c.quant);
      t.set(row, "tp", c.tp);
      t.set(row, "ep", c.ep);
      t.set(row, "replicas", c.replicas);
      t.set(row, "engine", c.engine);
      set_point(t, row, p);
      if (curve.marked_load) t.set(row, "stable_rate_per_s", *curve.marked_load);
      if (curve.usd_per_hour) {
        t.set(row, "usd_per_hour", *curve.usd_per_hour);
        // The hour's price over the output tokens that level served in an hour.
        if (p.output_tokens_per_s > 0.0) t.set(row, "usd_per_million_output_tokens", *curve.usd_per_hour / (p.output_tokens_per_s * 3600.0) * 1e6);
      }
      ++row;
    }
  }
  return t;
}

}  // namespace servesim
