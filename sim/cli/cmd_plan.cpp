// `servesim plan --model M --rate R --slo ... [--hw all|a,b] [--quant bf16,fp8,w4a16-awq,...]
//  [--tp auto|1,2,4,8] [--workload SCENARIO.json] [--prices FILE] [--json] [--csv FILE] [--md FILE]`:
// for each GPU, precision and tensor-parallel size, whether the model fits, the replicas and GPUs
// needed for rate R under the SLO and the cost per million output tokens.
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/analysis/plan.hpp"
#include "sim/cli/analysis_common.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/options.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/model/quant.hpp"
#include "sim/serve/memory_plan.hpp"

namespace servesim::cli {

namespace {
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// hwprofiles/prices.json: {"schema", "read_on", "currency", "notes", "gpus": {name: {"usd_per_gpu_hour", "source", ...}}}
std::map<std::string, double> load_prices(const std::string& path) {
  const nlohmann::json doc = load_json_file(path);
  JsonReader r(doc, path, "");
  r.accept("schema");
  r.accept("notes");
  r.string("read_on");
  const std::string currency = r.string("currency");
  if (currency != "USD") r.fail("currency", "must be USD");
  std::map<std::string, double> out;
  const auto& gpus = r.raw("gpus");
  if (!gpus.is_object()) r.fail("gpus", "must be an object keyed by hardware profile name");
  for (const auto& [name, v] : gpus.items()) {
    JsonReader g(v, path, "gpus." + name);
    out[name] = g.positive("usd_per_gpu_hour");
    g.string("source");
    g.accept("instance");
    g.accept("gpus_per_instance");
    g.accept("usd_per_instance_hour");
    g.accept("region");
    g.accept("note");
    g.finish();
  }
  r.finish();
  return out;
}
}  // namespace

int cmd_plan(const std::vector<std::string>& args) {
  cxxopts::Options opts("servesim plan", "GPUs and cost per million output tokens to serve a rate under an SLO");
  opts.add_options()("model", "model name or path", cxxopts::value<std::string>())(
      "rate", "target arrival rate, req/s", cxxopts::value<double>())(
      "hw", "hardware profiles: all or a,b,...", cxxopts::value<std::string>()->default_value("all"))(
      "quant", "precisions to try: bf16, fp16, fp8, int8, w8a16, w4a16-gptq, w4a16-awq, nvfp4 (or fp4), mxfp4 (comma-separated)",
      cxxopts::value<std::string>()->default_value("bf16"))(
      "tp", "tensor-parallel sizes to try (1, 2, 4, 8), or auto: the smallest that fits each GPU and precision",
      cxxopts::value<std::string>()->default_value("auto"))(
      "ep", "expert-parallel sizes to try for mixture-of-experts models (1, 2, 4, 8; each with the TP sizes it divides), "
            "or tp: expert parallelism over the whole TP group",
      cxxopts::value<std::string>()->default_value("1"))(
      "workload", "scenario whose workload and engine settings are used", cxxopts::value<std::string>()->default_value("plan-chat"))(
      "prices", "price list (default: bundled hwprofiles/prices.json)", cxxopts::value<std::string>())(
      "replications", "seeds per probed rate", cxxopts::value<int>()->default_value("3"))(
      "tolerance", "saturate's relative tolerance", cxxopts::value<double>()->default_value("0.02"))("h,help", "show help");
  add_scenario_flags(opts);
  add_output_flags(opts);
  const auto p = parse_args(opts, args);
  if (p.count("help")) {
    std::cout << opts.help() << "\n";
    return kExitOk;
  }
  if (!p.count("model")) throw InputError("servesim plan", "--model", "required");
  if (!p.count("rate")) throw InputError("servesim plan", "--rate", "required");
  if (!p.count("slo")) throw InputError("servesim plan", "--slo", "required (e.g. ttft=1s,tpot=100ms,p=0.99)");
  const double rate = p["rate"].as<double>();
  if (!(rate > 0.0) || !std::isfinite(rate)) throw InputError("servesim plan", "--rate", "must be > 0");
  ScenarioSource src = scenario_source(p, resolve_data_ref("scenarios", p["workload"].as<std::string>(), "servesim plan", "--workload"));
  const std::string model = p["model"].as<std::string>();
  std::vector<std::string> hws = p["hw"].as<std::string>() == "all" ? bundled_names("hwprofiles") : split(p["hw"].as<std::string>());
  const bool auto_tp = p["tp"].as<std::string>() == "auto";
  std::vector<int> tps;
  for (const auto& t : auto_tp ? std::vector<std::string>{"1", "2", "4", "8"} : split(p["tp"].as<std::string>())) {
    if (t != "1" && t != "2" && t != "4" && t != "8") throw InputError("servesim plan", "--tp", "sizes are 1, 2, 4 or 8 (or auto), got '" + t + "'");
    tps.push_back(std::stoi(t));
  }
  const bool ep_is_tp = p["ep"].as<std::string>() == "tp";
  std::vector<int> eps;
  for (const auto& e : ep_is_tp ? std::vector<std::string>{} : split(p["ep"].as<std::string>())) {
    if (e != "1" && e != "2" && e != "4" && e != "8") throw InputError("servesim plan", "--ep", "sizes are 1, 2, 4 or 8 (or tp), got '" + e + "'");
    eps.push_back(std::stoi(e));
  }
  // The expert-parallel sizes that go with a TP size: those that divide it.
  const auto eps_for = [&](int tp) {
    if (ep_is_tp) return std::vector<int>{tp};
    std::vector<int> out;
    for (int e : eps) {
      if (tp % e == 0) out.push_back(e);
    }
    return out;
  };
  const std::vector<std::string> quants = split(p["quant"].as<std::string>());
  for (const auto& q : quants) {
    if (q != "bf16" && q != "fp16" && !parse_quant(q)) {
      throw InputError("servesim plan", "--quant", "unknown precision '" + q + "' (bf16, fp16, " + kQuantNames + ")");
    }
  }
  // One replica of `opt` at `r` req/s: the workload scenario with the option's keys set. Loading
  // checks the dtype, the TP split of the heads and (plan_memory) that the model fits.
  const auto make = [&](const PlanOption& opt, double r, std::uint64_t seed) -> Scenario {
    char rate_key[80];
    std::snprintf(rate_key, sizeof rate_key, "workload.arrival.rate_per_s=%.17g", r);
    std::vector<std::string> keys = {"model=\"" + model + "\"", "hardware=\"" + opt.hw + "\"", rate_key,
                                     "parallel.tensor_parallel_size=" + std::to_string(opt.tp)};
    if (opt.ep > 1) keys.push_back("parallel.expert_parallel_size=" + std::to_string(opt.ep));
    if (opt.quant == "bf16" || opt.quant == "fp16") {
      keys.push_back("dtype=\"" + opt.quant + "\"");
    } else {
      keys.push_back("quantization.method=\"" + opt.quant + "\"");
    }
    Scenario s = src.load(keys, static_cast<long long>(seed));
    plan_memory(s);  // throws InputError when the model does not fit
    return s;
  };
  std::vector<PlanOption> options;
  for (const auto& hw : hws) {
    for (const auto& q : quants) {
      if (!auto_tp) {
        for (int tp : tps) {
          for (int ep : eps_for(tp)) options.push_back({hw, q, tp, ep});
        }
        continue;
      }
      // auto: the smallest TP that fits (more GPUs per replica only pay when the model needs them);
      // when none fits, TP 1 is listed with the reason.
      PlanOption chosen{hw, q, 1};
      for (int tp : tps) {
        try {
          make({hw, q, tp}, rate, 0);
          chosen.tp = tp;
          break;
        } catch (const InputError&) {
        }
      }
      for (int ep : eps_for(chosen.tp)) options.push_back({hw, q, chosen.tp, ep});
    }
  }
  PlanOptions o;
  o.target_rate_per_s = rate;
  o.saturate.replications = p["replications"].as<int>();
  o.saturate.rel_tolerance = p["tolerance"].as<double>();
  if (o.saturate.replications < 1 || o.saturate.replications > 100) throw InputError("--replications", "", "must be in [1, 100]");
  o.usd_per_gpu_hour = load_prices(p.count("prices") ? p["prices"].as<std::string>() : resolve_data_ref("hwprofiles", "prices", "servesim plan", "--prices"));
  const Scenario base = src.load({"model=\"" + model + "\""});
  o.saturate.start_rate_per_s = std::max(0.05, rate / 8.0);
  const Table t = plan(options, make, base.seed, o);
  emit_table(p, t, "# plan\n\n`servesim plan " + join_args(args) + "`");
  return kExitOk;
}

}  // namespace servesim::cli
