// Collective and point-to-point timing; see interconnect.hpp for the formulas.
#include "sim/hw/interconnect.hpp"

#include <algorithm>
#include <cmath>

namespace servesim {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::send_recv: return "send_recv";
    case Collective::all_to_all: return "all_to_all";
  }
  return "?";
}

const char* link_scope_name(LinkScope s) {
  switch (s) {
    case LinkScope::nvlink: return "nvlink";
    case LinkScope::pcie: return "pcie";
    case LinkScope::inter_node: return "inter_node";
  }
  return "?";
}

double MeasuredCollective::at(double bytes) const {
  const auto& p = bytes_seconds;
  if (bytes <= p.front().first) return p.front().second;
  if (bytes >= p.back().first) return p.back().second * bytes / p.back().first;
  const auto hi = std::lower_bound(p.begin(), p.end(), bytes,
                                   [](const std::pair<double, double>& q, double v) { return q.first < v; });
  const auto lo = hi - 1;
  const double f = std::log(bytes / lo->first) / std::log(hi->first / lo->first);
  return std::exp(std::log(lo->second) + f * std::log(hi->second / lo->second));
}

LinkScope Interconnect::scope_for(int gpus) const {
  if (gpus > gpus_per_node) return LinkScope::inter_node;
  if (gpus <= nvlink_domain_gpus) return LinkScope::nvlink;
  return LinkScope::pcie;
}

const LinkModel& Interconnect::link(LinkScope s) const {
  switch (s) {
    case LinkScope::nvlink: return nvlink;
    case LinkScope::pcie: return pcie;
    case LinkScope::inter_node: return inter_node;
  }
  return pcie;
}

double Interconnect::model_s(const LinkModel& l, Collective c, double bytes, int gpus) {
  const double n = static_cast<double>(gpus);
  switch (c) {
    case Collective::all_reduce: return l.latency_s + 2.0 * (n - 1.0) / n * bytes / l.bus_bandwidth_bytes_per_s;
    case Collective::all_gather:
    case Collective::all_to_all: return l.latency_s + (n - 1.0) / n * bytes / l.bus_bandwidth_bytes_per_s;
    case Collective::send_recv: return l.p2p_latency_s + bytes / l.p2p_bandwidth_bytes_per_s;
  }
  return 0.0;
}

double Interconnect::time_s(Collective c, double bytes, int gpus, LinkScope scope, bool custom) const {
  if (gpus <= 1 || bytes <= 0.0) return 0.0;
  if (custom) {
    for (const MeasuredCollective& m : measured) {
      if (m.custom && m.collective == c && m.gpus == gpus && m.scope == scope) return m.at(bytes);
    }
  }
  for (const MeasuredCollective& m : measured) {
    if (!m.custom && m.collective == c && m.gpus == gpus && m.scope == scope) return m.at(bytes);
  }
  return model_s(link(scope), c, bytes, gpus);
}

}  // namespace servesim
