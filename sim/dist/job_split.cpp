// See job_split.hpp: the shard and merge splits, the partial-file format and exact numbers. (The
// MPI split is mpi_split.cpp, the only file that sees MPI.)
//
// A partial file (one per shard):
//   {"servesim_partial": 1, "version": "0.1.0", "command": "sweep", "args": [...], "shard": K,
//    "shards": N, "jobs": n, "results": [[job index, result], ...]}
#include "sim/dist/job_split.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/output_file.hpp"

namespace servesim {

namespace {

constexpr int kPartialSchema = 1;

// A value as an error shows it: its JSON, cut at 40 characters.
std::string shown(const nlohmann::json& j) {
  std::string s = j.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

std::string shard_name(std::int64_t part, std::int64_t parts) { return std::to_string(part) + "/" + std::to_string(parts); }

class ShardSplit final : public JobSplit {
 public:
  ShardSplit(int part, int parts, std::string path, std::string command, std::vector<std::string> args)
      : JobSplit(part, parts), path_(std::move(path)), command_(std::move(command)), args_(std::move(args)) {}
  bool writes_output() const override { return false; }
  std::vector<nlohmann::json> exchange(std::size_t jobs, JobShare mine) override {
    if (mine.failure) {
      if (mine.failure->bad_input) throw InputError(mine.failure->what);
      throw std::runtime_error(mine.failure->what);
    }
    nlohmann::json results = nlohmann::json::array();
    for (auto& [i, r] : mine.results) results.push_back(nlohmann::json::array({i, std::move(r)}));
    const std::size_t ran = results.size();
    const nlohmann::json doc = {{"servesim_partial", kPartialSchema}, {"version", SERVESIM_VERSION},
                                {"command", command_},                {"args", args_},
                                {"shard", part_},                     {"shards", parts_},
                                {"jobs", jobs},                       {"results", std::move(results)}};
    write_file(path_, doc.dump() + "\n");
    throw PartialWritten{"wrote shard " + shard_name(part_, parts_) + " (" + std::to_string(ran) + " of " +
                         std::to_string(jobs) + " runs) to " + path_ + "; `servesim merge` joins the shards"};
  }

 private:
  std::string path_, command_;
  std::vector<std::string> args_;
};

class MergedSplit final : public JobSplit {
 public:
  explicit MergedSplit(const MergedResults& m) : JobSplit(0, 0), merged_(m) {}
  bool writes_output() const override { return true; }
  JobOrigin origin(std::size_t job) const override { return merged_.origins.at(job); }
  std::vector<nlohmann::json> exchange(std::size_t jobs, JobShare) override {
    if (jobs != merged_.results.size()) {
      throw InputError(merged_.first_file, "jobs",
                       "the partial files hold " + std::to_string(merged_.results.size()) + " runs but `servesim " + merged_.command +
                           "` with their arguments now builds " + std::to_string(jobs) +
                           ": its scenario or data files changed since the shards ran");
    }
    return merged_.results;
  }

 private:
  const MergedResults& merged_;
};

// One partial file, read strictly (its results' contents are the codecs', read with their origins).
struct Partial {
  std::string file, version, command;
  std::vector<std::string> args;
  std::int64_t shard = 0, shards = 1, jobs = 0;
  std::vector<std::pair<std::size_t, nlohmann::json>> results;  // (job, result): results[k] of the file
};

Partial read_partial(const std::string& file) {
  const nlohmann::json doc = load_json_file(file);
  if (!doc.is_object() || !doc.contains("servesim_partial")) {
    throw InputError(file, "", "not a partial result file (written by servesim sweep or plan with --shard K/N)");
  }
  JsonReader r(doc, file, "");
  Partial p;
  p.file = file;
  r.integer_in("servesim_partial", kPartialSchema, kPartialSchema);
  p.version = r.string("version");
  p.command = r.string("command");
  const nlohmann::json& args = r.raw("args");
  if (!args.is_array()) r.fail("args", "must be an array of strings");
  for (const auto& a : args) {
    if (!a.is_string()) r.fail("args", "must be an array of strings");
    p.args.push_back(a.get<std::string>());
  }
  p.shards = r.integer_in("shards", 1, 1000000);
  p.shard = r.integer_in("shard", 0, p.shards - 1);
  p.jobs = r.integer_in("jobs", 0, std::numeric_limits<std::int32_t>::max());
  const nlohmann::json& results = r.raw("results");
  if (!results.is_array()) r.fail("results", "must be an array of [job, result] pairs");
  std::vector<bool> seen(static_cast<std::size_t>(p.jobs), false);
  for (const auto& item : results) {
    if (!item.is_array() || item.size() != 2 || !item[0].is_number_unsigned()) r.fail("results", "must be an array of [job, result] pairs");
    const auto i = item[0].get<std::uint64_t>();
    if (i >= static_cast<std::uint64_t>(p.jobs) || i % static_cast<std::uint64_t>(p.shards) != static_cast<std::uint64_t>(p.shard)) {
      r.fail("results", "job " + std::to_string(i) + " is not one of shard " + shard_name(p.shard, p.shards) + "'s");
    }
    if (seen[i]) r.fail("results", "job " + std::to_string(i) + " appears twice");
    seen[i] = true;
    p.results.emplace_back(static_cast<std::size_t>(i), item[1]);
  }
  const auto owned = ShardSplit(static_cast<int>(p.shard), static_cast<int>(p.shards), "", "", {}).share(static_cast<std::size_t>(p.jobs));
  if (p.results.size() != owned) {
    r.fail("results", "holds " + std::to_string(p.results.size()) + " of shard " + shard_name(p.shard, p.shards) + "'s " +
                          std::to_string(owned) + " runs (the file is truncated or was edited)");
  }
  r.finish();
  return p;
}

}  // namespace

std::unique_ptr<JobSplit> shard_split(int part, int parts, std::string path, std::string command, std::vector<std::string> args) {
  return std::make_unique<ShardSplit>(part, parts, std::move(path), std::move(command), std::move(args));
}

MergedResults read_partials(const std::vector<std::string>& files) {
  if (files.empty()) throw InputError("servesim merge", "", "no partial files given (see --help)");
  std::vector<Partial> parts;
  std::map<std::int64_t, std::string> by_shard;
  for (const auto& f : files) {
    Partial p = read_partial(f);
    if (!parts.empty()) {
      const Partial& first = parts.front();
      const auto differs = [&](const std::string& what) {
        throw InputError(f, what, "differs from " + first.file + ": the files come from different runs");
      };
      if (p.command != first.command) differs("command");
      if (p.args != first.args) differs("args");
      if (p.shards != first.shards) differs("shards");
      if (p.jobs != first.jobs) differs("jobs");
      if (p.version != first.version) differs("version");
    }
    const auto [at, fresh] = by_shard.emplace(p.shard, f);
    if (!fresh) throw InputError(f, "shard", "shard " + shard_name(p.shard, p.shards) + " is also in " + at->second + " (overlapping shards)");
    parts.push_back(std::move(p));
  }
  const Partial& first = parts.front();
  for (std::int64_t k = 0; k < first.shards; ++k) {
    if (!by_shard.count(k)) {
      throw InputError(first.file, "shards", "shard " + shard_name(k, first.shards) + " is missing: merge needs all " +
                                                 std::to_string(first.shards) + " partial files of the run");
    }
  }
  MergedResults m;
  m.command = first.command;
  m.args = first.args;
  m.first_file = first.file;
  m.results.resize(static_cast<std::size_t>(first.jobs));
  m.origins.resize(m.results.size());
  for (auto& p : parts) {
    for (std::size_t k = 0; k < p.results.size(); ++k) {
      auto& [i, r] = p.results[k];
      m.results[i] = std::move(r);
      m.origins[i] = {p.file, "results[" + std::to_string(k) + "][1]"};
    }
  }
  return m;
}

std::unique_ptr<JobSplit> merged_split(const MergedResults& merged) { return std::make_unique<MergedSplit>(merged); }

void JobOrigin::fail(const std::string& item, const std::string& message) const {
  throw InputError(file, item.empty() ? key : key + (item[0] == '[' ? "" : ".") + item, message);
}

const nlohmann::json& JobOrigin::element(const nlohmann::json& j, std::size_t i, std::size_t size, const std::string& item,
                                         const std::string& what) const {
  if (!j.is_array() || j.size() != size) fail(item, "must be an array of " + std::to_string(size) + " items (" + what + ")");
  return j[i];
}

double JobOrigin::number(const nlohmann::json& j, const KeyRange& range, const std::string& item, const std::string& label) const {
  if (!j.is_number() || !range.contains(j.get<double>())) {
    fail(item, (label.empty() ? "" : label + ": ") + "must be a number in " + range.text() + ", got " + (j.is_number() ? key_number_text(j.get<double>()) : shown(j)));
  }
  return j.get<double>();
}

bool JobOrigin::boolean(const nlohmann::json& j, const std::string& item) const {
  if (!j.is_boolean()) fail(item, "must be true or false, got " + shown(j));
  return j.get<bool>();
}

std::int64_t JobOrigin::integer(const nlohmann::json& j, const KeyRange& range, const std::string& item) const {
  if (!j.is_number_integer() || !range.contains(static_cast<double>(j.get<std::int64_t>()))) {
    fail(item, "must be an integer in " + range.text() + ", got " + shown(j));
  }
  return j.get<std::int64_t>();
}

std::string JobOrigin::string(const nlohmann::json& j, const std::string& item) const {
  if (!j.is_string()) fail(item, "must be a string, got " + shown(j));
  return j.get<std::string>();
}

nlohmann::json exact_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

double exact_number(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (j == "inf") return std::numeric_limits<double>::infinity();
  if (j == "-inf") return -std::numeric_limits<double>::infinity();
  throw InputError("expected a number in a job result, got " + j.dump());
}

}  // namespace servesim
