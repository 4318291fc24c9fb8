// Quantized-vs-16-bit falloff against published measurements (data/validation/quant_published.json,
// development data, issue 40 item 4): each row's quantized and 16-bit runs through the step model
// with the row's engine profile (its quant_kernels resolved for the row's GPU), and the predicted
// ratio (quantized metric over 16-bit metric) against the published one. A row may quantize the
// KV cache (kv_cache_dtype; grouped as "SCHEME+kv-FORMAT"), set activation_scales, and name a
// baseline_engine for its 16-bit run where the publication compares two systems (and
// baseline_kv_free_fraction, the KV rule of its static batches: TensorRT-LLM's share of the memory
// left after weights and activations, for metric max_static_throughput). Grouped per
// scheme and batch regime (1-4, 8-16, >= 64; other batches count in the scheme's total only).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct QuantRowResult {
  std::string id, source, engine, model, gpu, scheme, metric, regime, note;
  std::int64_t batch = 0;
  double published_ratio = 0.0, predicted_ratio = 0.0;
  double error = 0.0;  // predicted / published - 1
};

// The batch regime a row counts in: "1-4", "8-16", ">=64", or "other".
std::string quant_batch_regime(std::int64_t batch);

// Every row of `doc` (read from `file`); InputError naming the file and key on a malformed row,
// an unknown scheme, engine, model or GPU.
std::vector<QuantRowResult> run_quant_rows(const nlohmann::json& doc, const std::string& file);

// One line of the table: a scheme over all its rows (regime "all") or over one regime.
struct QuantGroupError {
  std::string scheme, regime;
  std::size_t n = 0;
  double median = 0.0, worst = 0.0;  // of |error|
};
std::vector<QuantGroupError> quant_group_errors(const std::vector<QuantRowResult>& rows);

// data/validation/quant_published.json in the bundled data folder.
std::string default_quant_rows_file();

}  // namespace servesim
