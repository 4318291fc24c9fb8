// Measured validation of the interconnect model: NCCL all-reduce and send/recv times from vidur's
// A100 and H100 clusters (data/vidur/network, median of each size) against
// latency + bytes / bus bandwidth (ring: 2(n-1)/n for all-reduce). For each link the two
// parameters are fitted (least squares in relative error, every octave of message size weighted
// alike) on the even rows of the training GPU counts; the error is reported on the odd rows and on
// GPU counts left out of the fit. The bundled profiles must carry the fitted values (within 2%):
// that is where their interconnect numbers come from.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/core/median.hpp"
#include "sim/hw/interconnect.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/hw_io.hpp"
#include "../paths.hpp"

using namespace servesim;

namespace {

using Key = std::pair<int, int>;  // (num_workers, devices_per_node)
using Curve = std::vector<std::pair<double, double>>;  // (bytes, seconds), sorted

std::map<Key, Curve> load_csv(const std::string& dir, const std::string& op) {
  const std::string path = std::string(servesim::test::reference_dir()) + "/vidur/network/" + dir + "/" + op + ".csv";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  {
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) header.push_back(cell);
  }
  const auto col = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    REQUIRE_MESSAGE(it != header.end(), path << ": no column " << name);
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t c_n = col("num_workers"), c_dpn = col("devices_per_node"), c_size = col("size"),
                    c_t = col("time_stats." + op + ".median");
  std::map<Key, Curve> out;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (cells.size() < header.size()) continue;
    out[{std::stoi(cells[c_n]), std::stoi(cells[c_dpn])}].emplace_back(std::stod(cells[c_size]), 1e-3 * std::stod(cells[c_t]));
  }
  for (auto& [k, v] : out) std::sort(v.begin(), v.end());
  return out;
}

double traffic_factor(Collective c, int n) { return c == Collective::all_reduce ? 2.0 * (n - 1) / n : 1.0; }

// Weighted least squares for t = a + x / bw in relative error, x = traffic factor x bytes.
std::pair<double, double> fit(const std::vector<std::pair<double, double>>& pts) {
  std::map<int, int> per_octave;
  for (const auto& [x, t] : pts) per_octave[static_cast<int>(std::floor(std::log2(x)))] += 1;
  double s00 = 0, s01 = 0, s11 = 0, r0 = 0, r1 = 0;
  for (const auto& [x, t] : pts) {
    const double w = 1.0 / per_octave[static_cast<int>(std::floor(std::log2(x)))] / (t * t);
    s00 += w;
    s01 += w * x;
    s11 += w * x * x;
    r0 += w * t;
    r1 += w * x * t;
  }
  const double det = s00 * s11 - s01 * s01;
  const double a = (r0 * s11 - s01 * r1) / det;
  const double b = (s00 * r1 - s01 * r0) / det;
  return {a, 1.0 / b};
}

struct Summary {
  double median = 0, p90 = 0, worst = 0;
  std::size_t n = 0;
};
Summary summarize(std::vector<double> e) {
  Summary s;
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  s.n = e.size();
  s.median = median(e);
  s.p90 = e[static_cast<std::size_t>(0.9 * static_cast<double>(e.size()))];
  s.worst = e.back();
  return s;
}

struct Case {
  const char* profile;
  const char* dir;
  Collective op;
  LinkScope scope;
  std::vector<Key> train, held;
  double bound_median;      // held-out median |error|
  double bound_median_1mib; // held-out median |error| for messages >= 1 MiB
};

}  // namespace

TEST_CASE("interconnect model vs vidur's measured NCCL all-reduce and send/recv (A100, H100)") {
  const std::vector<Case> cases = {
      {"a100-80gb-sxm", "a100_dgx", Collective::all_reduce, LinkScope::nvlink, {{2, 2}, {8, 8}}, {{4, 4}}, 0.20, 0.18},
      {"a100-80gb-sxm", "a100_dgx", Collective::send_recv, LinkScope::nvlink, {{2, 2}}, {}, 0.12, 0.12},
      {"a100-80gb-sxm", "a100_dgx", Collective::send_recv, LinkScope::inter_node, {{2, 1}}, {}, 0.03, 0.03},
      {"a100-80gb-sxm", "a100_dgx", Collective::all_reduce, LinkScope::inter_node, {{2, 1}, {8, 4}}, {{4, 2}, {16, 8}}, 0.55, 0.55},
      {"h100-sxm", "h100_dgx", Collective::all_reduce, LinkScope::nvlink, {{2, 2}, {8, 8}}, {{4, 4}}, 0.20, 0.16},
      {"h100-sxm", "h100_dgx", Collective::send_recv, LinkScope::nvlink, {{2, 2}}, {}, 0.06, 0.06},
      {"h100-sxm", "h100_dgx", Collective::send_recv, LinkScope::inter_node, {{2, 1}}, {}, 0.05, 0.05},
      {"a100-40gb-pcie", "a100_pairwise_nvlink", Collective::all_reduce, LinkScope::nvlink, {{2, 2}}, {}, 0.16, 0.15},
      {"a100-40gb-pcie", "a100_pairwise_nvlink", Collective::all_reduce, LinkScope::pcie, {{4, 4}}, {}, 0.03, 0.03},
      {"h100-pcie", "h100_pairwise_nvlink", Collective::all_reduce, LinkScope::nvlink, {{2, 2}}, {}, 0.13, 0.12},
      {"h100-pcie", "h100_pairwise_nvlink", Collective::all_reduce, LinkScope::pcie, {{4, 4}}, {}, 0.14, 0.14},
  };
  std::printf("%-15s %-21s %-10s %-10s %9s %9s | %-21s %-21s | held-out |err|: %6s %6s %6s | >=1MiB %6s\n", "profile",
              "data", "op", "link", "lat us", "bw GB/s", "train (n,per node)", "held-out GPU counts", "median", "p90", "max",
              "median");
  for (const Case& c : cases) {
    const auto curves = load_csv(c.dir, collective_name(c.op));
    std::vector<std::pair<double, double>> train;
    std::vector<std::pair<int, std::pair<double, double>>> held;  // (gpus, (bytes, seconds))
    for (const Key& k : c.train) {
      REQUIRE(curves.count(k));
      const Curve& v = curves.at(k);
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i % 2 == 0) {
          train.emplace_back(traffic_factor(c.op, k.first) * v[i].first, v[i].second);
        } else {
          held.push_back({k.first, v[i]});
        }
      }
    }
    for (const Key& k : c.held) {
      REQUIRE(curves.count(k));
      for (const auto& p : curves.at(k)) held.push_back({k.first, p});
    }
    const std::pair<double, double> fitted = fit(train);  // not a binding: INFO below captures in a lambda
    const double lat = fitted.first, bw = fitted.second;

    // The profile must carry the fit, and its model is what gets scored on the held-out points.
    const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", c.profile, "", ""));
    const LinkModel& link = hw.interconnect.link(c.scope);
    const double prof_bw = c.op == Collective::send_recv ? link.p2p_bandwidth_bytes_per_s : link.bus_bandwidth_bytes_per_s;
    const double prof_lat = c.op == Collective::send_recv ? link.p2p_latency_s : link.latency_s;
    std::vector<double> err, err_big;
    for (const auto& [n, p] : held) {
      const double predicted = Interconnect::model_s(link, c.op, p.first, n);
      const double e = std::fabs(predicted - p.second) / p.second;
      err.push_back(e);
      if (p.first >= 1 << 20) err_big.push_back(e);
    }
    const Summary s = summarize(err), b = summarize(err_big);
    std::string tr, ho;
    for (const Key& k : c.train) tr += "(" + std::to_string(k.first) + "," + std::to_string(k.second) + ")";
    for (const Key& k : c.held) ho += "(" + std::to_string(k.first) + "," + std::to_string(k.second) + ")";
    if (ho.empty()) ho = "odd rows only";
    std::printf("%-15s %-21s %-10s %-10s %9.2f %9.1f | %-21s %-21s | %5zu pts: %5.1f%% %5.1f%% %5.1f%% | %5.1f%%\n", c.profile,
                c.dir, collective_name(c.op), link_scope_name(c.scope), lat * 1e6, bw / 1e9, tr.c_str(), ho.c_str(), s.n,
                100 * s.median, 100 * s.p90, 100 * s.worst, 100 * b.median);
    INFO(c.profile << " " << c.dir << " " << collective_name(c.op) << " " << link_scope_name(c.scope) << ": fitted "
                   << lat * 1e6 << " us, " << bw / 1e9 << " GB/s; profile " << prof_lat * 1e6 << " us, " << prof_bw / 1e9 << " GB/s");
    CHECK(std::fabs(prof_bw - bw) / bw < 0.02);
    CHECK(std::fabs(prof_lat - lat) / lat < 0.02);
    CHECK(s.median <= c.bound_median);
    CHECK(b.median <= c.bound_median_1mib);
  }
}

TEST_CASE("measured collective tables take precedence and interpolate in log-log") {
  Interconnect ic;
  ic.gpus_per_node = 8;
  ic.nvlink_domain_gpus = 8;
  ic.nvlink = {"nvlink", 100e9, 10e-6, 200e9, 5e-6};
  MeasuredCollective m;
  m.collective = Collective::all_reduce;
  m.gpus = 4;
  m.scope = LinkScope::nvlink;
  m.bytes_seconds = {{1e3, 1e-5}, {1e6, 1e-4}};
  ic.measured.push_back(m);
  CHECK(ic.time_s(Collective::all_reduce, 1e3, 4) == doctest::Approx(1e-5));
  CHECK(ic.time_s(Collective::all_reduce, std::sqrt(1e9), 4) == doctest::Approx(std::sqrt(1e-9)));  // log-log midpoint
  CHECK(ic.time_s(Collective::all_reduce, 1e2, 4) == doctest::Approx(1e-5));   // latency floor below the table
  CHECK(ic.time_s(Collective::all_reduce, 4e6, 4) == doctest::Approx(4e-4));   // bandwidth-bound above it
  // No table for 8 GPUs: the ring model, latency + 2(n-1)/n bytes / bus bandwidth.
  CHECK(ic.time_s(Collective::all_reduce, 1e8, 8) == doctest::Approx(10e-6 + 1.75 * 1e8 / 100e9));
  CHECK(ic.time_s(Collective::send_recv, 1e8, 2) == doctest::Approx(5e-6 + 1e8 / 200e9));
  CHECK(ic.time_s(Collective::all_reduce, 1e8, 1) == 0.0);
  CHECK(ic.scope_for(16) == LinkScope::inter_node);
}
