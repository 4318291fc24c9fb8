// Routing policies and their registry.
#include "sim/serve/router.hpp"

#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "sim/config/scenario_keys.hpp"

namespace servesim {

namespace {

std::size_t least_outstanding(const std::vector<ReplicaLoad>& loads) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < loads.size(); ++i) {
    if (loads[i].outstanding < loads[best].outstanding) best = i;
  }
  return best;
}

class RoundRobin final : public Router {
 public:
  bool reads_loads() const override { return false; }
  std::size_t route(const std::vector<ReplicaLoad>& loads, std::int64_t) override { return next_++ % loads.size(); }

 private:
  std::size_t next_ = 0;
};

class LeastOutstanding final : public Router {
 public:
  std::size_t route(const std::vector<ReplicaLoad>& loads, std::int64_t) override { return least_outstanding(loads); }
};

class LeastKv final : public Router {
 public:
  bool reads_kv_demand() const override { return true; }
  std::size_t route(const std::vector<ReplicaLoad>& loads, std::int64_t) override {
    std::size_t best = 0;
    for (std::size_t i = 1; i < loads.size(); ++i) {
      const double a = loads[i].kv_load_frac(), b = loads[best].kv_load_frac();
      if (a < b || (a == b && loads[i].outstanding < loads[best].outstanding)) best = i;
    }
    return best;
  }
};

// SGLang-router style cache-aware routing without the radix tree: the router remembers where each
// prefix went, so later requests with it land where its KV was computed, unless that replica is
// overloaded relative to the least loaded one.
class PrefixAffinity final : public Router {
 public:
  explicit PrefixAffinity(const RouterConfig& c) : abs_(c.balance_abs_threshold), rel_(c.balance_rel_threshold) {}
  std::size_t route(const std::vector<ReplicaLoad>& loads, std::int64_t prefix_id) override {
    const std::size_t least = least_outstanding(loads);
    if (prefix_id < 0) return least;
    const auto it = home_.find(prefix_id);
    if (it != home_.end()) {
      const double load = static_cast<double>(loads[it->second].outstanding);
      const double min_load = static_cast<double>(loads[least].outstanding);
      if (!(load > min_load + abs_ && load > rel_ * min_load)) return it->second;
    }
    home_[prefix_id] = least;
    return least;
  }

 private:
  double abs_, rel_;
  std::unordered_map<std::int64_t, std::size_t> home_;
};

}  // namespace

const Registry<RouterEntry>& routers() {
  const auto entry = [](std::string name, std::string description, std::vector<RegistryParam> params, auto make) {
    return registry_entry<RouterEntry>(std::move(name), std::move(description), std::move(params), make);
  };
  static const Registry<RouterEntry> registry(
      "router",
      {entry("round_robin", "router: replicas in turn", {},
             [](const RouterConfig&) -> std::unique_ptr<Router> { return std::make_unique<RoundRobin>(); }),
       entry("least_outstanding", "router: the replica with the fewest unfinished requests (ties: lowest index)", {},
             [](const RouterConfig&) -> std::unique_ptr<Router> { return std::make_unique<LeastOutstanding>(); }),
       entry("least_kv", "router: the replica with the lowest KV load, (used blocks + blocks its waiting requests need) / capacity", {},
             [](const RouterConfig&) -> std::unique_ptr<Router> { return std::make_unique<LeastKv>(); }),
       entry("prefix_affinity",
             "router: where the request's shared prefix went before (its KV is cached there), else least outstanding",
             {key_param("router.balance_abs_threshold"), key_param("router.balance_rel_threshold")},
             [](const RouterConfig& c) -> std::unique_ptr<Router> { return std::make_unique<PrefixAffinity>(c); })});
  return registry;
}

std::unique_ptr<Router> make_router(const RouterConfig& c) {
  const RouterEntry* e = routers().find(c.impl);
  if (!e) throw std::logic_error(routers().unknown(c.impl));  // the parser rejects unknown names first
  return e->make(c);
}

}  // namespace servesim
