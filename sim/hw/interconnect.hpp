// Interconnect: how long collectives (all-reduce, all-gather) and point-to-point copies between
// GPUs take, from link parameters (latency + bytes over bus bandwidth, ring algorithm) or, where a
// hardware profile carries them, from measured tables by message size and GPU count.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace servesim {

enum class Collective { all_reduce, all_gather, send_recv, all_to_all };
const char* collective_name(Collective c);

// Which link a group of GPUs talks over. nvlink: all inside one NVLink domain (NVSwitch node or
// bridged pair); pcie: one node without NVLink between them; inter_node: across nodes (the
// node-to-node network is the ring's bottleneck).
enum class LinkScope { nvlink, pcie, inter_node };
const char* link_scope_name(LinkScope s);

// One link class. Bus bandwidth is nccl-tests' busbw: a ring all-reduce of B bytes over n GPUs
// takes latency + 2(n-1)/n * B / bus_bandwidth; an all-gather producing B bytes in total takes
// latency + (n-1)/n * B / bus_bandwidth; a send/recv of B bytes takes p2p_latency + B / p2p_bandwidth;
// an all-to-all where each GPU sends B bytes in all (its own share included) takes
// latency + (n-1)/n * B / bus_bandwidth (nccl-tests' alltoall busbw; expert-parallel dispatch).
struct LinkModel {
  std::string name;
  double bus_bandwidth_bytes_per_s = 0.0;
  double latency_s = 0.0;
  double p2p_bandwidth_bytes_per_s = 0.0;
  double p2p_latency_s = 0.0;
};

// A measured curve (e.g. from nccl-tests or calibrate/): seconds per operation against message
// bytes for one collective, GPU count and scope. Interpolated piecewise-linearly in log-log space;
// below the smallest size it is flat (latency floor), above the largest it scales with size.
struct MeasuredCollective {
  Collective collective = Collective::all_reduce;
  int gpus = 2;
  LinkScope scope = LinkScope::nvlink;
  // An engine's own collective kernel (vLLM's custom all-reduce), used only for ops that ask for
  // it (Op::comm_custom); otherwise NCCL's.
  bool custom = false;
  std::vector<std::pair<double, double>> bytes_seconds;  // sizes strictly increasing, times > 0
  double at(double bytes) const;
};

struct Interconnect {
  int gpus_per_node = 8;
  int nvlink_domain_gpus = 0;  // GPUs reachable over NVLink from each GPU (itself included); 0 or 1 = none
  LinkModel nvlink, pcie, inter_node;
  std::vector<MeasuredCollective> measured;  // preferred over the link model where one matches
  std::string provenance;                    // where the link numbers came from (one line)

  // The link a collective over `gpus` GPUs (packed onto as few nodes as possible) runs on.
  LinkScope scope_for(int gpus) const;
  const LinkModel& link(LinkScope s) const;
  // Seconds for one operation; 0 for gpus <= 1 or bytes <= 0. For send_recv, `gpus` is 2 and
  // `scope` says which link joins the two GPUs. `custom`: the engine runs its own kernel, timed by
  // a matching custom curve where there is one (else as NCCL).
  double time_s(Collective c, double bytes, int gpus, LinkScope scope, bool custom = false) const;
  double time_s(Collective c, double bytes, int gpus) const { return time_s(c, bytes, gpus, scope_for(gpus)); }
  // The link model alone (no measured table): what the fits in tests/validation compare.
  static double model_s(const LinkModel& link, Collective c, double bytes, int gpus);
};

}  // namespace servesim
