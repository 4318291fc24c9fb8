// Quantized GEMM kernel tables from measure_quant.py's output; see quant_kernels_fit.hpp.
#include "sim/calib/quant_kernels_fit.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/core/error.hpp"
#include "sim/hw/cost_model.hpp"
#include "sim/io/hw_io.hpp"

namespace servesim {

namespace {

// A timed kernel of measure_quant.py: its section, its key in each point, the kernel it is,
// the scheme its op is priced as (format), and the kernels one call launches.
struct MeasuredKernel {
  const char* section;
  const char* key;
  QuantKernel kernel;
  QuantScheme scheme;
  int launches;
  const char* what;
};
// int8: torch._int_mm returns int32; the scales are applied after it by torch ops (C * sa, * sw,
// .to(bf16): 3 more kernels), int8_dequant_s, which is what a plain PyTorch W8A8 layer runs.
// W4A16: tinygemm's group-128 layout priced as GPTQ's (scales and zero points per group).
constexpr MeasuredKernel kGemmKernels[] = {
    {"gemm", "fp8_tensor_s", QuantKernel::torch_scaled_mm, QuantScheme::fp8, 1,
     "torch._scaled_mm, fp8 e4m3, one scale per tensor, use_fast_accum=True, bf16 out"},
    {"gemm", "fp8_row_s", QuantKernel::torch_scaled_mm_rowwise, QuantScheme::fp8, 1,
     "torch._scaled_mm, fp8 e4m3, per-token x per-channel scales, use_fast_accum=True, bf16 out"},
    {"gemm", "int8_dequant_s", QuantKernel::torch_int_mm, QuantScheme::int8, 4,
     "torch._int_mm (int8 -> int32, M <= 16 run padded to 32) then the scales in torch ops (3 kernels)"},
    {"gemm", "w4a16_tinygemm_s", QuantKernel::tinygemm, QuantScheme::w4a16_gptq, 1,
     "torch._weight_int4pack_mm (tinygemm), group 128, bf16 activations"},
    {"fp8_block", "fp8_block_s", QuantKernel::torch_scaled_mm_blockwise, QuantScheme::fp8_block, 1,
     "torch._scaled_mm, fp8 e4m3 with block-wise scales (1x128 activation groups, 128x128 weight blocks; fast accumulation "
     "refused on this path; M < 16 run padded to 16), bf16 out; activation quantization not included"},
    {"gemm8", "triton_int8_s", QuantKernel::tuned_int8, QuantScheme::int8, 1,
     "int8 x int8 -> int32 GEMM with the scales in its epilogue, bf16 out: calibrate/quant/triton_kernels.py "
     "_gemm_any_kernel, the fastest of its tiles (and split-K, its output zeroing included) at each M"},
};

double number(const nlohmann::json& rec, const char* key, const std::string& file, const std::string& where) {
  const auto it = rec.find(key);
  if (it == rec.end() || !it->is_number() || !(it->get<double>() > 0.0)) throw InputError(file, where + "." + key, "missing or not a number > 0");
  return it->get<double>();
}

std::string text(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The held-out points through a profile with the fitted tables (by kernel index into
// kGemmKernels) and the cost model.
void predict_held_out(const std::map<std::size_t, GemmCurves>& tables, const HwProfile& hw, std::vector<QuantKernelHoldout>& held) {
  HwProfile fitted = hw;
  for (const auto& [j, c] : tables) {
    std::vector<GemmShapeCurve> shapes;
    for (const auto& [nk, pts] : c) shapes.push_back({nk.first, nk.second, EfficiencyTable(pts)});
    const MeasuredKernel& mk = kGemmKernels[j];
    HwProfile::QuantKernelTable& t = fitted.quant_kernel_tables[static_cast<std::size_t>(mk.kernel)][*quant_format(mk.scheme)];
    t.frac = GemmTable(std::move(shapes));
    t.launches = mk.launches;
  }
  for (QuantKernelHoldout& h : held) {
    Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
    for (const MeasuredKernel& mk : kGemmKernels) {
      if (h.kernel == quant_kernel_name(mk.kernel)) p.quant = mk.scheme;
    }
    p.group_size = 128;
    Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(h.m), static_cast<std::int64_t>(h.n), static_cast<std::int64_t>(h.k), p);
    op.quant_kernel = *parse_quant_kernel(h.kernel);
    h.predicted_s = estimate(op, fitted, Dtype::bf16).time_s;
  }
}

}  // namespace

QuantKernelFit fit_quant_kernels(const nlohmann::json& doc, const std::string& file, const HwProfile& hw,
                                 const std::string& command, int holdout_every) {
  if (!doc.is_object() || text(doc, "schema") != "servesim-quant-kernels/1") {
    throw InputError(file, "schema", "must be servesim-quant-kernels/1 (calibrate/quant/measure_quant.py's quant_kernels.json)");
  }
  const auto sections = doc.find("sections");
  if (sections == doc.end() || !sections->contains("gemm")) throw InputError(file, "sections.gemm", "missing");
  const nlohmann::json& gemm = (*sections)["gemm"];
  QuantKernelFit fit;
  fit.date = text(gemm, "date_utc");
  fit.gpu = gemm.contains("gpu") ? text(gemm["gpu"], "name") : "";

  // (kernel index, n, k) -> (m, time) over M, from each kernel's section (one without points: not measured).
  std::map<std::tuple<std::size_t, double, double>, std::vector<std::pair<double, double>>> curves;
  for (const char* name : {"gemm", "fp8_block", "gemm8"}) {
    if (!sections->contains(name)) continue;
    const auto points = (*sections)[name].find("points");
    const std::string at = std::string("sections.") + name + ".points";
    if (points == (*sections)[name].end() || !points->is_array() || points->empty()) throw InputError(file, at, "missing or empty");
    for (std::size_t i = 0; i < points->size(); ++i) {
      const nlohmann::json& p = (*points)[i];
      const std::string where = at + "[" + std::to_string(i) + "]";
      const double m = number(p, "m", file, where), n = number(p, "n", file, where), k = number(p, "k", file, where);
      for (std::size_t j = 0; j < std::size(kGemmKernels); ++j) {
        if (name != std::string(kGemmKernels[j].section) || !p.contains(kGemmKernels[j].key)) continue;  // not timed here
        curves[{j, n, k}].emplace_back(m, number(p, kGemmKernels[j].key, file, where));
      }
    }
  }

  std::map<std::size_t, GemmCurves> tables;  // by kernel index
  for (auto& [key, pts] : curves) {
    const auto& [j, n, k] = key;
    const MeasuredKernel& mk = kGemmKernels[j];
    std::sort(pts.begin(), pts.end());
    Precision p{Dtype::bf16, Dtype::bf16, Dtype::bf16};
    p.quant = mk.scheme;
    p.group_size = 128;
    const auto d8 = w8a8_dtype(mk.scheme);
    const double peak = d8 ? hw.peak_flops(*d8) : hw.peak_flops(Dtype::bf16);
    auto& table = tables[j][{n, k}];
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const auto [m, t] = pts[i];
      Op op = make_gemm_op("gemm", 1, static_cast<std::int64_t>(m), static_cast<std::int64_t>(n), static_cast<std::int64_t>(k), p);
      op.quant_kernel = mk.kernel;
      // As calibrate fit holds out points: every holdout_every-th from the 2nd, never the last.
      if (holdout_every > 0 && i % static_cast<std::size_t>(holdout_every) == 1 && i + 1 < pts.size()) {
        fit.held.push_back({quant_kernel_name(mk.kernel), kQuantFormatNames[*quant_format(mk.scheme)], m, n, k, t, 0.0});
        continue;
      }
      const double roofline = std::max(op.flops / peak, op.bytes / hw.hbm_bandwidth_bytes_per_s);
      const double busy = t - mk.launches * hw.kernel_overhead_s;
      table.emplace_back(m, std::clamp(busy > 0.0 ? roofline / busy : 1.0, 1e-3, 1.0));
    }
  }
  // Each table cites its own section's run: sections measured apart are merged into one file,
  // each keeping the command and date it ran with.
  const auto measured = [&](const char* section) {
    const nlohmann::json& sec = (*sections)[section];
    const std::string run = sec.contains("command") ? text(sec, "command") : text(doc, "command");
    const std::string gpu = sec.contains("gpu") ? text(sec["gpu"], "name") : fit.gpu;
    return " measured by calibrate/quant/measure_quant.py (" + run + ") on " + gpu + ", " + text(sec, "date_utc") +
           ", torch " + text(sec, "torch") + ", CUDA " + text(sec, "cuda") + "; fitted by: " + command;
  };
  for (const auto& [j, c] : tables) {
    const MeasuredKernel& mk = kGemmKernels[j];
    nlohmann::json t = gemm_columns_json(c);
    t["launches"] = mk.launches;
    t["source"] = std::string(mk.what) + measured(mk.section);
    fit.tables[quant_kernel_name(mk.kernel)][kQuantFormatNames[*quant_format(mk.scheme)]] = t;
  }

  predict_held_out(tables, hw, fit.held);
  return fit;
}

}  // namespace servesim
