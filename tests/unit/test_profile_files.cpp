// Hardware profile files as people read them: each bundled profile is a short JSON whose measured
// tables sit in hwprofiles/tables/; sizes stay reviewable, rewriting keeps the predictions, and a
// broken tables file or a table in two places is a one-line error naming the file and key.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "sim/calib/grouped_gemm_fit.hpp"
#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/model/ops.hpp"

using namespace servesim;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string load_error(const nlohmann::json& doc, const std::string& file) {
  try {
    parse_hw_profile(doc, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Kernel times that read every kind of table: GEMMs at small and large M (per-shape tables),
// streaming ops, decode and prefill attention, weight-only GEMMs.
std::vector<double> probe_times(const HwProfile& hw) {
  static const ModelSpec model = load_model(resolve_data_ref("models", "llama-3-8b", "", ""));
  std::vector<double> out;
  const Precision bf16{Dtype::bf16, Dtype::bf16, Dtype::bf16};
  for (std::int64_t m : {1, 7, 64, 300, 2048}) {
    out.push_back(estimate(make_gemm_op("g", 1, m, 4096, 4096, bf16), hw, Dtype::bf16).time_s);
    out.push_back(estimate(make_gemm_op("g", 1, m, 14336, 4096, bf16), hw, Dtype::bf16).time_s);
  }
  for (const auto& [batch, context] : {std::pair<std::int64_t, std::int64_t>{1, 512}, {32, 2048}, {0, 0}}) {
    BatchShape b;
    if (batch > 0) {
      for (std::int64_t i = 0; i < batch; ++i) b.add_decode(context);
    } else {
      b.add_prefill(1024, 0, false);
    }
    std::vector<Op> ops;
    build_iteration_ops(model, b, bf16, ops);
    for (const Op& op : ops) out.push_back(estimate(op, hw, Dtype::bf16).time_s);
  }
  return out;
}

}  // namespace

TEST_CASE("bundled profiles: main JSON <= 20 KB, every file under hwprofiles/ <= 300 KB") {
  const fs::path dir = fs::path(data_dir()) / "hwprofiles";
  int profiles = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const auto bytes = fs::file_size(e.path());
    INFO(e.path().string() << ": " << bytes << " bytes");
    CHECK(bytes <= 300u * 1024u);
    if (e.path().parent_path() == dir && e.path().stem() != "prices") {
      CHECK(bytes <= 20u * 1024u);
      ++profiles;
    }
  }
  CHECK(profiles == static_cast<int>(bundled_names("hwprofiles").size()));
}

TEST_CASE("rewriting a bundled profile keeps its tables file byte for byte and its predictions") {
  const fs::path out = fs::temp_directory_path() / ("servesim_profiles_" + std::to_string(::getpid()));
  fs::create_directories(out);
  for (const std::string& name : bundled_names("hwprofiles")) {
    INFO("profile " << name);
    const std::string path = resolve_data_ref("hwprofiles", name, "", "");
    nlohmann::json doc = load_json_file(path);
    const bool has_tables = doc.contains("tables");
    inline_hw_tables(doc, path);
    const std::string written = write_hw_profile(doc, (out / (name + ".json")).string());
    CHECK(written.empty() == !has_tables);
    if (has_tables) {
      CHECK(read_text(written) == read_text(fs::path(path).parent_path() / load_json_file(path)["tables"].get<std::string>()));
    }
    const auto before = probe_times(load_hw_profile(path));
    const auto after = probe_times(load_hw_profile((out / (name + ".json")).string()));
    REQUIRE(before.size() == after.size());
    for (std::size_t i = 0; i < before.size(); ++i) CHECK(after[i] == doctest::Approx(before[i]).epsilon(1e-6));
  }
  fs::remove_all(out);
}

TEST_CASE("a profile parsed once is read again when it or its tables file changes") {
  const fs::path dir = fs::temp_directory_path() / ("servesim_profile_cache_" + std::to_string(::getpid()));
  fs::create_directories(dir / "tables");
  const std::string bundled = resolve_data_ref("hwprofiles", "h100-sxm", "", "");
  nlohmann::json doc = load_json_file(bundled);
  nlohmann::json tables = load_json_file(fs::path(bundled).parent_path() / doc["tables"].get<std::string>());
  const std::string path = (dir / "gpu.json").string();
  const auto write = [&] {
    std::ofstream(path) << doc.dump();
    std::ofstream(dir / doc["tables"].get<std::string>()) << tables.dump();
  };
  write();
  const std::vector<double> first = probe_times(load_hw_profile(path));
  CHECK(probe_times(load_hw_profile(path)) == first);  // unchanged files: the same profile
  doc["hbm_bandwidth_bytes_per_s"] = doc["hbm_bandwidth_bytes_per_s"].get<double>() / 2;
  write();
  const std::vector<double> slower = probe_times(load_hw_profile(path));
  CHECK(slower != first);
  // Halve the GEMM efficiencies the probes read (bf16's table where the profile has one, else fp16's).
  for (const char* dtype : {"bf16", "fp16"}) {
    if (!tables["calibration"]["gemm"].contains(dtype)) continue;
    for (auto& r : tables["calibration"]["gemm"][dtype]["shapes"]) {
      for (std::size_t i = 2; i < r.size(); ++i) {
        if (r[i].is_number()) r[i] = r[i].get<double>() / 2;
      }
    }
  }
  write();  // only the tables file changes
  CHECK(probe_times(load_hw_profile(path)) != slower);
  fs::remove_all(dir);
}

TEST_CASE("profile tables: strict, and each table in one place") {
  const std::string path = resolve_data_ref("hwprofiles", "h200-sxm", "", "");
  nlohmann::json doc = load_json_file(path);

  auto missing = doc;
  missing["tables"] = "tables/no-such-file.json";
  // Names the profile and its key, not the derived path alone (a copied profile without its tables).
  CHECK(load_error(missing, path).find("h200-sxm.json: tables: names tables/no-such-file.json, which is not beside this profile") !=
        std::string::npos);

  auto legacy = doc;
  legacy["calibration"] = nlohmann::json::object();
  CHECK(load_error(legacy, path).find("calibration: belongs under \"tables\"") != std::string::npos);

  inline_hw_tables(doc, path);
  auto twice = doc;
  twice["efficiency"]["memory_bw_frac_by_bytes"] = doc["tables"]["efficiency"]["memory_bw_frac_by_bytes"];
  CHECK(load_error(twice, "p.json").find("p.json: efficiency.memory_bw_frac_by_bytes: is also in the profile's tables") !=
        std::string::npos);

  auto alias = doc;
  alias["tables"]["calibration"]["gemm"]["fp8"] = "int4";
  CHECK(load_error(alias, "p.json").find("tables.calibration.gemm.fp8: names 'int4'") != std::string::npos);

  auto row = doc;
  row["tables"]["calibration"]["gemm"]["bf16"]["shapes"][0][2] = 1.5;
  CHECK(load_error(row, "p.json").find("tables.calibration.gemm.bf16.shapes[0]: fractions must be in (0, 1]") != std::string::npos);

  // A row may leave a point out (null) and stop early; the rest of the curve still loads.
  auto gaps = doc;
  auto& r0 = gaps["tables"]["calibration"]["gemm"]["bf16"]["shapes"][0];
  r0[3] = nullptr;
  r0.erase(r0.size() - 1);
  CHECK(load_error(gaps, "p.json").empty());
}

TEST_CASE("the FP4 GEMM curve: optional, only on a GPU with an FP4 rate, checked like the others") {
  const std::string b200 = resolve_data_ref("hwprofiles", "b200", "", "");
  const nlohmann::json doc = load_json_file(b200);
  CHECK(load_error(doc, "b.json").empty());
  auto no_fp4 = doc;
  no_fp4["peak_flops_per_s"].erase("fp4");
  CHECK(load_error(no_fp4, "b.json").find("b.json: efficiency.gemm_compute_frac_by_m_fp4: set, but peak_flops_per_s has no fp4 rate") !=
        std::string::npos);
  auto bad = doc;
  bad["efficiency"]["gemm_compute_frac_by_m_fp4"][1][1] = 1.5;
  CHECK(load_error(bad, "b.json").find("gemm_compute_frac_by_m_fp4") != std::string::npos);
  // Without it, FP4 GEMMs take the generic curve.
  auto none = doc;
  none["efficiency"].erase("gemm_compute_frac_by_m_fp4");
  CHECK(load_error(none, "b.json").empty());
}

TEST_CASE("gemm_columns_json: one row per shape over the union of the m grids") {
  const GemmCurves curves = {{{4096, 4096}, {{1, 0.5}, {8, 0.25}, {64, 0.75}}}, {{1024, 4096}, {{1, 0.125}, {64, 0.5}}}};
  const nlohmann::json t = gemm_columns_json(curves);
  CHECK(t["m"] == nlohmann::json::parse("[1.0, 8.0, 64.0]"));
  CHECK(t["shapes"] == nlohmann::json::parse("[[1024.0, 4096.0, 0.125, null, 0.5], [4096.0, 4096.0, 0.5, 0.25, 0.75]]"));
}

TEST_CASE("SDPA tables per head dimension: own grid, else the nearest by ratio, and strict parsing") {
  const auto grid = [](double frac) {
    return nlohmann::json{{"kv_head_tokens", {1000.0, 1e6}}, {"context_tokens", {128.0, 8192.0}},
                          {"frac", {{frac, frac}, {frac, frac}}}};
  };
  const nlohmann::json prefill = nlohmann::json::array({{1e6, 0.5}, {1e12, 0.9}});
  nlohmann::json doc = {{"decode", grid(0.8)}, {"prefill_compute_frac_by_flops", prefill}, {"head_dim", 128},
                        {"other_head_dims", {{"96", {{"decode", grid(0.6)}}}, {"256", {{"decode", grid(0.4)}}}}}};
  const HwProfile::AttentionKernelTables t = parse_attention_kernel_tables(doc, "t.json", "sdpa");
  const auto frac_of = [&t](std::int64_t d) { return t.decode_frac_for(d).at(5000.0, 512.0); };
  CHECK(frac_of(128) == doctest::Approx(0.8));
  CHECK(frac_of(96) == doctest::Approx(0.6));
  CHECK(frac_of(256) == doctest::Approx(0.4));
  CHECK(frac_of(80) == doctest::Approx(0.6));    // 80 is nearer 96 than 128 by ratio
  CHECK(frac_of(112) == doctest::Approx(0.8));   // 112 is nearer 128
  CHECK(frac_of(512) == doctest::Approx(0.4));
  CHECK(frac_of(0) == doctest::Approx(0.8));     // MLA ops carry no head dim
  CHECK(t.prefill_compute_frac_by_flops.at(1e6) == doctest::Approx(0.5));  // one prefill table per family

  CHECK(HwProfile::prefill_head_dim_tile({64, 128, 256}, 96) == 128);
  CHECK(HwProfile::prefill_head_dim_tile({64, 128, 256}, 64) == 64);
  CHECK(HwProfile::prefill_head_dim_tile({64, 128, 256}, 300) == 300);  // past the last tile: its own
  CHECK(HwProfile::prefill_head_dim_tile({}, 96) == 96);
  nlohmann::json tiled = doc;
  tiled["prefill_head_dim_tiles"] = {64, 128, 256};
  CHECK(parse_attention_kernel_tables(tiled, "t.json", "sdpa").prefill_head_dim_tiles.size() == 3);
  tiled["prefill_head_dim_tiles"] = {128, 64};
  CHECK_THROWS_WITH_AS(parse_attention_kernel_tables(tiled, "t.json", "sdpa"), doctest::Contains("prefill_head_dim_tiles"), InputError);

  nlohmann::json no_dim = doc;
  no_dim.erase("head_dim");
  CHECK_THROWS_WITH_AS(parse_attention_kernel_tables(no_dim, "t.json", "sdpa"), doctest::Contains("other_head_dims"), InputError);
  nlohmann::json bad_key = doc;
  bad_key["other_head_dims"]["9x"] = {{"decode", grid(0.5)}};
  CHECK_THROWS_WITH_AS(parse_attention_kernel_tables(bad_key, "t.json", "sdpa"), doctest::Contains("other_head_dims.9x"), InputError);
  nlohmann::json extra = doc;
  extra["other_head_dims"]["96"]["prefill_compute_frac_by_flops"] = prefill;  // one prefill table per family
  CHECK_THROWS_WITH_AS(parse_attention_kernel_tables(extra, "t.json", "sdpa"), doctest::Contains("prefill_compute_frac_by_flops"),
                       InputError);
}

TEST_CASE("calibration.grouped_gemm fixed_s / fp8_fixed_s: added to the grouped kernel's time; bad values name file and key") {
  const std::string path = resolve_data_ref("hwprofiles", "h100-sxm", "", "");
  nlohmann::json doc = load_json_file(path);
  inline_hw_tables(doc, path);
  auto& g = doc["tables"]["calibration"]["grouped_gemm"];
  REQUIRE(g.contains("fp8_frac_by_tokens_per_expert"));
  GroupedGemmPoint p;
  p.model = "test";
  p.proj = "down";
  p.experts = 16;
  p.tokens_per_expert = 32;
  p.n = 2048;
  p.k = 768;
  p.quant = QuantScheme::fp8;
  g["fp8_fixed_s"] = 0.0;
  const double without = grouped_gemm_model_s(p, parse_hw_profile(doc, "p.json"));
  g["fp8_fixed_s"] = 1e-5;
  CHECK(grouped_gemm_model_s(p, parse_hw_profile(doc, "p.json")) == doctest::Approx(without + 1e-5).epsilon(1e-12));
  p.quant = QuantScheme::none;  // a bf16 grouped GEMM: no bf16 table on the H100, so neither applies
  CHECK(grouped_gemm_model_s(p, parse_hw_profile(doc, "p.json")) == grouped_gemm_model_s(p, load_hw_profile(path)));

  g["fp8_fixed_s"] = -1e-6;
  CHECK(load_error(doc, "p.json").find("p.json: tables.calibration.grouped_gemm.fp8_fixed_s: must be in") != std::string::npos);
  g["fp8_fixed_s"] = 0.5;
  CHECK(load_error(doc, "p.json").find("grouped_gemm.fp8_fixed_s: must be in") != std::string::npos);
  g["fp8_fixed_s"] = "10us";
  CHECK(load_error(doc, "p.json").find("grouped_gemm.fp8_fixed_s") != std::string::npos);
  g["fp8_fixed_s"] = 1e-5;
  g["fixed_s"] = 1e-5;  // the bf16 kernel's fixed time without the bf16 table it was fitted with
  CHECK(load_error(doc, "p.json").find("p.json: tables.calibration.grouped_gemm.fixed_s: needs frac_by_tokens_per_expert") !=
        std::string::npos);
}
