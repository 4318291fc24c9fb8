// Hardware profile parsing: datasheet peaks, efficiency tables (checked increasing in size,
// fractions in (0, 1]) and provenance.
#include "sim/io/hw_io.hpp"

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

EfficiencyTable parse_table(JsonReader& r, const std::string& key) {
  const auto& j = r.raw(key);
  if (!j.is_array() || j.empty()) r.fail(key, "must be a non-empty array of [size, fraction] pairs");
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& p = j[i];
    const std::string where = key + "[" + std::to_string(i) + "]";
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
      r.fail(where, "must be a [size, fraction] pair of numbers");
    }
    const double x = p[0].get<double>(), y = p[1].get<double>();
    if (!(x > 0.0)) r.fail(where, "size must be > 0");
    if (!(y > 0.0 && y <= 1.0)) r.fail(where, "fraction must be in (0, 1]");
    if (!points.empty() && x <= points.back().first) r.fail(where, "sizes must increase");
    points.emplace_back(x, y);
  }
  return EfficiencyTable(std::move(points));
}

std::vector<double> positive_list(JsonReader& r, const std::string& key) {
  const auto& j = r.raw(key);
  if (!j.is_array() || j.empty()) r.fail(key, "must be a non-empty array of numbers");
  std::vector<double> out;
  for (const auto& v : j) {
    if (!v.is_number() || !(v.get<double>() > 0.0)) r.fail(key, "must hold numbers > 0");
    if (!out.empty() && v.get<double>() <= out.back()) r.fail(key, "must increase");
    out.push_back(v.get<double>());
  }
  return out;
}

// "calibration": measured tables written by `servesim calibrate fit` (all optional).
void parse_calibration(JsonReader r, HwProfile& hw) {
  if (auto gemm = r.object_if("gemm")) {
    for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8}) {
      const std::string key = dtype_name(d);
      if (!gemm->has(key)) {
        gemm->accept(key);
        continue;
      }
      const auto& list = gemm->raw(key);
      if (!list.is_array() || list.empty()) gemm->fail(key, "must be a non-empty array of shapes");
      std::vector<GemmShapeCurve> shapes;
      for (std::size_t i = 0; i < list.size(); ++i) {
        JsonReader shape(list[i], r.file(), gemm->path_of(key) + "[" + std::to_string(i) + "]");
        GemmShapeCurve c;
        c.n = shape.positive("n");
        c.k = shape.positive("k");
        c.frac_by_m = parse_table(shape, "frac_by_m");
        shape.finish();
        shapes.push_back(std::move(c));
      }
      hw.gemm_tables[static_cast<std::size_t>(d)] = GemmTable(std::move(shapes));
    }
    gemm->finish();
  }
  if (auto attn = r.object_if("attention_decode")) {
    std::vector<double> batch = positive_list(*attn, "kv_head_tokens");
    std::vector<double> context = positive_list(*attn, "context_tokens");
    const auto& rows = attn->raw("frac");
    if (!rows.is_array() || rows.size() != batch.size()) attn->fail("frac", "must have one row per batch value");
    std::vector<double> values;
    for (const auto& row : rows) {
      if (!row.is_array() || row.size() != context.size()) attn->fail("frac", "each row must have one value per context");
      for (const auto& v : row) {
        if (!v.is_number() || !(v.get<double>() > 0.0 && v.get<double>() <= 1.0)) attn->fail("frac", "values must be in (0, 1]");
        values.push_back(v.get<double>());
      }
    }
    attn->finish();
    hw.attention_decode_frac = LogGrid2D(std::move(batch), std::move(context), std::move(values));
  }
  if (auto c = r.object_if("contention")) {
    hw.contention_copy_copy_slowdown = c->number_in("copy_copy_slowdown", 1.0, 100.0);
    hw.contention_gemm_copy_slowdown = c->number_in("gemm_copy_slowdown", 1.0, 100.0);
    c->finish();
  }
  r.finish();
}

Provenance parse_provenance(JsonReader r) {
  Provenance p;
  p.kind = r.string("kind");
  if (p.kind != "derived" && p.kind != "measured") r.fail("kind", "must be \"derived\" or \"measured\"");
  p.method = r.string("method");
  const auto& sources = r.raw("sources");
  if (!sources.is_array()) r.fail("sources", "must be an array of strings");
  for (const auto& s : sources) {
    if (!s.is_string()) r.fail("sources", "must be an array of strings");
    p.sources.push_back(s.get<std::string>());
  }
  p.gpu = r.string_or("gpu", "");
  p.driver = r.string_or("driver", "");
  p.cuda = r.string_or("cuda", "");
  p.date = r.string_or("date", "");
  p.command = r.string_or("command", "");
  r.finish();
  return p;
}

}  // namespace

HwProfile parse_hw_profile(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file, "");
  HwProfile hw;
  r.accept("schema");
  r.accept("notes");
  r.accept("fit_report");  // written by `servesim calibrate fit`, for people
  hw.name = r.string("name");
  hw.display_name = r.string("display_name");
  hw.architecture = r.string("architecture");
  r.accept("compute_capability");
  hw.sm_count = static_cast<int>(r.positive_integer("sm_count"));
  hw.memory_bytes = r.positive("memory_bytes");
  hw.hbm_bandwidth_bytes_per_s = r.positive("hbm_bandwidth_bytes_per_s");
  hw.l2_bytes = r.positive("l2_bytes");
  {
    JsonReader peaks = r.object("peak_flops_per_s");
    hw.vector_fp32_flops_per_s = peaks.positive("fp32_vector");
    for (Dtype d : {Dtype::fp32, Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8}) {
      const std::string key = dtype_name(d);
      hw.peak_flops_per_s[static_cast<std::size_t>(d)] = peaks.has(key) ? peaks.positive(key) : (peaks.accept(key), 0.0);
    }
    peaks.finish();
    if (!hw.supports(Dtype::fp16) && !hw.supports(Dtype::bf16)) r.fail("peak_flops_per_s", "needs fp16 or bf16");
  }
  {
    JsonReader link = r.object("host_link");
    link.accept("name");
    hw.host_link_bytes_per_s = link.positive("bandwidth_bytes_per_s");
    link.finish();
  }
  if (auto nvlink = r.object_if("nvlink")) {
    nvlink->accept("name");
    hw.nvlink_bytes_per_s = nvlink->positive("bandwidth_bytes_per_s");
    nvlink->finish();
  }
  {
    JsonReader launch = r.object("launch");
    hw.kernel_launch_s = launch.positive("kernel_launch_s");
    hw.graph_launch_s = launch.positive("graph_launch_s");
    hw.kernel_overhead_s = launch.positive("kernel_overhead_s");
    launch.finish();
  }
  {
    JsonReader eff = r.object("efficiency");
    hw.gemm_compute_frac_by_m = parse_table(eff, "gemm_compute_frac_by_m");
    hw.memory_bw_frac_by_bytes = parse_table(eff, "memory_bw_frac_by_bytes");
    hw.attention_decode_bw_frac_by_bytes = parse_table(eff, "attention_decode_bw_frac_by_bytes");
    hw.attention_prefill_compute_frac_by_tokens = parse_table(eff, "attention_prefill_compute_frac_by_kv_tokens");
    eff.finish();
  }
  if (auto calibration = r.object_if("calibration")) parse_calibration(*calibration, hw);
  if (auto qz = r.object_if("quantized")) {
    hw.dequant_int4_weights_per_s = qz->positive_or("dequant_int4_weights_per_s", 0.0);
    hw.dequant_int8_weights_per_s = qz->positive_or("dequant_int8_weights_per_s", 0.0);
    qz->finish();
  }
  hw.provenance = parse_provenance(r.object("provenance"));
  r.finish();
  return hw;
}

HwProfile load_hw_profile(const std::string& path) { return parse_hw_profile(load_json_file(path), path); }

nlohmann::json provenance_to_json(const Provenance& p) {
  nlohmann::json j = {{"kind", p.kind}, {"method", p.method}, {"sources", p.sources}};
  if (p.kind == "measured") {
    j["gpu"] = p.gpu;
    j["driver"] = p.driver;
    j["cuda"] = p.cuda;
    j["date"] = p.date;
    j["command"] = p.command;
  }
  return j;
}

}  // namespace servesim
