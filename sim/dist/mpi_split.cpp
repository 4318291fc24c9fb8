// See job_split.hpp: the MPI split, the one file that includes MPI (built with SERVESIM_HAVE_MPI
// when CMake found it; otherwise --mpi is refused with a line saying so). Only the main thread
// calls MPI (the exchange runs after the parallel part), so MPI_THREAD_FUNNELED suffices.
#include "sim/dist/job_split.hpp"

#include <optional>
#include <stdexcept>

#include "sim/core/error.hpp"

#ifdef SERVESIM_HAVE_MPI
#include <mpi.h>

#include <climits>
#include <cstdint>
#endif

namespace servesim {

#ifdef SERVESIM_HAVE_MPI

namespace {

// MPI_Init on first use, MPI_Finalize when the program exits (a static's destructor, so every
// return from main, error or not, finalizes and mpirun sees a clean exit).
class MpiSession {
 public:
  MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

MpiSession& session() {
  static MpiSession s;
  return s;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI ") + what + " failed (code " + std::to_string(rc) + ")");
}

class MpiSplit final : public JobSplit {
 public:
  MpiSplit() : JobSplit(session().rank(), session().size()) {}
  bool writes_output() const override { return part_ == 0; }

  // Each rank's share as CBOR (doubles travel as their 8 bytes), gathered on every rank.
  std::vector<nlohmann::json> exchange(std::size_t jobs, JobShare mine) override {
    nlohmann::json blob;
    if (mine.failure) {
      blob["failure"] = {{"bad_input", mine.failure->bad_input}, {"what", mine.failure->what}, {"job", mine.failure->job}};
    } else {
      blob["results"] = nlohmann::json::array();
      for (auto& [i, r] : mine.results) blob["results"].push_back(nlohmann::json::array({i, std::move(r)}));
    }
    std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(blob);
    if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {  // reported through the exchange, so no rank waits
      bytes = nlohmann::json::to_cbor({{"failure", {{"bad_input", false}, {"what", "MPI exchange: one rank's results exceed 2 GB"}, {"job", jobs}}}});
    }
    int length = static_cast<int>(bytes.size());
    std::vector<int> lengths(static_cast<std::size_t>(parts_)), offsets(static_cast<std::size_t>(parts_));
    check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD), "Allgather");
    long long total = 0;
    for (int r = 0; r < parts_; ++r) {
      offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += lengths[static_cast<std::size_t>(r)];
      if (total > INT_MAX) throw std::runtime_error("MPI exchange: the results of all ranks exceed 2 GB");
    }
    std::vector<std::uint8_t> all(static_cast<std::size_t>(total));
    check(MPI_Allgatherv(bytes.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, MPI_COMM_WORLD),
          "Allgatherv");
    std::vector<nlohmann::json> out(jobs);
    std::vector<bool> have(jobs, false);
    std::vector<nlohmann::json> parts;
    std::optional<nlohmann::json> first_failure;  // of the lowest job, whichever rank had it
    for (int r = 0; r < parts_; ++r) {
      const auto begin = all.begin() + offsets[static_cast<std::size_t>(r)];
      parts.push_back(nlohmann::json::from_cbor(begin, begin + lengths[static_cast<std::size_t>(r)]));
      const nlohmann::json& part = parts.back();
      if (part.contains("failure") && (!first_failure || part["failure"]["job"] < (*first_failure)["job"])) first_failure = part["failure"];
    }
    if (first_failure) {
      const std::string what = (*first_failure)["what"].get<std::string>();
      if ((*first_failure)["bad_input"].get<bool>()) throw InputError(what);
      throw std::runtime_error(what);
    }
    for (const nlohmann::json& part : parts) {
      for (const auto& item : part["results"]) {
        const auto i = item[0].get<std::size_t>();
        if (i >= jobs || have[i]) throw std::runtime_error("MPI exchange: job " + std::to_string(i) + " out of range or twice");
        have[i] = true;
        out[i] = item[1];
      }
    }
    for (std::size_t i = 0; i < jobs; ++i) {
      if (!have[i]) throw std::runtime_error("MPI exchange: no rank returned job " + std::to_string(i));
    }
    return out;
  }
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<JobSplit> mpi_split(const std::string&) { return std::make_unique<MpiSplit>(); }

#else

bool mpi_available() { return false; }

std::unique_ptr<JobSplit> mpi_split(const std::string& flag) {
  throw InputError(flag, "", "this servesim was built without MPI (install Open MPI, e.g. libopenmpi-dev, and configure again); "
                             "--shard K/N splits a run without it");
}

#endif

}  // namespace servesim
