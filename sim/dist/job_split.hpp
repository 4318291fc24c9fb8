// Independent jobs shared among processes (`sweep`, `plan`, `saturate` with --mpi or --shard): a
// command numbers its jobs 0..n-1, each process runs the jobs its split gives it, and exchange()
// hands every process every job's result in job order, so the rows that follow are built from the
// same values a single process would have computed. Results travel as JSON (numbers exact, see
// exact_number); what a job's result holds is the caller's business.
//
// Three splits, all static round-robin (job i belongs to part i mod parts): no coordinator and no
// message until the end, and neighbouring jobs (grid values next to each other, often of similar
// cost) land on different processes, which balances a sweep whose cost grows along an axis better
// than contiguous blocks would.
//   mpi_split()          the ranks of MPI_COMM_WORLD; every rank gets all results (MPI_Allgatherv)
//   shard_split(K, N)    one task of a job array: writes its results to a partial file and stops
//   merged_split(parts)  owns no job: every result comes from the partial files (`servesim merge`)
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario_keys.hpp"

namespace servesim {

// Where a job's result came from, for an error about it: a partial file and the result's key in
// it ("p0.json", "results[1][1]"), or the MPI exchange. The codecs that read results back check
// every item's type and range through it, so an edited partial file cannot print -1e300
// completed requests or reach the user as a library message.
struct JobOrigin {
  std::string file, key;
  // InputError "FILE: KEY.ITEM: MESSAGE" (KEY alone when `item` is empty; ITEM may start with '[').
  [[noreturn]] void fail(const std::string& item, const std::string& message) const;
  // Item i of `j` (the result's item `item`), which must be an array of exactly `size` items
  // (`what` says what they are).
  const nlohmann::json& element(const nlohmann::json& j, std::size_t i, std::size_t size, const std::string& item,
                                const std::string& what) const;
  // A finite number within `range` (`label`, when given, names it in the message); a boolean; an
  // integer within `range`; a string.
  double number(const nlohmann::json& j, const KeyRange& range, const std::string& item, const std::string& label = "") const;
  bool boolean(const nlohmann::json& j, const std::string& item) const;
  std::int64_t integer(const nlohmann::json& j, const KeyRange& range, const std::string& item) const;
  std::string string(const nlohmann::json& j, const std::string& item) const;
};

// A job that threw on some process: every process rethrows the one of the lowest job (InputError
// when bad_input), so all of them exit with the code and message one process would.
struct JobFailure {
  bool bad_input = false;
  std::string what;
  std::size_t job = 0;
};

// This process's share: (job index, result) for the jobs it ran, or the failure that stopped it.
struct JobShare {
  std::vector<std::pair<std::size_t, nlohmann::json>> results;
  std::optional<JobFailure> failure;
};

class JobSplit {
 public:
  // This process is part `part` of `parts` (parts 0: it runs no job, as in a merge).
  JobSplit(int part, int parts) : part_(part), parts_(parts) {}
  virtual ~JobSplit() = default;
  // Whether this process runs job `i`: round-robin, i mod parts == part.
  bool owns(std::size_t i) const { return parts_ > 0 && i % static_cast<std::size_t>(parts_) == static_cast<std::size_t>(part_); }
  // How many of jobs 0..jobs-1 run here.
  std::size_t share(std::size_t jobs) const {
    const auto part = static_cast<std::size_t>(part_), parts = static_cast<std::size_t>(parts_);
    return parts == 0 || jobs <= part ? 0 : (jobs - part + parts - 1) / parts;
  }
  // The most any process of the split runs (part 0's share; the same number on every process).
  std::size_t busiest_share(std::size_t jobs) const { return parts_ == 0 ? 0 : (jobs + static_cast<std::size_t>(parts_) - 1) / static_cast<std::size_t>(parts_); }
  // Every job's result in job order, given this process's share of `jobs` jobs. Throws the first
  // failure any process reported; InputError when a result is missing or does not fit.
  virtual std::vector<nlohmann::json> exchange(std::size_t jobs, JobShare mine) = 0;
  // Whether this process writes the command's output (rank 0 of MPI; a merge). A shard never
  // returns from exchange().
  virtual bool writes_output() const = 0;
  // Where job i's result came from (exchange()'s results), for errors reading it back.
  virtual JobOrigin origin(std::size_t job) const { return {"--mpi", "the result of job " + std::to_string(job)}; }

 protected:
  int part_, parts_;
};

// Thrown by a shard's exchange() once its partial file is written: the command stops there and
// servesim exits 0. Not a std::exception, so no handler for errors catches it on the way.
struct PartialWritten {
  std::string message;  // what was written where
};

// Every job of a run that was split into shards, with what identifies the run (the command and its
// arguments): the output of `servesim merge`.
struct MergedResults {
  std::string command;                 // "sweep", "plan"
  std::vector<std::string> args;       // the command's arguments without --shard / --partial
  std::string first_file;              // named in errors about the whole set
  std::vector<nlohmann::json> results; // by job index
  std::vector<JobOrigin> origins;      // by job index: the file and key each result was read from
};

// True when this servesim was built with MPI (CMake found Open MPI).
bool mpi_available();
// The ranks of MPI_COMM_WORLD (MPI is initialized on first use and finalized at exit). InputError
// naming `flag` when built without MPI.
std::unique_ptr<JobSplit> mpi_split(const std::string& flag);
// Shard `part` of `parts` (0-based) of a run identified by `command` and `args`: its exchange()
// writes `path` and throws PartialWritten.
std::unique_ptr<JobSplit> shard_split(int part, int parts, std::string path, std::string command, std::vector<std::string> args);
// Reads and checks partial files: one run (same command, arguments, shard count and job count),
// every shard exactly once, each file holding exactly its shard's jobs. InputError naming the
// file otherwise.
MergedResults read_partials(const std::vector<std::string>& files);
// Hands out `merged`'s results (checks that the command builds the same number of jobs).
std::unique_ptr<JobSplit> merged_split(const MergedResults& merged);

// JSON numbers that come back bit for bit: a finite double as a number (nlohmann writes the
// shortest text that reads back exactly), NaN and infinities as strings.
nlohmann::json exact_number(double x);
double exact_number(const nlohmann::json& j);

}  // namespace servesim
