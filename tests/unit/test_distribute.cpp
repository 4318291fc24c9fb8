// Split runs: `sweep`/`plan --shard K/N` partial files joined by `servesim merge` give the serial
// run's output byte for byte; merge refuses a missing, repeated or foreign shard naming the file;
// results cross processes with their numbers exact. (`--mpi` under mpirun: tests/dist/.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <unistd.h>

#include "sim/dist/job_split.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch folder for one test case, removed afterwards.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name) : dir(fs::temp_directory_path() / ("servesim_dist_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string operator/(const std::string& f) const { return (dir / f).string(); }
};

const std::string scenario = std::string(servesim::test::test_data_dir()) + "/dist/small.json";
const std::string sweep_args = "sweep " + scenario + " --grid engine.max_num_seqs=4,16,64 --grid workload.arrival.rate_per_s=2,8 --replications 2";

// Runs `servesim ARGS` in the scratch folder: its exit code and stdout (stderr too when `with_stderr`).
test::CommandResult run_in(const Scratch& s, const std::string& args, bool with_stderr = false) {
  test::CommandResult r;
  const std::string cmd = "cd '" + s.dir.string() + "' && " + servesim::test::servesim_binary() + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}
}  // namespace

TEST_CASE("sweep --shard K/N then merge: stdout, --csv and --md equal the serial run's") {
  Scratch s("sweep");
  const std::string outputs = " --csv table.csv --md table.md";
  const auto serial = run_in(s, sweep_args + outputs);
  REQUIRE(serial.exit_code == 0);
  const std::string csv = slurp(s / "table.csv"), md = slurp(s / "table.md");
  REQUIRE(csv.find("latency.ttft_s.p99.mean") != std::string::npos);  // replication columns are there too
  fs::remove(s / "table.csv");
  fs::remove(s / "table.md");
  // Three shards of 6 combinations x 2 replications = 12 simulations; the default file names.
  for (int k = 0; k < 3; ++k) {
    const auto shard = run_in(s, sweep_args + outputs + " --shard " + std::to_string(k) + "/3");
    REQUIRE(shard.exit_code == 0);
    CHECK(shard.output.empty());  // a shard writes its partial file, nothing else
    CHECK(fs::exists(s / ("servesim-sweep-shard-" + std::to_string(k) + "-of-3.json")));
  }
  CHECK_FALSE(fs::exists(s / "table.csv"));
  const auto merged = run_in(s, "merge servesim-sweep-shard-2-of-3.json servesim-sweep-shard-0-of-3.json servesim-sweep-shard-1-of-3.json");
  REQUIRE(merged.exit_code == 0);
  CHECK(merged.output == serial.output);
  CHECK(slurp(s / "table.csv") == csv);
  CHECK(slurp(s / "table.md") == md);

  // A shard count above the number of runs leaves some shards empty; they merge all the same.
  const auto json_serial = run_in(s, sweep_args + " --json");
  REQUIRE(json_serial.exit_code == 0);
  std::string files;
  for (int k = 0; k < 13; ++k) {
    const std::string f = std::to_string(k) + ".part.json";  // (not "p" + ...: a false -Wrestrict in GCC 12)
    REQUIRE(run_in(s, sweep_args + " --json --shard " + std::to_string(k) + "/13 --partial " + f).exit_code == 0);
    files += " " + f;
  }
  const auto json_merged = run_in(s, "merge" + files);
  REQUIRE(json_merged.exit_code == 0);
  CHECK(json_merged.output == json_serial.output);
}

TEST_CASE("plan --shard K/N then merge equals the serial plan") {
  Scratch s("plan");
  const std::string plan_args = "plan --model llama-2-7b --rate 4 --slo ttft=2s,tpot=100ms --hw a100-80gb-sxm,h100-sxm --tp 1,2 --workload " +
                                scenario + " --replications 2 --tolerance 0.1";
  const auto serial = run_in(s, plan_args);
  REQUIRE(serial.exit_code == 0);
  REQUIRE(serial.output.find("cheapest meeting the SLO") != std::string::npos);
  REQUIRE(run_in(s, plan_args + " --shard 0/2 --partial a.json").exit_code == 0);
  REQUIRE(run_in(s, plan_args + " --shard 1/2 --partial b.json").exit_code == 0);
  const auto merged = run_in(s, "merge a.json b.json");
  REQUIRE(merged.exit_code == 0);
  CHECK(merged.output == serial.output);
}

TEST_CASE("merge refuses a missing, repeated or foreign shard and a damaged file, naming the file (exit 2)") {
  Scratch s("bad");
  const std::string args = "sweep " + scenario + " --grid engine.max_num_seqs=4,16,64";
  for (int k = 0; k < 3; ++k) {
    REQUIRE(run_in(s, args + " --shard " + std::to_string(k) + "/3 --partial s" + std::to_string(k) + ".json").exit_code == 0);
  }
  REQUIRE(run_in(s, args + ",128 --shard 2/3 --partial other.json").exit_code == 0);
  fs::copy_file(s / "s1.json", s / "s1-again.json");
  const auto merge_error = [&](const std::string& files) { return run_in(s, "merge " + files, true); };
  const auto missing = merge_error("s0.json s1.json");
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("s0.json: shards: shard 2/3 is missing") != std::string::npos);
  const auto repeated = merge_error("s0.json s1.json s1-again.json s2.json");
  CHECK(repeated.exit_code == 2);
  CHECK(repeated.output.find("s1-again.json: shard: shard 1/3 is also in s1.json (overlapping shards)") != std::string::npos);
  const auto foreign = merge_error("s0.json s1.json other.json");
  CHECK(foreign.exit_code == 2);
  CHECK(foreign.output.find("other.json: args: differs from s0.json") != std::string::npos);
  const auto not_partial = merge_error(scenario);
  CHECK(not_partial.exit_code == 2);
  CHECK(not_partial.output.find("small.json: not a partial result file") != std::string::npos);
  // A shard file with one result removed.
  nlohmann::json doc = nlohmann::json::parse(slurp(s / "s0.json"));
  doc["results"].erase(doc["results"].begin());
  std::ofstream(s / "cut.json") << doc.dump();
  const auto cut = merge_error("cut.json s1.json s2.json");
  CHECK(cut.exit_code == 2);
  CHECK(cut.output.find("cut.json: results: holds 0 of shard 0/3's 1 runs") != std::string::npos);
  const auto none = merge_error("");
  CHECK(none.exit_code == 2);

  // Bad --shard values and flag combinations.
  for (const char* bad : {"3/3", "-1/3", "1", "a/b", "0/0", "1/2x"}) {
    const auto r = test::run_cli(args + " --shard " + bad);
    CHECK_MESSAGE(r.exit_code == 2, bad);
    CHECK_MESSAGE(r.output.find("--shard: expected K/N") != std::string::npos, bad);
  }
  CHECK(test::run_cli(args + " --partial x.json").exit_code == 2);
  CHECK(test::run_cli("saturate " + scenario + " --slo ttft=1s --shard 0/2").exit_code == 2);  // probes depend on each other
  if (mpi_available()) {
    const auto both = test::run_cli(args + " --mpi --shard 0/2");
    CHECK(both.exit_code == 2);
    CHECK(both.output.find("either --mpi or --shard") != std::string::npos);
    // MPI is a module loaded on the first --mpi (mpi_split.cpp): a missing or broken one is a
    // clear exit 2, not a crash. SERVESIM_MPI_MODULE points the lookup at one file.
    const std::string not_a_module = test::write_temp("not_a_module.so", "not a shared object\n");
    for (const std::string& path : {std::string("/nonexistent/libservesim_mpi.so"), not_a_module}) {
      ::setenv("SERVESIM_MPI_MODULE", path.c_str(), 1);
      const auto r = test::run_cli(args + " --mpi");
      ::unsetenv("SERVESIM_MPI_MODULE");
      MESSAGE(r.output);
      CHECK(r.exit_code == 2);
      CHECK(r.output.find("--mpi: ") != std::string::npos);
      CHECK(r.output.find(path == not_a_module ? "cannot load the MPI module" : "was not found (looked at /nonexistent/") != std::string::npos);
    }
  } else {
    const auto no_mpi = test::run_cli(args + " --mpi");
    CHECK(no_mpi.exit_code == 2);
    CHECK(no_mpi.output.find("--mpi: this servesim was built without MPI") != std::string::npos);
  }
}

TEST_CASE("numbers cross processes exactly: every double, NaN and the infinities read back bit for bit") {
  std::mt19937_64 rng(12345);
  std::vector<double> xs = {0.0, -0.0, 1e-310, std::numeric_limits<double>::min(), std::numeric_limits<double>::max(),
                            std::numeric_limits<double>::denorm_min(), 0.1, 1.0 / 3.0, 2.5e-7, 1783.3};
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t bits = rng();
    double x;
    std::memcpy(&x, &bits, sizeof x);
    if (std::isfinite(x)) xs.push_back(x);
  }
  for (double x : xs) {
    const double back = exact_number(nlohmann::json::parse(exact_number(x).dump()));
    std::uint64_t a, b;
    std::memcpy(&a, &x, sizeof a);
    std::memcpy(&b, &back, sizeof b);
    REQUIRE_MESSAGE(a == b, x);
  }
  CHECK(std::isnan(exact_number(nlohmann::json::parse(exact_number(std::nan("")).dump()))));
  CHECK(exact_number(nlohmann::json::parse(exact_number(-HUGE_VAL).dump())) == -HUGE_VAL);
  CHECK(exact_number(nlohmann::json::parse(exact_number(HUGE_VAL).dump())) == HUGE_VAL);
}
