// Short descriptions for people: durations and sizes in readable units, and one-line summaries of
// a workload's arrivals, lengths and SLO (report.html, plan, step, roofline).
#pragma once
#include <string>

#include "sim/config/scenario.hpp"

namespace servesim {

// 0.01135 -> "11.35 ms", 8e-6 -> "8 us", 3.2 -> "3.2 s" (4 significant digits).
// `micro` is the microsecond symbol ("us" in terminal text, "µs" in HTML).
std::string format_duration(double seconds, const char* micro = "us");
// Bytes in decimal units: 1.38e11 -> "138 GB", 1.6e7 -> "16 MB" (4 significant digits).
std::string format_bytes(double bytes);

std::string describe_arrival(const ArrivalConfig& a);  // "poisson, 5 req/s"
std::string describe_lengths(const LengthDist& d);     // "lognormal, mean 600, sigma 0.8 in [16, 3000]"
// "TTFT <= 2 s, TPOT <= 100 ms at p99; >= 99.9% of requests completed", or "no latency target".
std::string describe_slo(const SloConfig& s);
// The precision a run computes in: "bf16"; "fp8 (8-bit weights, fp8 GEMMs; base bf16)";
// "w4a16-awq (4-bit weights, bf16 GEMMs; base bf16), KV cache fp8" (the KV dtype when it is not
// the base dtype).
// experts_kernel: the engine's MoE kernel for the routed experts (moe_quant_kernels; auto_: none named).
std::string describe_precision(const Precision& p, QuantKernel experts_kernel = QuantKernel::auto_);
// How one replica splits the model: "tp 2"; pp, attention DP, experts over N and instances per
// GPU when set.
std::string describe_layout(const ParallelConfig& p);

}  // namespace servesim
