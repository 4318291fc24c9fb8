// See job_split.hpp: the MPI split. MPI itself is in a module (libservesim_mpi.so, built with
// SERVESIM_HAVE_MPI when CMake found Open MPI; see mpi_module_api.hpp) loaded on the first --mpi,
// so runs without --mpi do not load Open MPI. Without the module --mpi is refused with a line
// saying so. Only the main thread calls MPI (the exchange runs after the parallel part).
#include "sim/dist/job_split.hpp"

#include <optional>
#include <stdexcept>

#include "sim/core/error.hpp"

#ifdef SERVESIM_HAVE_MPI
#include <dlfcn.h>
#include <link.h>  // ElfW: the ELF types of this machine's word size

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "sim/dist/mpi_module_api.hpp"
#endif

namespace servesim {

#ifdef SERVESIM_HAVE_MPI

namespace {

// Where the module may be: the file SERVESIM_MPI_MODULE names (then only there), else where CMake
// built it (a build-tree servesim), beside an installed servesim (bin/../LIBDIR/servesim,
// wherever the tree was installed), or where the configured install prefix puts it.
std::vector<std::string> module_candidates() {
  if (const char* env = std::getenv("SERVESIM_MPI_MODULE"); env && *env) return {env};
  std::vector<std::string> paths = {SERVESIM_MPI_MODULE_BUILD_PATH};
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) paths.push_back((exe.parent_path().parent_path() / SERVESIM_MPI_MODULE_INSTALL_DIR / SERVESIM_MPI_MODULE_NAME).string());
  paths.emplace_back(SERVESIM_MPI_MODULE_INSTALL_PATH);
  return paths;
}

// Why `path` cannot be mapped as a shared object of this machine, or "" when its ELF headers hold
// together: dlopen() maps the segments the program headers state, and a file shorter than they
// say (a copy cut short, a full disk during install) would fault with SIGBUS on first touch
// instead of failing to load.
std::string not_loadable(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::string("cannot open it: ") + std::strerror(errno);
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, &std::fclose);
  std::error_code ec;
  const auto size = static_cast<std::uint64_t>(std::filesystem::file_size(path, ec));
  ElfW(Ehdr) eh{};
  if (ec || std::fread(&eh, sizeof eh, 1, f) != 1 || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "not an ELF shared object";
  if (eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32) || eh.e_type != ET_DYN ||
      eh.e_phentsize != sizeof(ElfW(Phdr))) {
    return "not a shared object for this machine";
  }
  // The extent the headers state: the program and section header tables and every segment's
  // bytes (offset + length, saturating: the values are the file's, not to be trusted).
  const auto end_of = [](std::uint64_t offset, std::uint64_t length) {
    return offset > UINT64_MAX - length ? UINT64_MAX : offset + length;
  };
  const std::uint64_t ph_end = end_of(eh.e_phoff, std::uint64_t{eh.e_phnum} * sizeof(ElfW(Phdr)));
  std::uint64_t stated = std::max(ph_end, end_of(eh.e_shoff, std::uint64_t{eh.e_shnum} * eh.e_shentsize));
  if (ph_end <= size) {
    std::vector<ElfW(Phdr)> ph(eh.e_phnum);
    if (std::fseek(f, static_cast<long>(eh.e_phoff), SEEK_SET) != 0 || std::fread(ph.data(), sizeof(ElfW(Phdr)), ph.size(), f) != ph.size()) {
      return "cannot read its program headers";
    }
    for (const auto& p : ph) stated = std::max<std::uint64_t>(stated, end_of(p.p_offset, p.p_filesz));
  }
  if (stated > size) {
    return "truncated: its headers describe " + std::to_string(stated) + " bytes, the file has " + std::to_string(size) +
           " (rebuild or reinstall servesim)";
  }
  return "";
}

// The module's table (loaded for session()'s one MpiSession; never unloaded: MPI_Finalize runs
// from that static's destructor).
const ServesimMpiApi& mpi_api(const std::string& flag) {
  std::string tried;
  for (const std::string& path : module_candidates()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    if (const std::string why = not_loadable(path); !why.empty()) {
      throw InputError(flag, "", "cannot load the MPI module: " + path + ": " + why);
    }
    // RTLD_GLOBAL: Open MPI's own plugins, which it dlopen()s, resolve symbols of libmpi.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) throw InputError(flag, "", std::string("cannot load the MPI module: ") + dlerror());
    const auto get = reinterpret_cast<const ServesimMpiApi* (*)()>(dlsym(handle, kServesimMpiApiSymbol));
    if (get == nullptr || get()->abi_version != kServesimMpiAbiVersion) {
      throw InputError(flag, "", path + " is not this servesim's MPI module (rebuild servesim)");
    }
    return *get();
  }
  throw InputError(flag, "", "the MPI module " + std::string(SERVESIM_MPI_MODULE_NAME) + " was not found (looked at " + tried +
                                 "); build or install servesim with it");
}

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("MPI ") + what + " failed (code " + std::to_string(rc) + ")");
}

// MPI_Init on first use, MPI_Finalize when the program exits (a static's destructor, so every
// return from main, error or not, finalizes and mpirun sees a clean exit).
class MpiSession {
 public:
  explicit MpiSession(const ServesimMpiApi& api) : api_(api) { check(api_.init(&rank_, &size_), "Init"); }
  ~MpiSession() { api_.finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  const ServesimMpiApi& api() const { return api_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  const ServesimMpiApi& api_;
  int rank_ = 0, size_ = 1;
};

MpiSession& session(const std::string& flag) {
  static MpiSession s(mpi_api(flag));
  return s;
}

class MpiSplit final : public JobSplit {
 public:
  explicit MpiSplit(MpiSession& mpi) : JobSplit(mpi.rank(), mpi.size()), api_(mpi.api()) {}
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
    check(api_.allgather_int(length, lengths.data()), "Allgather");
    long long total = 0;
    for (int r = 0; r < parts_; ++r) {
      offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += lengths[static_cast<std::size_t>(r)];
      if (total > INT_MAX) throw std::runtime_error("MPI exchange: the results of all ranks exceed 2 GB");
    }
    std::vector<std::uint8_t> all(static_cast<std::size_t>(total));
    check(api_.allgatherv_bytes(bytes.data(), length, all.data(), lengths.data(), offsets.data()), "Allgatherv");
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

 private:
  const ServesimMpiApi& api_;
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<JobSplit> mpi_split(const std::string& flag) { return std::make_unique<MpiSplit>(session(flag)); }

#else

bool mpi_available() { return false; }

std::unique_ptr<JobSplit> mpi_split(const std::string& flag) {
  throw InputError(flag, "", "this servesim was built without MPI (install Open MPI, e.g. libopenmpi-dev, and configure again); "
                             "--shard K/N splits a run without it");
}

#endif

}  // namespace servesim
