// See raw_schema.hpp. The record layout is calibrate/merge_raw.py's (RECORD_KEYS, ENUMS,
// LAUNCH_KEYS, GPU_KEYS), with the physical range of every number added: times in (0, 1000] s,
// sizes and counts from 1 to far above any GPU, so nothing the fit multiplies can overflow.
#include "sim/calib/raw_schema.hpp"

#include <algorithm>
#include <vector>

#include "sim/config/scenario_keys.hpp"
#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

enum class Kind { integer, number, string, boolean, numbers };

struct Field {
  const char* key;
  Kind kind;
  KeyRange range = {};                    // integer, number, and each of numbers
  std::vector<std::string> choices = {};  // string: the values allowed (empty: any)
};

struct Section {
  const char* name;
  bool required;  // the fit needs at least one record
  std::vector<Field> fields;
};

const KeyRange kSeconds{0.0, 1e3, true, false};       // a kernel or copy: (0, 1000] s
const KeyRange kLaunchSeconds{0.0, 1.0, false, false};  // launch costs: [0, 1] s (a slope may be 0)
const KeyRange kBytes{1.0, 1e13, false, false};
const KeyRange kRate{0.0, 1e18, true, false};         // bytes/s, FLOP/s
const KeyRange kTokens{1.0, 16777216.0, false, false};  // GEMM M, N, K; batch x context; 2^24
const KeyRange kHeads{1.0, 16384.0, false, false};
const KeyRange kWidth{1.0, 1048576.0, false, false};

const std::vector<Field>& gpu_fields() {
  static const std::vector<Field> f = {
      {"name", Kind::string},
      {"compute_capability", Kind::string},
      {"sm_count", Kind::integer, {1.0, 1e5, false, false}},
      {"l2_bytes", Kind::integer, {0.0, 1e12, false, false}},
      {"memory_bytes", Kind::integer, {1.0, 1e14, false, false}},
      {"driver", Kind::string},
      {"cuda_runtime", Kind::string},
      {"sm_clock_mhz_max", Kind::integer, {1.0, 1e5, false, false}},
      {"mem_clock_mhz", Kind::integer, {1.0, 1e5, false, false}},
  };
  return f;
}

const std::vector<Section>& sections() {
  static const std::vector<Section> s = {
      {"bandwidth", false,
       {{"op", Kind::string, {}, {"read", "write", "copy"}}, {"bytes", Kind::integer, kBytes}, {"time_s", Kind::number, kSeconds},
        {"bytes_per_s", Kind::number, kRate}}},
      {"gemm", true,
       {{"dtype", Kind::string, {}, {"bf16", "fp16", "fp8", "int8"}}, {"m", Kind::integer, kTokens}, {"n", Kind::integer, kTokens},
        {"k", Kind::integer, kTokens}, {"time_s", Kind::number, kSeconds}, {"flops_per_s", Kind::number, kRate}}},
      {"quant_gemm", false,
       {{"dtype", Kind::string, {}, {"w4a16", "w8a16"}}, {"group_size", Kind::integer, {1.0, 65536.0, false, false}},
        {"path", Kind::string, {}, {"gemv", "dequant_gemm"}}, {"m", Kind::integer, kTokens}, {"n", Kind::integer, kTokens},
        {"k", Kind::integer, kTokens}, {"time_s", Kind::number, kSeconds}, {"rel_err", Kind::number, {0.0, 1e6, false, false}}}},
      {"attention_decode", true,
       {{"batch", Kind::integer, kTokens}, {"context", Kind::integer, kTokens}, {"block_size", Kind::integer, {1.0, 65536.0, false, false}},
        {"num_q_heads", Kind::integer, kHeads}, {"num_kv_heads", Kind::integer, kHeads}, {"head_dim", Kind::integer, kWidth},
        {"time_s", Kind::number, kSeconds}, {"kv_bytes", Kind::integer, kBytes}}},
      {"attention_decode_kv", false,
       {{"kv_dtype", Kind::string, {}, {"bf16", "fp8_e4m3", "int8", "int4"}}, {"conversion", Kind::string, {}, {"shift", "bits", "cvt"}},
        {"unroll", Kind::integer, {1.0, 64.0, false, false}}, {"batch", Kind::integer, kTokens},
        {"context", Kind::integer, kTokens}, {"block_size", Kind::integer, {1.0, 65536.0, false, false}},
        {"num_q_heads", Kind::integer, kHeads}, {"num_kv_heads", Kind::integer, kHeads}, {"head_dim", Kind::integer, kWidth},
        {"time_s", Kind::number, kSeconds}, {"kv_bytes", Kind::integer, kBytes},
        {"time_over_bf16", Kind::number, {0.0, 1e3, true, false}}}},
      {"attention_prefill", true,
       {{"batch", Kind::integer, kTokens}, {"seq_len", Kind::integer, kTokens}, {"num_q_heads", Kind::integer, kHeads},
        {"num_kv_heads", Kind::integer, kHeads}, {"head_dim", Kind::integer, kWidth}, {"causal", Kind::boolean},
        {"impl", Kind::string, {}, {"torch_sdpa"}}, {"time_s", Kind::number, kSeconds}, {"flops", Kind::number, {0.0, 1e21, true, false}}}},
      {"contention", true,
       {{"case", Kind::string, {}, {"copy_copy", "gemm_copy"}}, {"alone_s", Kind::numbers, kSeconds}, {"together_s", Kind::numbers, kSeconds}}},
      {"host_copy", true,
       {{"direction", Kind::string, {}, {"h2d", "d2h"}}, {"pinned", Kind::boolean}, {"bytes", Kind::integer, kBytes},
        {"time_s", Kind::number, kSeconds}}},
      {"elementwise", true,
       {{"op", Kind::string, {}, {"add", "rmsnorm", "silu_mul", "rope"}}, {"tokens", Kind::integer, kTokens},
        {"hidden", Kind::integer, kWidth}, {"bytes", Kind::integer, kBytes}, {"time_s", Kind::number, kSeconds}}},
  };
  return s;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void check_field(JsonReader& r, const Field& f) {
  const auto in_range = [&](double v, const std::string& what) {
    if (!f.range.contains(v)) r.fail(f.key, what + "must be in " + f.range.text() + ", got " + key_number_text(v));
  };
  switch (f.kind) {
    case Kind::integer: in_range(static_cast<double>(r.integer(f.key)), ""); break;
    case Kind::number: in_range(r.number(f.key), ""); break;
    case Kind::boolean: r.boolean(f.key); break;
    case Kind::string: {
      const std::string v = r.string(f.key);
      if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), v) == f.choices.end()) {
        r.fail(f.key, "must be one of " + joined(f.choices) + ", got '" + v + "'");
      }
      break;
    }
    case Kind::numbers: {
      const nlohmann::json& a = r.raw(f.key);
      if (!a.is_array() || a.empty()) r.fail(f.key, "must be a non-empty array of numbers");
      for (std::size_t i = 0; i < a.size(); ++i) {
        // Appended, not "[" + ...: g++ 12 warns (-Wrestrict, a false positive) on that form here.
        const std::string item = std::string("[").append(std::to_string(i)).append("] ");
        if (!a[i].is_number()) r.fail(f.key, item + "must be a number");
        in_range(a[i].get<double>(), item);
      }
      break;
    }
  }
}

void check_record(const nlohmann::json& record, const std::string& file, const std::string& where, const std::vector<Field>& fields) {
  JsonReader r(record, file, where);
  for (const Field& f : fields) check_field(r, f);
  r.finish();
}

}  // namespace

void check_calibration_raw(const nlohmann::json& raw, const std::string& file) {
  JsonReader top(raw, file, "");
  top.accept("schema");  // checked by the caller, first
  check_record(top.raw("gpu"), file, "gpu", gpu_fields());
  top.string("date");
  top.string("command");
  JsonReader launch = top.object("launch");
  for (const char* key : {"eager_launch_s", "eager_gpu_gap_s", "graph_node_s", "graph_launch_s", "launch_sync_s"}) {
    check_field(launch, {key, Kind::number, kLaunchSeconds});
  }
  launch.finish();
  for (const Section& s : sections()) {
    if (!top.has(s.name) && !s.required) continue;
    const nlohmann::json& records = top.raw(s.name);  // "missing required key" when absent
    if (!records.is_array()) top.fail(s.name, "must be an array of records");
    if (records.empty() && s.required) {
      top.fail(s.name, "has no records, and the fit needs them (its calibrator failed? calibrate/run_all.sh names the section)");
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
      check_record(records[i], file, std::string(s.name) + "[" + std::to_string(i) + "]", s.fields);
    }
    if (std::string(s.name) == "contention") {
      for (std::size_t i = 0; i < records.size(); ++i) {
        if (records[i]["alone_s"].size() != records[i]["together_s"].size()) {
          throw InputError(file, "contention[" + std::to_string(i) + "].together_s", "must be as long as alone_s");
        }
      }
    }
  }
  top.finish();
}

}  // namespace servesim
