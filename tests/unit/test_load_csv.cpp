// --load-csv FILE on saturate, sweep and plan: the load pages' data, one row per configuration and
// offered rate, in the same columns for the three commands, each figure the command's own (a
// saturate probe's means, a sweep row's cells, a plan option's probes and price). And the Pareto
// front of the plan page's cost chart.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/plan_prices.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/load_data.hpp"
#include "../support.hpp"

using namespace servesim;

namespace {
const std::string kSmall = std::string(servesim::test::test_data_dir()) + "/dist/small.json";

// A CSV of plain fields (load_table writes no quotes here): its header and its rows by column name.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  double number(std::size_t row, const std::string& column) const { return std::stod(rows.at(row).at(column)); }
};

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string f;
  while (std::getline(ss, f, ',')) out.push_back(f);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

Csv read_csv(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  Csv csv;
  std::string line;
  std::getline(in, line);
  csv.header = fields(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = fields(line);
    REQUIRE(f.size() == csv.header.size());
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < f.size(); ++i) row[csv.header[i]] = f[i];
    csv.rows.push_back(row);
  }
  return csv;
}

std::string temp_path(const std::string& name) { return test::write_temp(name, ""); }

nlohmann::json run_json(const std::string& args) {
  const auto r = test::run_cli(args + " --json 2>/dev/null");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  return nlohmann::json::parse(r.output);
}

double a100_usd_per_gpu_hour() {
  const cli::PriceList list = cli::load_price_list(resolve_data_ref("hwprofiles", "prices", "test", ""));
  return *cli::rent_price("a100-80gb-sxm", list, {}).usd_per_gpu_hour;
}

// The columns every command writes, in order.
void check_columns(const Csv& csv) {
  CHECK(csv.header == load_table_columns());
  CHECK(csv.header == std::vector<std::string>{"model", "hw", "quant", "tp", "ep", "replicas", "engine", "rate_per_s", "requests_per_s",
                                               "output_tokens_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
                                               "e2e_p50_s", "e2e_p99_s", "meets_slo", "stable_rate_per_s", "usd_per_hour",
                                               "usd_per_million_output_tokens"});
}

// $/h over the output tokens that level served in an hour, per million.
void check_cost(const Csv& csv, std::size_t i, double usd_per_hour) {
  CHECK(csv.number(i, "usd_per_hour") == doctest::Approx(usd_per_hour).epsilon(1e-5));
  CHECK(csv.number(i, "usd_per_million_output_tokens") ==
        doctest::Approx(usd_per_hour / (csv.number(i, "output_tokens_per_s") * 3600.0) * 1e6).epsilon(1e-5));
}
}  // namespace

TEST_CASE("saturate --load-csv: one row per probe, by rate, with the probe's figures and the stable rate") {
  const std::string out = temp_path("sat_load.csv");
  const auto j = run_json("saturate " + kSmall + " --slo ttft=2s,tpot=100ms --replications 1 --tolerance 0.1 --load-csv " + out);
  const Csv csv = read_csv(out);
  check_columns(csv);
  const auto& probes = j["probes"];
  REQUIRE(csv.rows.size() == probes.size());
  double last = 0.0;
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    CHECK(csv.number(i, "rate_per_s") > last);  // sorted by the offered rate
    last = csv.number(i, "rate_per_s");
    bool found = false;
    for (const auto& p : probes) {
      if (std::fabs(p["rate_per_s"].get<double>() / last - 1.0) > 1e-5) continue;
      found = true;
      CHECK(csv.rows[i].at("meets_slo") == (p["meets_slo"].get<bool>() ? "true" : "false"));
    }
    CHECK(found);
    CHECK(csv.rows[i].at("model") == "llama-2-7b");
    CHECK(csv.rows[i].at("hw") == "a100-80gb-sxm");
    CHECK(csv.rows[i].at("quant") == "fp16");
    CHECK(csv.rows[i].at("tp") == "1");
    CHECK(csv.number(i, "stable_rate_per_s") == doctest::Approx(j["stable_qps"].get<double>()).epsilon(1e-5));
    // Achieved throughput at most the offered rate (plus the noise of 120 Poisson arrivals).
    CHECK(csv.number(i, "requests_per_s") <= 1.5 * last);
    CHECK(csv.number(i, "ttft_p99_s") >= csv.number(i, "ttft_p50_s"));
    CHECK(csv.number(i, "tpot_p99_s") >= csv.number(i, "tpot_p50_s"));
    check_cost(csv, i, a100_usd_per_gpu_hour());  // one GPU at the bundled list's price
  }
}

TEST_CASE("sweep --load-csv: one row per rate of the grid, with the sweep's own cells; another grid is refused") {
  const std::string out = temp_path("sweep_load.csv");
  const auto j = run_json("sweep " + kSmall + " --grid workload.arrival.rate_per_s=2,8 --slo ttft=2s --load-csv " + out);
  const Csv csv = read_csv(out);
  check_columns(csv);
  REQUIRE(csv.rows.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& row = j[i];
    CHECK(csv.number(i, "rate_per_s") == std::stod(row["workload.arrival.rate_per_s"].get<std::string>()));
    CHECK(csv.number(i, "ttft_p99_s") == doctest::Approx(row["latency.ttft_s.p99"].get<double>()).epsilon(1e-5));
    CHECK(csv.number(i, "tpot_p50_s") == doctest::Approx(row["latency.tpot_s.p50"].get<double>()).epsilon(1e-5));
    CHECK(csv.number(i, "requests_per_s") == doctest::Approx(row["throughput.requests_per_s"].get<double>()).epsilon(1e-5));
    CHECK(csv.rows[i].at("meets_slo") == (row["slo.met"].get<bool>() ? "true" : "false"));
    CHECK(csv.rows[i].at("stable_rate_per_s").empty());  // a sweep searches no rate
  }
  const auto bad = test::run_cli("sweep " + kSmall + " --grid engine.max_num_seqs=8,16 --load-csv " + out);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("servesim sweep: --load-csv: writes latency against the arrival rate") != std::string::npos);
}

TEST_CASE("plan --load-csv: every option's probes, its stable rate and one replica's price") {
  const std::string out = temp_path("plan_load.csv");
  const auto j = run_json("plan --model llama-2-7b --rate 4 --slo ttft=2s,tpot=100ms --hw a100-80gb-sxm,h100-sxm --tp 1,2 --replications 1 "
                          "--tolerance 0.1 --workload " + kSmall + " --load-csv " + out);
  const Csv csv = read_csv(out);
  check_columns(csv);
  std::size_t seen = 0;
  for (const auto& row : j["rows"]) {
    if (!row["meets_slo"].get<bool>()) continue;  // here: h100-sxm tp 2 has no saturation rate, so no probes kept
    const std::string hw = row["hw"], tp = std::to_string(row["tp"].get<int>());
    std::size_t n = 0, stable_found = 0;
    for (std::size_t i = 0; i < csv.rows.size(); ++i) {
      if (csv.rows[i].at("hw") != hw || csv.rows[i].at("tp") != tp) continue;
      ++n;
      CHECK(csv.rows[i].at("replicas") == "1");  // a probe is one replica
      CHECK(csv.rows[i].at("engine") == row["engine"].get<std::string>());
      const double stable = row["stable_qps_per_replica"];
      CHECK(csv.number(i, "stable_rate_per_s") == doctest::Approx(stable).epsilon(1e-5));
      const double rate = csv.number(i, "rate_per_s");
      // The search's answer: rates up to the stable one met the SLO, the stable rate among them.
      if (rate <= stable * (1 + 1e-9)) CHECK(csv.rows[i].at("meets_slo") == "true");
      if (std::fabs(rate / stable - 1.0) < 1e-5) ++stable_found;
      check_cost(csv, i, row["usd_per_gpu_hour"].get<double>() * row["tp"].get<double>());
    }
    CHECK(n > 1);
    CHECK(stable_found == 1);
    seen += n;
  }
  CHECK(seen == csv.rows.size());
}

TEST_CASE("pareto_front: the points nothing beats on both latency and cost") {
  const std::vector<CostPoint> points = {{"a", 0.5, 10.0, ""}, {"b", 0.2, 20.0, ""}, {"c", 0.6, 12.0, ""},
                                         {"d", 0.2, 20.0, ""}, {"e", 0.9, 9.0, ""},  {"f", 0.5, 11.0, ""}};
  // c is beaten by a (faster and cheaper), f by a (as fast, cheaper); b and d tie and stay.
  CHECK(pareto_front(points) == std::vector<bool>{true, true, false, true, true, false});
  CHECK(pareto_front({}).empty());
}
