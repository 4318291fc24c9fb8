// `servesim list models|hardware|policies|routers|cost-models|engines|metrics|keys`: what is
// bundled and selectable by name (`policies` lists the routers, cost models and speculative
// decoding's drafters too), the report
// metrics sweep --metrics and compare --threshold take, and the scenario-key reference
// (docs/scenario-keys.md).
#include <cstdio>
#include <iostream>

#include "sim/cli/commands.hpp"
#include "sim/config/scenario_keys.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/report_metrics.hpp"
#include "sim/io/scenario_io.hpp"
#include "sim/model/speculative.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "sim/serve/router.hpp"
#include "sim/serve/step_cost.hpp"

namespace servesim::cli {

int cmd_list(const std::vector<std::string>& args) {
  const std::string what = args.empty() ? "" : args[0];
  if (what == "models") {
    std::printf("%-14s %8s %7s %7s %6s %7s %8s %9s\n", "name", "params", "layers", "hidden", "heads", "kv_hds", "ffn", "max_ctx");
    for (const auto& name : bundled_names("models")) {
      const ModelSpec m = load_model(resolve_data_ref("models", name, "", ""));
      std::printf("%-14s %7.2fB %7lld %7lld %6lld %7lld %8lld %9lld\n", name.c_str(), m.total_params() / 1e9,
                  static_cast<long long>(m.num_layers), static_cast<long long>(m.hidden_size),
                  static_cast<long long>(m.num_attention_heads), static_cast<long long>(m.num_kv_heads),
                  static_cast<long long>(m.ffn_size), static_cast<long long>(m.max_context_tokens));
    }
  } else if (what == "hardware") {
    std::printf("%-16s %-28s %8s %10s %11s  %s\n", "name", "gpu", "mem GB", "HBM TB/s", "bf16 TFLOPS", "provenance");
    for (const auto& name : bundled_names("hwprofiles")) {
      const HwProfile hw = load_hw_profile(resolve_data_ref("hwprofiles", name, "", ""));
      std::printf("%-16s %-28s %8.1f %10.2f %11.1f  %s\n", name.c_str(), hw.display_name.c_str(), hw.memory_bytes / 1e9,
                  hw.hbm_bandwidth_bytes_per_s / 1e12, hw.peak_flops(Dtype::bf16) / 1e12, hw.provenance.kind.c_str());
    }
  } else if (what == "policies" || what == "routers" || what == "cost-models") {
    std::vector<const RegistryEntry*> all;
    if (what == "policies") {
      for (const auto& p : scheduler_policies()) all.push_back(&p);
    }
    if (what != "cost-models") {
      for (const auto& r : routers()) all.push_back(&r);
    }
    if (what != "routers") {
      for (const auto& m : step_cost_models()) all.push_back(&m);
    }
    if (what == "policies") {
      for (const auto& m : speculative_methods()) all.push_back(&m);
    }
    for (const RegistryEntry* p : all) {
      std::cout << p->name << ": " << p->description << "\n";
      for (const auto& param : p->params) {
        std::cout << "    " << param.name << " (" << param.type << ", default " << param.default_value << "): " << param.description << "\n";
      }
    }
  } else if (what == "keys") {
    // docs/scenario-keys.md (ctest scenario_keys_doc checks the committed copy is this output).
    std::cout << scenario_keys_markdown(registered_keys());
  } else if (what == "metrics") {
    for (const auto& m : report_metrics()) {
      std::cout << m.path << ": " << m.meaning << (m.present.empty() ? "" : " (only with " + m.present + ")") << "\n";
    }
  } else if (what == "engines") {
    for (const auto& name : bundled_names("scenarios/engines")) {
      const EngineProfile e = load_engine_profile(name, "", "");
      std::printf("%-16s %-40s graphs %-3s  %s, %s\n", name.c_str(), e.display_name.c_str(), e.launch.cuda_graphs ? "yes" : "no",
                  e.scheduler.c_str(), e.kv_cache.c_str());
    }
  } else {
    throw InputError("servesim list", "", "expected one of: models, hardware, policies, engines, routers, cost-models, metrics, keys");
  }
  return kExitOk;
}

}  // namespace servesim::cli
