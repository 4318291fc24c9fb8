// Request routers: which replica (of a pool) a new request goes to. Policies see only a load
// summary per replica, are deterministic (ties go to the lowest index) and are one entry each in
// the registry routers() (router.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/core/registry.hpp"

namespace servesim {

// What a router knows about one replica when a request arrives.
struct ReplicaLoad {
  std::int64_t outstanding = 0;         // requests routed there and not finished (waiting, running, in transfer)
  std::int64_t kv_used_blocks = 0;      // allocated now
  std::int64_t kv_demand_blocks = 0;    // blocks its waiting requests will need
  std::int64_t kv_capacity_blocks = 1;
  double kv_load_frac() const {
    return static_cast<double>(kv_used_blocks + kv_demand_blocks) / static_cast<double>(kv_capacity_blocks);
  }
};

class Router {
 public:
  virtual ~Router() = default;
  // Index into `loads` (never empty) for a request whose shared prefix is `prefix_id` (-1: none).
  virtual std::size_t route(const std::vector<ReplicaLoad>& loads, std::int64_t prefix_id) = 0;
  // Whether route() reads ReplicaLoad::kv_demand_blocks (a walk over each replica's waiting
  // queue per arrival, so the event loop fills it only for a router that asks).
  virtual bool reads_kv_demand() const { return false; }
  // Whether route() reads the loads at all (round robin reads only their count): the event loop
  // skips the O(replicas) load summary per arrival for a router that does not.
  virtual bool reads_loads() const { return true; }
};

struct RouterEntry : RegistryEntry {
  std::unique_ptr<Router> (*make)(const RouterConfig& config) = nullptr;
};
const Registry<RouterEntry>& routers();
// The router config.impl names (a registered name: the parser checks it first).
std::unique_ptr<Router> make_router(const RouterConfig& config);

}  // namespace servesim
