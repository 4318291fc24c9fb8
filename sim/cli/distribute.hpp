// --mpi and --shard K/N: how sweep, plan and saturate share their independent runs with other
// processes (sim/dist/job_split.hpp), and `servesim merge`, which joins the shards' partial files
// into the output a single process writes.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/options.hpp"
#include "sim/dist/job_split.hpp"

namespace servesim::cli {

struct Distribution {
  std::unique_ptr<JobSplit> split;  // null: every run here
  // The command's arguments without --mpi, --shard and --partial (the line a written table
  // quotes, so a split run's files equal a single process's).
  std::vector<std::string> args;
  bool writes_output() const { return !split || split->writes_output(); }
};

// Adds --mpi and, when `shards`, --shard K/N and --partial FILE.
void add_distribution_flags(cxxopts::Options& opts, bool shards);
// The split the flags ask for; within `servesim merge`, the merged partial results.
Distribution distribution(const cxxopts::ParseResult& p, const std::string& command, const std::vector<std::string>& args);

// While one lives, distribution() hands out `merged`'s results instead of reading the flags.
class MergeScope {
 public:
  explicit MergeScope(const MergedResults& merged);
  ~MergeScope();
  MergeScope(const MergeScope&) = delete;
  MergeScope& operator=(const MergeScope&) = delete;
};

}  // namespace servesim::cli
