// See plan_prices.hpp.
#include "sim/cli/plan_prices.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"

namespace servesim::cli {

namespace {
constexpr double kHoursPerYear = 8760.0;
constexpr double kMaxUsd = 1e9;  // any price per GPU-hour or per GPU a file may hold

std::string money(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, usd >= 100.0 ? "$%.0f" : "$%.2f", usd);
  return buf;
}

PriceQuote read_quote(JsonReader q) {
  PriceQuote out;
  out.provider = q.string("provider");
  out.usd_per_gpu_hour = q.number_in("usd_per_gpu_hour", 1e-9, kMaxUsd);
  out.offer = q.string("offer");
  out.as_of = q.string("as_of");
  out.source = q.string("source");
  q.finish();
  return out;
}

void read_own(JsonReader o, GpuPriceEntry& e) {
  e.purchase_usd = o.number_in("purchase_usd", 1e-9, kMaxUsd);
  e.purchase_source = o.string("purchase_source");
  e.watts = o.number_in("watts", 1e-9, 1e6);
  e.watts_source = o.string("watts_source");
  o.finish();
}

GpuPriceEntry read_gpu(const nlohmann::json& v, const std::string& path, const std::string& key) {
  JsonReader g(v, path, key);
  GpuPriceEntry e;
  if (g.has("quotes")) {
    const nlohmann::json& quotes = g.raw("quotes");
    if (!quotes.is_array() || quotes.empty()) g.fail("quotes", "must be a non-empty array of {provider, usd_per_gpu_hour, offer, as_of, source}");
    for (std::size_t i = 0; i < quotes.size(); ++i) {
      e.quotes.push_back(read_quote(JsonReader(quotes[i], path, key + ".quotes[" + std::to_string(i) + "]")));
    }
    e.usd_per_gpu_hour = median_price(e.quotes);
  } else if (g.has("usd_per_gpu_hour")) {
    e.usd_per_gpu_hour = g.number_in("usd_per_gpu_hour", 1e-9, kMaxUsd);
    g.string("source");
    for (const char* k : {"instance", "gpus_per_instance", "usd_per_instance_hour", "region", "note"}) g.accept(k);
  } else {
    e.unpriced = g.string("unpriced");
  }
  if (g.has("quotes") + g.has("usd_per_gpu_hour") + g.has("unpriced") > 1) {
    g.fail("unpriced", "give one of quotes, usd_per_gpu_hour or unpriced");
  }
  if (auto own = g.object_if("own")) read_own(*own, e);
  g.accept("note");
  g.finish();
  return e;
}

// "h100-sxm=2.5": the name and a positive finite price, or one line naming the flag.
std::pair<std::string, double> gpu_price_item(const std::string& item, const std::string& flag) {
  const std::size_t eq = item.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
    throw InputError("servesim plan", flag, "expected GPU=USD (e.g. h100-sxm=2.5), got '" + item + "'");
  }
  const std::string gpu = item.substr(0, eq), number = item.substr(eq + 1);
  resolve_data_ref("hwprofiles", gpu, "servesim plan", flag);  // an unknown name exits 2 with the close ones
  char* end = nullptr;
  const double usd = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(usd) || usd <= 0.0 || usd > kMaxUsd) {
    throw InputError("servesim plan", flag, gpu + ": the price must be a positive number of dollars, got '" + number + "'");
  }
  return {gpu, usd};
}
}  // namespace

double median_price(const std::vector<PriceQuote>& quotes) {
  std::vector<double> v;
  for (const PriceQuote& q : quotes) v.push_back(q.usd_per_gpu_hour);
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

PriceList load_price_list(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  JsonReader r(doc, path, "");
  r.accept("schema");
  r.accept("notes");
  PriceList out;
  out.path = path;
  out.read_on = r.string("read_on");
  out.basis = r.string_or("basis", "");
  if (r.string("currency") != "USD") r.fail("currency", "must be USD");
  const auto& gpus = r.raw("gpus");
  if (!gpus.is_object()) r.fail("gpus", "must be an object keyed by hardware profile name");
  for (const auto& [name, v] : gpus.items()) out.gpus[name] = read_gpu(v, path, "gpus." + name);
  r.finish();
  return out;
}

std::map<std::string, double> parse_gpu_prices(const std::string& value, const std::string& flag) {
  std::map<std::string, double> out;
  const std::vector<std::string> items = split_commas(value);
  if (items.empty()) throw InputError("servesim plan", flag, "expected GPU=USD[,GPU=USD...], got an empty value");
  for (const std::string& item : items) {
    const auto [gpu, usd] = gpu_price_item(item, flag);
    if (!out.emplace(gpu, usd).second) throw InputError("servesim plan", flag, gpu + " is given twice");
  }
  return out;
}

double own_usd_per_gpu_hour(double purchase_usd, double watts, const OwnInputs& in) {
  const double capital_per_hour = (purchase_usd + in.server_usd_per_gpu) / (in.years * kHoursPerYear);
  const double power_per_hour = watts / 1000.0 * in.usd_per_kwh * in.pue;
  return (capital_per_hour + power_per_hour) / in.utilization;
}

GpuPrice rent_price(const std::string& gpu, const PriceList& list, const std::map<std::string, double>& overrides) {
  GpuPrice p;
  if (const auto o = overrides.find(gpu); o != overrides.end()) {
    p.usd_per_gpu_hour = o->second;
    p.basis = "--price";
    p.detail = gpu + " " + money(o->second) + " (--price)";
    return p;
  }
  const auto e = list.gpus.find(gpu);
  if (e == list.gpus.end() || !e->second.usd_per_gpu_hour) {
    p.unpriced = e == list.gpus.end() ? "not in the price list" : e->second.unpriced;
    return p;
  }
  p.usd_per_gpu_hour = e->second.usd_per_gpu_hour;
  const std::vector<PriceQuote>& quotes = e->second.quotes;
  if (quotes.empty()) {
    p.basis = "file";
    p.detail = gpu + " " + money(*p.usd_per_gpu_hour) + " (" + list.path + ")";
    return p;
  }
  for (const PriceQuote& q : quotes) p.providers += (p.providers.empty() ? "" : ", ") + q.provider;
  p.basis = quotes.size() == 1 ? "1 provider" : "median of " + std::to_string(quotes.size());
  p.detail = gpu + " " + money(*p.usd_per_gpu_hour) + " (" + (quotes.size() == 1 ? "" : "median of ") + p.providers + ")";
  return p;
}

GpuPrice own_price(const std::string& gpu, const PriceList& list, const std::map<std::string, double>& purchase_overrides,
                   const OwnInputs& in) {
  GpuPrice p;
  const auto e = list.gpus.find(gpu);
  const GpuPriceEntry* entry = e == list.gpus.end() ? nullptr : &e->second;
  const auto o = purchase_overrides.find(gpu);
  const std::optional<double> purchase = o != purchase_overrides.end() ? std::optional<double>(o->second)
                                         : entry ? entry->purchase_usd
                                                 : std::nullopt;
  if (!purchase || !entry || !entry->watts) {
    p.unpriced = !purchase ? "no purchase price (--purchase " + gpu + "=USD)" : "no power draw in the price list";
    return p;
  }
  p.usd_per_gpu_hour = own_usd_per_gpu_hour(*purchase, *entry->watts, in);
  p.basis = "owned";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s %s (%s%s + %s server, %.0f W)", gpu.c_str(), money(*p.usd_per_gpu_hour).c_str(),
                money(*purchase).c_str(), o != purchase_overrides.end() ? " --purchase" : "", money(in.server_usd_per_gpu).c_str(),
                *entry->watts);
  p.detail = buf;
  return p;
}

std::optional<double> listed_usd_per_hour(const Scenario& s) {
  if (s.disaggregation.enabled || s.parallel.instances_per_gpu > 1) return std::nullopt;
  const PriceList list = load_price_list(resolve_data_ref("hwprofiles", "prices", "servesim", "hwprofiles/prices.json"));
  const GpuPrice price = rent_price(s.hw.name, list, {});
  if (!price.usd_per_gpu_hour) return std::nullopt;
  return *price.usd_per_gpu_hour * static_cast<double>(s.parallel.gpus_per_replica() * s.parallel.data_parallel_size);
}

}  // namespace servesim::cli
