// Host terms fitted to benchmark runs: see engine_fit.hpp. The cost is the sum of squared
// log(predicted / measured) of each file's TTFT and TPOT statistics. A host term often has no effect until
// it exceeds the GPU's time (under async scheduling a step takes max(host, GPU)), so a local
// method alone would not see it: the fit first searches each term over a grid from 0 to its bound
// (and finer grids around the best), then polishes all four together by bounded, damped
// Gauss-Newton (Levenberg-Marquardt) with finite differences of whole simulations. Every
// simulation is deterministic (the scenario's seed) and the points are always tried in the same
// order, so the fit is too.
#include "sim/validate/engine_fit.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include <Eigen/Dense>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "sim/analysis/work_estimate.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim {

namespace {

// The search works in these units (ms, 10 us, ms, ms), so a unit step moves each term by a like
// amount of step time (the per-sequence term times tens of sequences), and within [0, kUpper].
constexpr HostTerms kUnit = {1e-3, 1e-5, 1e-3, 1e-3};
constexpr HostTerms kUpper = {50.0, 50.0, 50.0, 2000.0};
constexpr int kMaxIterations = 12;
constexpr int kCycles = 2;  // grid searches then Levenberg-Marquardt, twice
// Simulations of each file per fit, at most: per cycle the grids (4 terms x (12 + 2 x 8)) and
// the polish (kMaxIterations x 12: the point, a step either side along each term, three tries
// along the solved step).
constexpr std::size_t kSimulationsPerFit = kCycles * (4 * (12 + 2 * 8) + kMaxIterations * 12);
// A term whose finite difference moves no residual by this much (in log error) is left where it is.
constexpr double kNoEffect = 1e-7;

// The statistic a file is fitted at: p50, else the mean.
std::string fit_statistic(const BenchResult& b, const char* metric) {
  const auto it = b.latency.find(metric);
  if (it == b.latency.end()) return "";
  return it->second.count("p50") ? "p50" : it->second.count("mean") ? "mean" : "";
}

// Simulates the files' scenarios at given host terms. Each thread keeps its own copy of every
// file's scenario and sets the terms in it before each simulation: a scenario holds its hardware
// profile's tables, too much to copy for every one of thousands of simulations.
class Runner {
 public:
  explicit Runner(const std::vector<AgainstCase>& cases) : cases_(cases) {}

  EngineFitScore score(std::size_t file, const HostTerms& t) {
    std::vector<std::unique_ptr<Scenario>>& mine = copies_.local();
    if (mine.empty()) mine.resize(cases_.size());
    if (!mine[file]) mine[file] = std::make_unique<Scenario>(cases_[file].scenario);
    Scenario& s = *mine[file];
    s.engine.launch.host_overhead_per_step_s = t[0];
    s.engine.launch.host_overhead_per_seq_s = t[1];
    s.engine.launch.host_overhead_per_decode_step_s = t[2];
    s.engine.frontend_latency_s = t[3];
    const BenchResult& b = cases_[file].bench;
    const std::vector<AgainstRow> rows = compare_against(b, simulate(s));
    EngineFitScore out;
    out.file = b.file;
    out.ttft_statistic = fit_statistic(b, "ttft");
    out.tpot_statistic = fit_statistic(b, "tpot");
    if (const AgainstRow* r = find_row(rows, "ttft", out.ttft_statistic)) out.ttft_error = r->error();
    if (const AgainstRow* r = find_row(rows, "tpot", out.tpot_statistic)) out.tpot_error = r->error();
    for (const AgainstRow& r : rows) {
      if ((r.metric == "ttft" || r.metric == "tpot") && r.measured > 0.0) {
        out.log_errors.push_back(std::log(std::max(1e-9, r.predicted) / r.measured));
      }
    }
    return out;
  }

 private:
  const std::vector<AgainstCase>& cases_;
  tbb::enumerable_thread_specific<std::vector<std::unique_ptr<Scenario>>> copies_;
};

// Scores of `files` (indices into the runner's cases) at each of `points`: [point][file], in parallel.
std::vector<std::vector<EngineFitScore>> scores(Runner& runner, const std::vector<std::size_t>& files, const std::vector<HostTerms>& points) {
  std::vector<std::vector<EngineFitScore>> out(points.size(), std::vector<EngineFitScore>(files.size()));
  tbb::parallel_for(std::size_t{0}, points.size() * files.size(), [&](std::size_t k) {
    out[k / files.size()][k % files.size()] = runner.score(files[k % files.size()], points[k / files.size()]);
  });
  return out;
}

// The residuals the fit makes small: every file's log errors, one vector.
Eigen::VectorXd residuals(const std::vector<EngineFitScore>& s) {
  std::vector<double> r;
  for (const EngineFitScore& f : s) r.insert(r.end(), f.log_errors.begin(), f.log_errors.end());
  return Eigen::Map<Eigen::VectorXd>(r.data(), static_cast<Eigen::Index>(r.size()));
}

HostTerms to_terms(const Eigen::Vector4d& u) {
  HostTerms t{};
  for (int j = 0; j < 4; ++j) t[j] = u(j) * kUnit[j];
  return t;
}

struct Fit {
  HostTerms terms{};
  std::array<bool, 4> moved{};
};

// The cost at each point.
std::vector<double> costs(Runner& runner, const std::vector<std::size_t>& files, const std::vector<Eigen::Vector4d>& us) {
  std::vector<HostTerms> points;
  for (const Eigen::Vector4d& u : us) points.push_back(to_terms(u));
  std::vector<double> out;
  for (const auto& s : scores(runner, files, points)) out.push_back(residuals(s).squaredNorm());
  return out;
}

// Term j alone: 0 and a geometric grid over three decades below its bound, then two finer grids between the best
// point's neighbours. Keeps u(j) on a tie. Returns false when no value changes the cost.
bool search_term(Runner& runner, const std::vector<std::size_t>& files, Eigen::Vector4d& u, int j) {
  std::vector<double> grid = {u(j), 0.0};
  for (int k = 0; k < 10; ++k) grid.push_back(kUpper[j] * std::pow(1e-3, 1.0 - k / 9.0));
  bool moved = false;
  for (int round = 0; round < 3; ++round) {
    std::vector<Eigen::Vector4d> us;
    for (double v : grid) {
      us.push_back(u);
      us.back()(j) = v;
    }
    const std::vector<double> c = costs(runner, files, us);
    std::size_t best = 0;  // u(j) itself, first in the grid
    for (std::size_t k = 1; k < c.size(); ++k) {
      if (c[k] < c[best] * (1.0 - 1e-12)) best = k;
    }
    if (*std::max_element(c.begin(), c.end()) > c[best] * (1.0 + 1e-9) + 1e-15) moved = true;
    const double v = grid[best];
    // The next grid: 7 points between the nearest grid values either side of the best.
    double lo = 0.0, hi = kUpper[j];
    for (double g : grid) {
      if (g < v) lo = std::max(lo, g);
      if (g > v) hi = std::min(hi, g);
    }
    u(j) = v;
    grid = {v};
    for (int k = 0; k <= 6; ++k) grid.push_back(lo + (hi - lo) * k / 6.0);
  }
  return moved;
}

// The Levenberg-Marquardt step from u: (J'J + lambda diag(J'J)) delta = -J'r over the free terms;
// a term with no effect, or at a bound the gradient pushes against, stays where it is.
Eigen::Vector4d damped_step(const Eigen::MatrixXd& jac, const Eigen::VectorXd& r0, const Eigen::Vector4d& u, double lambda) {
  const Eigen::Vector4d gradient = jac.transpose() * r0;
  const Eigen::Matrix4d a = jac.transpose() * jac;
  Eigen::Matrix4d m = a;
  Eigen::Vector4d rhs = -gradient;
  for (int j = 0; j < 4; ++j) {
    const bool pinned = (u(j) <= 0.0 && gradient(j) > 0.0) || (u(j) >= kUpper[j] && gradient(j) < 0.0);
    m(j, j) += lambda * a(j, j) + 1e-12;
    if (jac.col(j).cwiseAbs().maxCoeff() <= kNoEffect || pinned) {
      m.row(j).setZero();
      m.col(j).setZero();
      m(j, j) = 1.0;
      rhs(j) = 0.0;
    }
  }
  return m.ldlt().solve(rhs);
}

// Levenberg-Marquardt from u, within the bounds; marks the terms it sees move a residual. Returns
// the cost at u.
double polish(Runner& runner, const std::vector<std::size_t>& files, Eigen::Vector4d& u, std::array<bool, 4>& moved) {
  double lambda = 1e-2, cost = 0.0;
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    // The point and a step either side along each term (half a unit, or a quarter of the term:
    // wide enough that the scheduling's discrete steps, which move a percentile by jumps, do not
    // swamp the slope). Central differences, one-sided at a bound.
    std::vector<HostTerms> points = {to_terms(u)};
    Eigen::Vector4d lo_step, hi_step;
    for (int j = 0; j < 4; ++j) {
      const double h = std::max(0.5, 0.25 * u(j));
      hi_step(j) = std::min(h, kUpper[j] - u(j));
      lo_step(j) = std::min(h, u(j));
      for (double d : {hi_step(j), -lo_step(j)}) {
        Eigen::Vector4d v = u;
        v(j) += d;
        points.push_back(to_terms(v));
      }
    }
    const auto s = scores(runner, files, points);
    const Eigen::VectorXd r0 = residuals(s[0]);
    Eigen::MatrixXd jac(r0.size(), 4);
    for (int j = 0; j < 4; ++j) {
      const auto k = static_cast<std::size_t>(2 * j + 1);
      jac.col(j) = (residuals(s[k]) - residuals(s[k + 1])) / (hi_step(j) + lo_step(j));
      if (jac.col(j).cwiseAbs().maxCoeff() > kNoEffect) moved[static_cast<std::size_t>(j)] = true;
    }
    const Eigen::Vector4d delta = damped_step(jac, r0, u, lambda);
    // Halve the step until it lowers the cost (inside the bounds); raise the damping when none does.
    const double cost0 = r0.squaredNorm();
    cost = cost0;
    if (cost0 < 1e-14) break;  // every figure within 1e-7: nothing left to fit
    std::vector<HostTerms> tries;
    std::vector<Eigen::Vector4d> candidates;
    for (double alpha : {1.0, 0.5, 0.25}) {
      Eigen::Vector4d v = u + alpha * delta;
      for (int j = 0; j < 4; ++j) v(j) = std::clamp(v(j), 0.0, kUpper[j]);
      candidates.push_back(v);
      tries.push_back(to_terms(v));
    }
    const auto tried = scores(runner, files, tries);
    int best = -1;
    for (std::size_t k = 0; k < tried.size(); ++k) {
      if (residuals(tried[k]).squaredNorm() < cost0 * (1.0 - 1e-9)) {
        best = static_cast<int>(k);
        break;
      }
    }
    if (best < 0) {
      lambda *= 10.0;
      if (lambda > 1e4) break;
      continue;
    }
    const double moved_units = (candidates[static_cast<std::size_t>(best)] - u).cwiseAbs().maxCoeff();
    u = candidates[static_cast<std::size_t>(best)];
    cost = residuals(tried[static_cast<std::size_t>(best)]).squaredNorm();
    lambda = std::max(1e-4, lambda / 3.0);
    if (moved_units < 1e-2) break;  // 10 us (100 ns per sequence): converged
  }
  return cost;
}

// From `start` on the files `files`: each term's grid search, then Levenberg-Marquardt; twice, as
// the polish can stop where a term's grid finds more.
Fit fit_terms(Runner& runner, const std::vector<std::size_t>& files, const HostTerms& start) {
  Eigen::Vector4d u;
  for (int j = 0; j < 4; ++j) u(j) = std::clamp(start[j] / kUnit[j], 0.0, kUpper[j]);
  Fit fit;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    // Front-end latency first: it shifts TTFT alone, so the step terms then start from a TTFT
    // without its constant part.
    for (int j : {3, 0, 2, 1}) {
      if (search_term(runner, files, u, j)) fit.moved[static_cast<std::size_t>(j)] = true;
    }
    if (polish(runner, files, u, fit.moved) < 1e-5) break;  // every figure within about 0.1%: converged
  }
  fit.terms = to_terms(u);
  return fit;
}

HostTerms terms_of(const EngineProfile& p) {
  return {p.launch.host_overhead_per_step_s, p.launch.host_overhead_per_seq_s, p.launch.host_overhead_per_decode_step_s,
          p.frontend_latency_s};
}

nlohmann::json score_json(const EngineFitScore& s) {
  nlohmann::json j = {{"file", portable_path(s.file)}};
  if (!s.ttft_statistic.empty()) j["ttft_" + s.ttft_statistic + "_error_frac"] = s.ttft_error;
  if (!s.tpot_statistic.empty()) j["tpot_" + s.tpot_statistic + "_error_frac"] = s.tpot_error;
  return j;
}

// The base profile with the fitted terms, its name and provenance.
nlohmann::json fitted_profile(nlohmann::json doc, const EngineFitResult& r, const std::vector<std::string>& files,
                              const EngineFitOptions& o) {
  const std::string base_name = doc.value("name", "engine");
  doc["name"] = o.name.empty() ? base_name + "-fitted" : o.name;
  doc["display_name"] = doc.value("display_name", base_name) + ", host terms fitted to " + std::to_string(files.size()) + " runs";
  for (std::size_t j = 0; j < 4; ++j) doc["host"][kHostTermKeys[j]] = r.fitted[j];
  nlohmann::json provenance = {{"fitted_by", o.command}, {"date", o.date}, {"base", o.base}, {"files", nlohmann::json::array()},
                               {"in_sample", nlohmann::json::array()}, {"left_out", nlohmann::json::array()}};
  for (const std::string& f : files) provenance["files"].push_back(portable_path(f));
  for (const EngineFitScore& s : r.in_sample) provenance["in_sample"].push_back(score_json(s));
  for (const EngineFitScore& s : r.left_out) provenance["left_out"].push_back(score_json(s));
  for (std::size_t j = 0; j < 4; ++j) {
    if (!r.moved[j]) provenance["not_moved_by_the_runs"].push_back(std::string("host.") + kHostTermKeys[j]);
  }
  doc["provenance"] = provenance;
  if (doc.contains("sources") && doc["sources"].is_object()) {
    doc["sources"]["host"] = "host.overhead_per_step_s, overhead_per_seq_s, overhead_per_decode_step_s and frontend_latency_s FITTED by "
                             "servesim calibrate engine to the runs in provenance.files (TTFT and TPOT, p50 or mean); the other "
                             "settings are " + base_name + "'s (its sources follow).  " + doc["sources"].value("host", std::string());
  }
  return doc;
}

}  // namespace

EngineFitResult fit_engine_profile(const std::vector<std::string>& files, const EngineFitOptions& options) {
  const std::string where = "servesim calibrate engine";
  const std::string base_path = resolve_data_ref("scenarios/engines", options.base, where, "--base");
  const nlohmann::json base_doc = load_json_file(base_path);
  EngineFitResult r;
  r.base = terms_of(parse_engine_profile(base_doc, base_path));
  for (const std::string& o : options.against.overrides) {
    if (o.rfind("engine.profile=", 0) == 0) throw InputError(where, "--set engine.profile", "the profile fitted is --base's");
  }
  AgainstOptions against = options.against;
  against.overrides.insert(against.overrides.begin(), "engine.profile=" + base_path);
  std::vector<AgainstCase> cases;
  for (const std::string& f : files) {
    cases.push_back(against_case(f, against));
    if (fit_statistic(cases.back().bench, "ttft").empty() && fit_statistic(cases.back().bench, "tpot").empty()) {
      throw InputError(f, "ttft", "neither TTFT nor TPOT has a p50 or mean to fit to");
    }
  }
  if (options.work_limit) {
    // Each fit (one on every file, one without each) simulates each of its files kSimulationsPerFit times at most.
    std::vector<Scenario> runs;
    for (const AgainstCase& c : cases) runs.push_back(c.scenario);
    // The simulations copy scenarios built once: their set-up is a simulate() alone.
    WorkBudget budget;
    budget.setup_sequence_steps = 2e4;
    check_work(runs, (files.size() + 1) * kSimulationsPerFit, budget, where, "the files' request counts", "--no-work-limit", 1);
  }
  std::vector<std::size_t> all(files.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  Runner runner(cases);
  const Fit fit = fit_terms(runner, all, r.base);
  r.fitted = fit.terms;
  r.moved = fit.moved;
  r.at_base = scores(runner, all, {r.base})[0];
  r.in_sample = scores(runner, all, {r.fitted})[0];
  if (files.size() > 1) {
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::vector<std::size_t> others;
      for (std::size_t k : all) {
        if (k != i) others.push_back(k);
      }
      const Fit without = fit_terms(runner, others, r.base);
      r.left_out_terms.push_back(without.terms);
      r.left_out.push_back(runner.score(i, without.terms));
    }
  }
  r.profile = fitted_profile(base_doc, r, files, options);
  parse_engine_profile(r.profile, "the fitted profile");  // what is written reads back
  return r;
}

}  // namespace servesim
