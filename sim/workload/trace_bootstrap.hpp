// A trace's requests resampled with replacement, for `run --replications` on a trace (the
// replications after the first): a fixed trace draws nothing from the seed, so without it every
// replication is the same run and the interval is 0. Row i keeps its arrival time and takes the
// request (lengths, class, prefix) of a row drawn uniformly from the whole trace. Arrival times
// are not resampled: drawing whole rows would send a drawn-twice row's copies at the same instant
// (bursts the trace never had) and drop others' (gaps), which biases queueing, and resampling the
// gaps independently would erase the trace's bursts and trends. The spread is therefore that of
// the request mix under the trace's own arrivals.
#pragma once
#include <cstdint>
#include <memory>

#include "sim/config/trace_rows.hpp"

namespace servesim {

// Reads `rows` whole, then gives its rows resampled as above from (seed, pass): pass k is the
// k-th replay of a looping trace, each drawn afresh. Deterministic: the same arguments give the
// same rows on every machine.
std::unique_ptr<TraceRows> bootstrap_rows(std::unique_ptr<TraceRows> rows, std::uint64_t seed, std::uint64_t pass);

}  // namespace servesim
