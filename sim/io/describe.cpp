// See describe.hpp.
#include "sim/io/describe.hpp"

#include <cmath>
#include <cstdio>

#include "sim/model/quant.hpp"

namespace servesim {

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
// Four significant digits, trailing zeros dropped ("11.35", "8", "405", "0.5").
std::string digits4(double v) { return fmt("%.4g", v); }
}  // namespace

std::string format_duration(double s, const char* micro) {
  if (s == 0.0) return "0 s";
  if (std::fabs(s) < 1e-3) return digits4(s * 1e6) + " " + micro;
  if (std::fabs(s) < 1.0) return digits4(s * 1e3) + " ms";
  return digits4(s) + " s";
}

std::string format_bytes(double b) {
  if (std::fabs(b) >= 1e9) return digits4(b / 1e9) + " GB";
  if (std::fabs(b) >= 1e6) return digits4(b / 1e6) + " MB";
  if (std::fabs(b) >= 1e3) return digits4(b / 1e3) + " kB";
  return fmt("%.0f", b) + " B";
}

std::string describe_arrival(const ArrivalConfig& a) {
  using K = ArrivalConfig::Kind;
  switch (a.kind) {
    case K::poisson: return "poisson, " + fmt("%g", a.rate_per_s) + " req/s";
    case K::gamma: return "gamma, " + fmt("%g", a.rate_per_s) + " req/s, cv " + fmt("%g", a.cv);
    case K::constant: return "constant, " + fmt("%g", a.rate_per_s) + " req/s";
    case K::on_off: return "on/off, " + fmt("%g", a.rate_per_s) + " req/s for " + fmt("%g", a.on_s) + " s, off " + fmt("%g", a.off_s) + " s";
    case K::ramp:
      return "ramp " + fmt("%g", a.start_rate_per_s) + " to " + fmt("%g", a.end_rate_per_s) + " req/s over " + fmt("%g", a.ramp_s) + " s";
    case K::trace: return "trace replay";
    case K::all_at_once: return "all at t = 0";
    case K::concurrency:
      return "closed loop, " + fmt("%lld", static_cast<long long>(a.clients)) + " clients" +
             (a.think_time_s > 0.0 ? ", think " + fmt("%g", a.think_time_s) + " s" : std::string());
    case K::stages: {
      std::string text = fmt("%zu", a.stages.size()) + " stages:";
      for (std::size_t k = 0; k < a.stages.size(); ++k) {
        text += std::string(k ? ";" : "") + " " + (a.stages[k].poisson ? "poisson " : "constant ") + fmt("%g", a.stages[k].rate_per_s) +
                " req/s for " + fmt("%g", a.stages[k].duration_s) + " s";
      }
      return text;
    }
  }
  return "?";
}

std::string describe_lengths(const LengthDist& d) {
  const std::string range = " in [" + std::to_string(d.min_tokens) + ", " + std::to_string(d.max_tokens) + "]";
  switch (d.kind) {
    case LengthDist::Kind::fixed: return "fixed " + std::to_string(d.value_tokens);
    case LengthDist::Kind::uniform: return "uniform" + range;
    case LengthDist::Kind::lognormal: return "lognormal, mean " + fmt("%g", d.mean_tokens) + ", sigma " + fmt("%g", d.sigma) + range;
    case LengthDist::Kind::normal: return "normal, mean " + fmt("%g", d.mean_tokens) + ", sd " + fmt("%g", d.stddev_tokens) + range;
    case LengthDist::Kind::zipf: return "zipf, s " + fmt("%g", d.zipf_s) + range;
    case LengthDist::Kind::empirical: return "empirical, " + std::to_string(d.tokens.size()) + " values";
    case LengthDist::Kind::trace: return "from the trace";
  }
  return "?";
}

std::string describe_slo(const SloConfig& s) {
  std::string targets;
  const std::pair<const char*, double> all[] = {{"TTFT", s.ttft_s}, {"TPOT", s.tpot_s}, {"E2E", s.e2e_s}};
  for (const auto& [name, v] : all) {
    if (v > 0.0) targets += (targets.empty() ? "" : ", ") + std::string(name) + " <= " + format_duration(v);
  }
  if (targets.empty()) return "no latency target";
  return targets + " at p" + fmt("%g", 100.0 * s.percentile) + "; >= " + fmt("%g", 100.0 * s.min_success_frac) +
         "% of requests completed";
}

std::string describe_precision(const Precision& p, QuantKernel experts_kernel) {
  std::string out = dtype_name(p.weights);
  if (p.quant != QuantScheme::none) {
    const auto gemm = w8a8_dtype(p.quant);
    // The experts' MoE kernel decides their activations (MXFP4 x bf16, x MXFP8).
    const std::string gemms = dtype_name(gemm.value_or(p.activations)) + std::string(" GEMMs");
    const std::string experts = std::string(kernel_activation_name(p.quant, experts_kernel, p.activations)) +
                                " activations through the engine's " + quant_kernel_name(experts_kernel);
    const std::string compute = experts_kernel == QuantKernel::auto_       ? gemms
                                : p.quant_scope == QuantScope::experts     ? experts
                                                                           : gemms + ", experts x " + experts;
    out = std::string(quant_name(p.quant)) + " (" + std::to_string(weight_bits(p.quant, p.weights)) + "-bit weights, " + compute +
          "; base " + out +
          (p.quant_scope == QuantScope::experts ? "; routed experts only, other projections " + out : std::string()) + ")";
  }
  if (p.kv_cache != p.weights) out += std::string(", KV cache ") + dtype_name(p.kv_cache);
  return out;
}

std::string describe_layout(const ParallelConfig& p) {
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  std::string out = "tp " + n(p.tensor_parallel_size);
  if (p.pipeline_parallel_size > 1) out += ", pp " + n(p.pipeline_parallel_size);
  if (p.enable_attention_dp) out += ", attention DP " + n(p.attention_dp_size());
  if (p.expert_parallel_size > 1) out += ", experts over " + n(p.expert_parallel_size);
  if (p.instances_per_gpu > 1) out += ", " + n(p.instances_per_gpu) + " instances per GPU";
  return out;
}

}  // namespace servesim
