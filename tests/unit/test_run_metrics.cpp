// RunMetrics and ClassMetrics merge every field of their declaration lists (metrics/run_metrics.hpp)
// as the list says, and have no field outside the lists: a counter added to a replica's metrics
// reaches the fleet's (multi-replica reports).
#include <doctest/doctest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "sim/metrics/run_metrics.hpp"

using namespace servesim;

namespace {

// A value for replica `r` (1 or 2) of a field, distinct per replica and from the default.
template <class T>
T sample(int r) {
  if constexpr (std::is_same_v<T, LogHistogram>) {
    T h;
    for (int i = 0; i < r; ++i) h.add(0.5 * r);
    return h;
  } else if constexpr (std::is_same_v<T, std::vector<ClassMetrics>>) {
    T classes(static_cast<std::size_t>(r));  // replica 2 saw one class more
    for (ClassMetrics& c : classes) c.completed = r;
    return classes;
  } else if constexpr (std::is_same_v<T, SampledSeries>) {
    T series;
    series.set(1000 * r, 0.25 * r);
    return series;
  } else {
    return static_cast<T>(r == 1 ? 3 : 5) + static_cast<T>(std::is_floating_point_v<T> ? 0.25 : 0);
  }
}

// What merging replicas 1 and 2 into an empty fleet must give, by merge kind.
template <Merge how, class T>
void check_merged(const T& fleet, const std::string& name) {
  INFO(name);
  const T one = sample<T>(1), two = sample<T>(2);
  if constexpr (how == Merge::sum) {
    CHECK(fleet == one + two);
  } else if constexpr (how == Merge::max) {
    CHECK(fleet == (one > two ? one : two));
  } else if constexpr (how == Merge::histogram) {
    CHECK(fleet.count() == one.count() + two.count());
    CHECK(fleet.max() == two.max());
  } else if constexpr (how == Merge::per_class) {
    REQUIRE(fleet.size() == 2);
    CHECK(fleet[0].completed == 3);  // both replicas' first class
    CHECK(fleet[1].completed == 2);  // only replica 2 had a second class
  } else {
    static_assert(how == Merge::fleet);  // the event loop sets the fleet's value itself (FleetKv)
    if constexpr (std::is_same_v<T, SampledSeries>) {
      CHECK(fleet.points().empty());
    } else {
      CHECK(fleet == T{});
    }
  }
}

#define DECLARE_MIRROR(type, name, how, path, meaning) type name{};
// The lists as plain structs: RunMetrics and ClassMetrics have the same size only if they hold no
// member outside their lists.
struct RunMirror {
  SERVESIM_RUN_METRICS(DECLARE_MIRROR)
};
struct ClassMirror {
  SERVESIM_CLASS_METRICS(DECLARE_MIRROR)
};
#undef DECLARE_MIRROR

}  // namespace

TEST_CASE("RunMetrics: every declared field merges as its list says, and none is undeclared") {
  static_assert(sizeof(RunMirror) == sizeof(RunMetrics), "a RunMetrics member outside SERVESIM_RUN_METRICS");
  static_assert(sizeof(ClassMirror) == sizeof(ClassMetrics), "a ClassMetrics member outside SERVESIM_CLASS_METRICS");
  RunMetrics one, two, fleet;
  int fields = 0, merged = 0;
#define SET(type, name, how, path, meaning) \
  one.name = sample<type>(1);               \
  two.name = sample<type>(2);               \
  ++fields;                                 \
  merged += Merge::how != Merge::fleet;
  SERVESIM_RUN_METRICS(SET)
#undef SET
  fleet.merge(one);
  fleet.merge(two);
#define CHECK_FIELD(type, name, how, path, meaning) check_merged<Merge::how>(fleet.name, #name);
  SERVESIM_RUN_METRICS(CHECK_FIELD)
#undef CHECK_FIELD
  MESSAGE(fields << " RunMetrics fields, " << merged << " combined by merge, " << fields - merged << " set by the event loop");
  CHECK(fields - merged == 2);  // kv_peak_used_blocks and kv_usage: FleetKv tracks the fleet's
}

TEST_CASE("ClassMetrics: every declared field merges as its list says") {
  ClassMetrics one, two, fleet;
#define SET(type, name, how, path, meaning) \
  one.name = sample<type>(1);               \
  two.name = sample<type>(2);
  SERVESIM_CLASS_METRICS(SET)
#undef SET
  fleet.merge(one);
  fleet.merge(two);
#define CHECK_FIELD(type, name, how, path, meaning) check_merged<Merge::how>(fleet.name, #name);
  SERVESIM_CLASS_METRICS(CHECK_FIELD)
#undef CHECK_FIELD
}
