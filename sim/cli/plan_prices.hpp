// What a GPU-hour costs in `servesim plan`: renting (hwprofiles/prices.json: per GPU the median of
// named providers' on-demand list prices, each quote with its provider, offer, date and source;
// --price GPU=USD overrides) or owning (--own: purchase price and server share amortized over the
// years of use, power at the wall, divided by the utilisation).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"

namespace servesim::cli {

struct PriceQuote {
  std::string provider, offer, as_of, source;
  double usd_per_gpu_hour = 0.0;
};

// One GPU's entry in the price list.
struct GpuPriceEntry {
  std::vector<PriceQuote> quotes;        // the providers' list prices (empty: a single `price`)
  std::optional<double> usd_per_gpu_hour;  // the median of the quotes, or the file's one price
  std::string unpriced;                    // why it has no price (when usd_per_gpu_hour is empty)
  // Ownership (--own): purchase price per GPU and its power draw, with their sources.
  std::optional<double> purchase_usd, watts;
  std::string purchase_source, watts_source;
};

struct PriceList {
  std::string path, read_on, basis;
  std::map<std::string, GpuPriceEntry> gpus;
};

// hwprofiles/prices.json or --prices FILE, read strictly (errors name the file and key). Per GPU:
// "quotes" [{provider, usd_per_gpu_hour, offer, as_of, source}] (the price is their median), or
// "usd_per_gpu_hour" with "source" (one price, e.g. a contract's), or "unpriced" with the reason;
// optional "own": {purchase_usd, purchase_source, watts, watts_source}.
PriceList load_price_list(const std::string& path);

// The median of the quotes' prices (the mean of the middle two for an even count).
double median_price(const std::vector<PriceQuote>& quotes);

// --price GPU=USD[,GPU=USD] (and --purchase): each GPU a bundled hardware profile name or path,
// each price positive and finite; anything else is one line naming `flag`, exit 2.
std::map<std::string, double> parse_gpu_prices(const std::string& value, const std::string& flag);

// --own's inputs besides the purchase prices.
struct OwnInputs {
  double years = 3.0;                 // amortization
  double utilization = 0.7;           // share of the hours the GPUs serve
  double usd_per_kwh = 0.08;
  double pue = 1.2;                   // facility power over IT power
  double server_usd_per_gpu = 0.0;    // the host's share (CPU, memory, chassis, network) per GPU
};

// Owning one GPU for an hour of service: (purchase + server share) / (years x 8760 h) plus
// watts / 1000 x $/kWh x PUE, all over the utilisation.
double own_usd_per_gpu_hour(double purchase_usd, double watts, const OwnInputs& in);

// The price a plan uses per GPU, and its basis in words ("median of Lambda, Modal, RunPod",
// "--price", "owned: $30000 + $0 server, 700 W"), or why there is none.
struct GpuPrice {
  std::optional<double> usd_per_gpu_hour;
  std::string basis;     // short: "median of 3", "1 provider", "--price", "file", "owned"
  std::string providers; // "Lambda, Modal, RunPod" (renting from the list)
  std::string detail;    // one line for the header: what the price rests on
  std::string unpriced;  // why there is no price
};
GpuPrice rent_price(const std::string& gpu, const PriceList& list, const std::map<std::string, double>& overrides);
GpuPrice own_price(const std::string& gpu, const PriceList& list, const std::map<std::string, double>& purchase_overrides,
                   const OwnInputs& in);

// What a scenario's GPUs cost per hour at the bundled list's price (saturate's and sweep's
// --load-csv): its replicas' GPUs (tensor x pipeline parallel) at the median price of its hardware;
// none when the GPU is unpriced or the scenario shares GPUs or splits prefill and decode.
std::optional<double> listed_usd_per_hour(const Scenario& s);

}  // namespace servesim::cli
