// See distribute.hpp.
#include "sim/cli/distribute.hpp"

#include "sim/core/error.hpp"

namespace servesim::cli {

namespace {
const MergedResults* active_merge = nullptr;  // set by a MergeScope

// "K/N" -> (K, N) with 0 <= K < N.
std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  int k = -1, n = 0;
  try {
    std::size_t used_k = 0, used_n = 0;
    if (slash != std::string::npos) {
      k = std::stoi(text.substr(0, slash), &used_k);
      n = std::stoi(text.substr(slash + 1), &used_n);
    }
    if (used_k != slash || used_n != text.size() - slash - 1) k = -1;
  } catch (const std::exception&) {
    k = -1;
  }
  if (k < 0 || n < 1 || k >= n || n > 1000000) {
    throw InputError("--shard", "", "expected K/N: shard K of N, counted from 0 (0 <= K < N <= 1000000), got '" + text + "'");
  }
  return {k, n};
}

// The arguments without the distribution flags (both "--flag value" and "--flag=value").
std::vector<std::string> without_distribution_flags(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--mpi") continue;
    if (a == "--shard" || a == "--partial") {
      ++i;
      continue;
    }
    if (a.rfind("--shard=", 0) == 0 || a.rfind("--partial=", 0) == 0) continue;
    out.push_back(a);
  }
  return out;
}
}  // namespace

void add_distribution_flags(cxxopts::Options& opts, bool shards) {
  opts.add_options()("mpi", "share the runs among the ranks of `mpirun -n N servesim ...` (rank 0 writes the output)");
  if (shards) {
    opts.add_options()("shard", "run only shard K of N of the runs (K from 0) and write a partial file; `servesim merge` joins them",
                       cxxopts::value<std::string>())(
        "partial", "where --shard writes (default servesim-COMMAND-shard-K-of-N.json)", cxxopts::value<std::string>());
  }
}

Distribution distribution(const cxxopts::ParseResult& p, const std::string& command, const std::vector<std::string>& args) {
  Distribution d;
  d.args = without_distribution_flags(args);
  if (active_merge) {
    d.split = merged_split(*active_merge);
    return d;
  }
  const bool shard = p.count("shard") > 0;
  if (p.count("partial") && !shard) throw InputError("--partial", "", "only with --shard K/N");
  if (p.count("mpi") && shard) throw InputError("--shard", "", "either --mpi or --shard, not both");
  if (p.count("mpi")) d.split = mpi_split("--mpi");
  if (shard) {
    const auto [k, n] = parse_shard(p["shard"].as<std::string>());
    const std::string path = p.count("partial") ? p["partial"].as<std::string>()
                                                : "servesim-" + command + "-shard-" + std::to_string(k) + "-of-" + std::to_string(n) + ".json";
    d.split = shard_split(k, n, path, command, d.args);
  }
  return d;
}

MergeScope::MergeScope(const MergedResults& merged) { active_merge = &merged; }
MergeScope::~MergeScope() { active_merge = nullptr; }

}  // namespace servesim::cli
