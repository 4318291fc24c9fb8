// Paged decode attention in two forms over the same cache, measured by the calibrator's
// attention_decode_mmha section (calibrate/src/bench_attention.cu, calibrate/mmha_batch.sh):
// `grouped` (one program per KV head serving its query-head group, each KV byte read once) and
// one program per query head (`per_head`: the group's programs side by side, as TensorRT-LLM's
// masked multi-head attention launches them; `per_head_far`: the no-L2-reuse bound) -> the
// hardware profile's calibration.attention_decode_per_query_head: per KV format and group, the
// chosen form's time over the grouped time on each (batch, context) point.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servesim {

struct DecodePerQueryHeadGridFit {
  std::string format;                  // the profile's key: bf16 or fp8
  int group = 0;                       // query heads per KV head
  std::vector<long long> batches, contexts;
  std::vector<double> ratios;          // one per (batch, context), batch-major
  std::vector<long long> dropped_batches;  // batches left out: a context without both forms
};

struct DecodePerQueryHeadFit {
  nlohmann::json table;                // calibration.attention_decode_per_query_head
  std::vector<DecodePerQueryHeadGridFit> grids;
  std::string gpu, date;
};

// `doc` read from `file` (a section file {"attention_decode_mmha": {...}}); `form` the one-program-
// per-query-head form to take (per_head, per_head_far); `date` and `measured_by` (the command that
// measured it) recorded with `fitted_by` where the file has none. InputError naming the file and
// key on malformed input, a failed correctness check, or no point of the form.
DecodePerQueryHeadFit fit_decode_per_query_head(const nlohmann::json& doc, const std::string& file, const std::string& form,
                                                const std::string& date, const std::string& measured_by,
                                                const std::string& fitted_by);

}  // namespace servesim
