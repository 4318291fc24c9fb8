// Paged decode attention over quantized KV caches, measured by the calibrator's
// attention_decode_kv section (calibrate/src/bench_attention.cu; a section file such as
// calibrate/results/h100/attention_decode_kv.json, or a raw.json that carries the section) -> the
// hardware profile's calibration.attention_decode_kv: per cache format, the median over the
// measured shapes of (fastest variant's time) / (bf16 time on the same shape).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct KvDecodeFormatFit {
  std::string format;                 // the profile's key: fp8, int8, int4
  std::vector<double> ratios;         // one per measured shape, time / bf16 time
  std::vector<long long> batches;     // the shape's batch, beside each ratio
  double median = 0.0;
};

struct KvDecodeFit {
  nlohmann::json table;               // calibration.attention_decode_kv
  std::vector<KvDecodeFormatFit> formats;
  std::string date, gpu;              // of the measurement
};

// `doc` read from `file`; `command` is recorded in the table's source. InputError naming the file
// and key on malformed input or a format without bf16 points on its shapes.
KvDecodeFit fit_kv_decode(const nlohmann::json& doc, const std::string& file, const std::string& command);

}  // namespace servesim
