// What plan charges per GPU-hour: the bundled list's basis (per GPU the median of named providers'
// on-demand prices, or a reason it has none), --price overrides, --own's arithmetic, and one-line
// refusals of bad prices naming the flag.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/cli/plan_prices.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"
#include "../support.hpp"

using namespace servesim;
using namespace servesim::cli;

namespace {
const std::string kSmall = std::string(servesim::test::test_data_dir()) + "/dist/small.json";
const std::string kPlan = "plan --model llama-2-7b --rate 4 --slo ttft=2s,tpot=100ms --tp 1 --replications 1 --tolerance 0.1 "
                          "--hw a100-80gb-sxm,h100-sxm --workload " + kSmall;

nlohmann::json plan_json(const std::string& extra) {
  const auto r = test::run_cli(kPlan + " --json " + extra + " 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output);
}
double gpu_hour(const nlohmann::json& row) { return row["usd_per_gpu_hour"].get<double>(); }
}  // namespace

TEST_CASE("price list: the median of the quotes") {
  CHECK(median_price({{"a", "", "", "", 3.78}, {"b", "", "", "", 3.9492}, {"c", "", "", "", 2.69}}) == 3.78);
  CHECK(median_price({{"a", "", "", "", 2.86}, {"b", "", "", "", 2.79}}) == doctest::Approx(2.825));
  CHECK(median_price({{"a", "", "", "", 0.86}}) == 0.86);
}

TEST_CASE("the bundled price list prices every bundled GPU from named providers, or says why not") {
  const PriceList list = load_price_list(resolve_data_ref("hwprofiles", "prices", "test", ""));
  CHECK_FALSE(list.basis.empty());
  for (const std::string& gpu : bundled_names("hwprofiles")) {
    if (gpu == "prices") continue;
    INFO(gpu);
    REQUIRE(list.gpus.count(gpu) == 1);
    const GpuPriceEntry& e = list.gpus.at(gpu);
    if (!e.usd_per_gpu_hour) {
      CHECK_FALSE(e.unpriced.empty());
      continue;
    }
    REQUIRE_FALSE(e.quotes.empty());  // the default basis: quotes, not a bare number
    for (const PriceQuote& q : e.quotes) {
      CHECK_FALSE(q.provider.empty());
      CHECK_FALSE(q.as_of.empty());
      CHECK(q.source.rfind("https://", 0) == 0);
    }
    CHECK(*e.usd_per_gpu_hour == median_price(e.quotes));
    const GpuPrice p = rent_price(gpu, list, {});
    CHECK(p.detail.find(e.quotes.front().provider) != std::string::npos);
  }
}

TEST_CASE("--own: (purchase + server) / (years x 8760 h) + kW x $/kWh x PUE, over the utilisation") {
  OwnInputs in;
  const double expect = (30000.0 / (3.0 * 8760.0) + 0.7 * 0.08 * 1.2) / 0.7;
  CHECK(own_usd_per_gpu_hour(30000.0, 700.0, in) == doctest::Approx(expect));
  in.server_usd_per_gpu = 10000.0;
  in.years = 5.0;
  in.utilization = 1.0;
  CHECK(own_usd_per_gpu_hour(30000.0, 700.0, in) == doctest::Approx(40000.0 / (5.0 * 8760.0) + 0.7 * 0.08 * 1.2));
}

TEST_CASE("plan --price: rows carry the price basis; a cheap enough H100 comes first") {
  const auto base = plan_json("");
  REQUIRE(base["rows"].size() == 2);
  for (const auto& row : base["rows"]) CHECK(row["price_basis"].get<std::string>().rfind("median of", 0) == 0);
  CHECK(base["prices"]["mode"] == "rent");
  const auto cheap = plan_json("--price h100-sxm=0.01");
  const auto& first = cheap["rows"][0];
  std::printf("--price h100-sxm=0.01: first %s at $%.2f/M tokens (was %s first)\n", first["hw"].get<std::string>().c_str(),
              first["usd_per_million_output_tokens"].get<double>(), base["rows"][0]["hw"].get<std::string>().c_str());
  CHECK(first["hw"] == "h100-sxm");
  CHECK(first["price_basis"] == "--price");
  CHECK(gpu_hour(first) == 0.01);
  CHECK(cheap["cheapest"]["hw"] == "h100-sxm");
}

TEST_CASE("plan --own: each row's price is the ownership arithmetic, and a purchase price moves the order as it says") {
  const PriceList list = load_price_list(resolve_data_ref("hwprofiles", "prices", "test", ""));
  const OwnInputs in;  // the flags' defaults
  // The bundled purchase prices: each row's price is the formula's, with the list's watts.
  const auto own = plan_json("--own");
  CHECK(own["prices"]["mode"] == "own");
  for (const auto& row : own["rows"]) {
    const GpuPriceEntry& e = list.gpus.at(row["hw"].get<std::string>());
    CHECK(gpu_hour(row) == doctest::Approx(own_usd_per_gpu_hour(*e.purchase_usd, *e.watts, in)));
    CHECK(row["price_basis"] == "owned");
  }
  // An H100 bought for $1 costs less per hour than any A100 the list prices, so it ranks first; an
  // H100 at $10M ranks last.
  const auto cheap = plan_json("--own --purchase h100-sxm=1");
  CHECK(cheap["rows"][0]["hw"] == "h100-sxm");
  CHECK(gpu_hour(cheap["rows"][0]) == doctest::Approx(own_usd_per_gpu_hour(1.0, *list.gpus.at("h100-sxm").watts, in)));
  const auto dear = plan_json("--own --purchase h100-sxm=10000000");
  CHECK(dear["rows"][0]["hw"] == "a100-80gb-sxm");
  CHECK(dear["rows"][1]["hw"] == "h100-sxm");
}

TEST_CASE("plan: a bad --price or --purchase is one line naming the flag, exit 2") {
  for (const std::string bad : {"--price h100-sxm", "--price h100-sxm=", "--price =2", "--price h100=2", "--price h100-sxm=-1",
                                "--price h100-sxm=0", "--price h100-sxm=abc", "--price h100-sxm=nan", "--price h100-sxm=1,h100-sxm=2",
                                "--price l40s=1", "--purchase h100-sxm=1", "--own --price h100-sxm=1", "--own --purchase h100-sxm=-5",
                                "--own-years 3"}) {
    const auto r = test::run_cli(kPlan + " " + bad);
    INFO(bad, " -> ", r.output);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    const std::string flag = bad.substr(0, bad.find(' '));
    const bool names_flag = r.output.find(flag + ":") != std::string::npos ||
                            (bad.find("--own --") == 0 && r.output.find(bad.substr(6, bad.find(' ', 6) - 6) + ":") != std::string::npos);
    CHECK(names_flag);
  }
}
