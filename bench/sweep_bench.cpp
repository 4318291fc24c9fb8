// Sweep benchmark driver: 200 independent simulations (bench/million.json at varied arrival rates
// and seeds) run with tbb::parallel_for under tbb::global_control, so 1 and 2 threads compare the
// same work. Prints one line: threads, scenarios, wall seconds, and a checksum of the results
// (equal across thread counts: each run is deterministic and independent).
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: servesim_sweep_bench SCENARIO.json [THREADS=1] [SCENARIOS=200] [REQUESTS=2000]\n");
    return kExitBadInput;
  }
  const std::string base = argv[1];
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const int count = argc > 3 ? std::atoi(argv[3]) : 200;
  const long requests = argc > 4 ? std::atol(argv[4]) : 2000;
  if (threads < 1 || count < 1 || requests < 0) {
    std::fprintf(stderr, "servesim_sweep_bench: THREADS and SCENARIOS must be >= 1, REQUESTS >= 0\n");
    return kExitBadInput;
  }
  std::vector<Scenario> scenarios;
  try {
    for (int i = 0; i < count; ++i) {
      const double rate = 4.0 + 24.0 * (i % 20) / 19.0;  // light load to saturation
      scenarios.push_back(load_scenario(base, {"workload.num_requests=" + std::to_string(requests),
                                               "workload.arrival.rate_per_s=" + std::to_string(rate),
                                               "seed=" + std::to_string(i / 20)}));
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "servesim_sweep_bench: error: %s\n", e.what());
    return kExitBadInput;
  }
  std::vector<double> e2e_mean(scenarios.size());
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
  const auto start = std::chrono::steady_clock::now();
  tbb::parallel_for(std::size_t{0}, scenarios.size(), [&](std::size_t i) {
    e2e_mean[i] = simulate(scenarios[i]).metrics.e2e_s.mean();
  });
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double checksum = 0.0;
  for (double v : e2e_mean) checksum += v;
  std::printf("threads %d scenarios %d requests_each %ld wall_s %.3f checksum %.9g\n", threads, count, requests, wall_s,
              checksum);
  return kExitOk;
}
