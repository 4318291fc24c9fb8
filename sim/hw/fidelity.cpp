#include "sim/hw/fidelity.hpp"

#include <algorithm>

namespace servesim {

namespace {

bool any_gemm_table(const HwProfile& hw) {
  return std::any_of(hw.gemm_tables.begin(), hw.gemm_tables.end(), [](const GemmTable& t) { return !t.empty(); });
}

}  // namespace

std::vector<FieldOrigin> field_origins(const HwProfile& hw) {
  const bool calibrated = hw.provenance.kind == "measured";
  const std::string where = calibrated ? "our calibrators on " + (hw.provenance.gpu.empty() ? hw.display_name : hw.provenance.gpu) +
                                             (hw.provenance.date.empty() ? "" : " (" + hw.provenance.date.substr(0, 10) + ")")
                                       : std::string();
  const std::string generic = "generic curve from published microbenchmarks of other GPUs, scaled to this datasheet";
  const auto measured_or = [&](bool measured, const std::string& otherwise_origin, const std::string& otherwise) {
    return measured ? std::make_pair(std::string("measured"), where) : std::make_pair(otherwise_origin, otherwise);
  };
  std::vector<FieldOrigin> out;
  out.push_back({"peak FLOP/s", "datasheet", "vendor datasheet (dense tensor-core rates)"});
  out.push_back({"HBM bandwidth and capacity", "datasheet", "vendor datasheet"});
  const auto gemm = measured_or(any_gemm_table(hw), "derived", generic);
  out.push_back({"GEMM efficiency", gemm.first, gemm.second});
  const auto attn = measured_or(!hw.attention_decode_frac.empty(), "derived", generic);
  out.push_back({"attention efficiency", attn.first, attn.second});
  const auto* sdpa = hw.attention_tables(AttentionKernel::sdpa);
  out.push_back({"PyTorch SDPA attention", sdpa ? "measured" : "not measured",
                 sdpa ? sdpa->source.substr(0, sdpa->source.find(',')) : "engines that use it fall back to the attention tables above"});
  const auto stream = measured_or(calibrated && !hw.memory_bw_frac_by_bytes.empty(), "derived", generic);
  out.push_back({"streaming-kernel bandwidth", stream.first, stream.second});
  const auto launch = measured_or(calibrated, "derived", "typical values for this GPU generation");
  out.push_back({"launch costs", launch.first, launch.second});
  out.push_back({"dependent-kernel gap", hw.dependent_kernel_gap_s > 0 ? "measured" : "not measured",
                 hw.dependent_kernel_gap_s > 0 ? "fitted to whole-model steps (calibrate independent)" : "0"});
  const bool quant = !hw.weight_only_tables[0].fused.empty() || !hw.weight_only_tables[1].fused.empty();
  const auto q = measured_or(quant, "derived", "analytic dequantise-and-GEMM model");
  out.push_back({"weight-only quantized GEMMs", q.first, q.second});
  const bool contention = hw.contention_copy_copy_slowdown > 0 || hw.contention_gemm_copy_slowdown > 0;
  out.push_back({"kernel contention", contention ? "measured" : "not measured", contention ? where : "no slowdown assumed"});
  out.push_back({"interconnect", hw.interconnect.measured.empty() ? "datasheet" : "measured",
                 hw.interconnect.measured.empty() ? "link model from datasheet bandwidths" : "NCCL timings fitted per collective"});
  return out;
}

std::string field_origins_line(const std::vector<FieldOrigin>& origins) {
  std::string line;
  for (const char* origin : {"measured", "datasheet", "derived", "not measured"}) {
    std::string fields;
    for (const FieldOrigin& f : origins) {
      if (f.origin == origin) fields += (fields.empty() ? "" : ", ") + f.field;
    }
    if (!fields.empty()) line += (line.empty() ? "" : "; ") + std::string(origin) + ": " + fields;
  }
  return line;
}

}  // namespace servesim
