// Cold start: time from launching the server to being ready for the first request. Weights stream
// from disk over the host link (pipelined: the slower of the two sets the rate), then the CUDA
// context, the framework's own initialisation and one CUDA graph capture per captured batch size.
#pragma once
#include <algorithm>
#include <cstdint>

#include "sim/config/scenario.hpp"

namespace servesim {

struct ColdStart {
  double weights_s = 0.0;
  double cuda_context_s = 0.0;
  double framework_init_s = 0.0;
  double graph_capture_s = 0.0;
  std::int64_t captured_batch_sizes = 0;
  double total_s = 0.0;
};

// `weight_bytes` of one instance; instances load in parallel through one disk and one host link.
inline ColdStart estimate_cold_start(const Scenario& s, double weight_bytes) {
  const EngineConfig& e = s.engine;
  const ColdStartConfig& c = e.profile.cold_start;
  ColdStart r;
  const double rate = std::min(c.disk_bandwidth_bytes_per_s, s.hw.host_link_bytes_per_s);
  r.weights_s = static_cast<double>(s.instances) * weight_bytes / rate;
  r.cuda_context_s = c.cuda_context_s;
  r.framework_init_s = c.framework_init_s;
  if (e.launch.cuda_graphs) {
    // Sizes above max_num_seqs are never used and not captured (vLLM); an empty list means graphs
    // are recorded lazily at first use, not at start-up.
    for (std::int64_t b : e.profile.cuda_graph_batch_sizes) r.captured_batch_sizes += b <= e.max_num_seqs ? 1 : 0;
  }
  r.graph_capture_s = static_cast<double>(r.captured_batch_sizes) * c.graph_capture_s_per_batch_size;
  r.total_s = r.weights_s + r.cuda_context_s + r.framework_init_s + r.graph_capture_s;
  return r;
}

}  // namespace servesim
