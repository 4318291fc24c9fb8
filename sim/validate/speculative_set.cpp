// Speculative decoding's step costs against the H100 measurements; see speculative_set.hpp.
#include "sim/validate/speculative_set.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "sim/analysis/step_query.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/model/speculative.hpp"
#include "sim/validate/bounds.hpp"

namespace servesim {

namespace {

std::string point(double b, double k, double c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "B=%.0f k=%.0f C=%.0f", b, k, c);
  return buf;
}

// `model` as the independent set's decode steps predict it: the SDPA tables without its head
// layout, the GEMM tables without its shapes, the torch engine fitted to the set's other models.
StepQuery held_out_query(const IndependentSet& set, const HwProfile& hw, const std::string& model) {
  const ModelSpec m = independent_query(model, hw, nullptr).model;
  const HwProfile h = with_sdpa_fit(set, without_gemm_shapes(hw, gemm_shapes_of(m)), {layout_of(m)});
  StepQuery q = independent_query(model, h, "torch-cudagraph");
  apply_torch_fit(q, fit_torch_engines(set, h, {model}));
  return q;
}

const nlohmann::json& section(const nlohmann::json& doc, const std::string& name, const std::string& file) {
  if (!doc.contains("sections") || !doc["sections"].contains(name) || !doc["sections"][name].is_object()) {
    throw InputError(file, "sections." + name, "missing");
  }
  return doc["sections"][name];
}

// Verify passes of `target` (k >= 1), and each over the decode step (k = 0) of its batch and context.
void add_verify_rows(const nlohmann::json& doc, const std::string& file, const IndependentSet& set, const HwProfile& hw,
                     const std::string& target, ValidationResult& out) {
  const std::string name = "verify_" + target;
  const auto& rows = row_array(section(doc, name, file), "points", file, name);
  const StepQuery q = held_out_query(set, hw, target);
  std::map<std::tuple<double, double, double>, double> measured;  // (batch, context, k) -> seconds
  for (const auto& r : rows) {
    const std::string where = name + ".points";
    measured[{row_positive(r, "batch", file, where), row_positive(r, "context", file, where), r.value("k", 0.0)}] =
        row_positive(r, "graph_s", file, where);
  }
  for (const auto& [key, seconds] : measured) {
    const auto [b, c, k] = key;
    if (k == 0.0) continue;
    const auto batch = static_cast<std::int64_t>(b), context = static_cast<std::int64_t>(c);
    const double predicted = time_verify(q, batch, context, static_cast<std::int64_t>(k)).step.time_s;
    out.rows.push_back({"step", "torch-cudagraph", "verify", target, point(b, k, c), seconds, predicted});
    const auto base = measured.find({b, c, 0.0});
    if (base == measured.end()) continue;
    const double predicted_base = time_decode(q, batch, context, false).step.time_s;
    out.rows.push_back({"step", "torch-cudagraph", "verify / decode", target, point(b, k, c), seconds / base->second,
                        predicted / predicted_base});
  }
}

// A draft model's decode steps, and an EAGLE head's steps (one layer of the target plus its fc).
void add_drafter_rows(const nlohmann::json& doc, const std::string& file, const IndependentSet& set, const HwProfile& hw,
                      ValidationResult& out) {
  const nlohmann::json& drafts = section(doc, "drafts", file);
  for (const char* kind : {"drafts", "eagle"}) {
    if (!drafts.contains(kind)) throw InputError(file, std::string("sections.drafts.") + kind, "missing");
    const bool head = std::string(kind) == "eagle";
    for (const auto& [name, entry] : drafts[kind].items()) {
      const std::string where = std::string("sections.drafts.") + kind + "." + name;
      StepQuery q = held_out_query(set, hw, name);
      if (head) q.model = speculative_head(q.model, false);
      for (const auto& r : row_array(entry, "points", file, where)) {
        const double b = row_positive(r, "batch", file, where), c = row_positive(r, "context", file, where);
        double predicted = time_decode(q, static_cast<std::int64_t>(b), static_cast<std::int64_t>(c), false).step.time_s;
        if (head) {
          // The head's input projection, as the simulator's drafter prices it (serve/speculative_step.cpp).
          const Op fc = make_gemm_op("draft_fc", 1, static_cast<std::int64_t>(b), q.model.hidden_size, 2 * q.model.hidden_size,
                                     q.precision);
          predicted += estimate(fc, q.hw, q.precision.weights).time_s;
        }
        char pt[48];
        std::snprintf(pt, sizeof pt, "B=%.0f C=%.0f", b, c);
        out.rows.push_back({"step", "torch-cudagraph", head ? "eagle head" : "draft decode", q.model.name, pt,
                            row_positive(r, "graph_s", file, where), predicted});
      }
    }
  }
}

}  // namespace

ValidationResult validate_speculative(const nlohmann::json& doc, const std::string& file, const IndependentSet& set,
                                      const HwProfile& hw) {
  if (!doc.is_object() || doc.value("schema", "") != "servesim-specdec/1") throw InputError(file, "schema", "must be servesim-specdec/1");
  ValidationResult out;
  for (const char* target : {"llama-3-8b", "llama-2-7b"}) add_verify_rows(doc, file, set, hw, target, out);
  add_drafter_rows(doc, file, set, hw, out);
  return out;
}

// data/validation/bounds.json's table speculative/h100-sxm (each bound's why and history there).
std::vector<ValidationBound> speculative_bounds() { return bound_table("speculative/h100-sxm"); }

std::string default_specdec_file() {
  return (std::filesystem::path(data_dir()) / "calibrate" / "results" / "h100" / "specdec.json").string();
}

}  // namespace servesim
