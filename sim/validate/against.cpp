// A benchmark result file as a scenario, and the comparison: see against.hpp.
#include "sim/validate/against.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "sim/core/error.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/scenario_io.hpp"

namespace servesim {

namespace {

std::string text_of(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// A length distribution for the scenario, and how it was chosen: the file's per-request lengths
// as an empirical histogram, else a normal with its mean and spread (clamped to its min and max,
// else to 4 standard deviations), else the mean alone.
nlohmann::json length_json(const BenchLengths& l, std::string& how) {
  if (!l.per_request.empty()) {
    std::map<std::int64_t, std::int64_t> counts;
    for (std::int64_t v : l.per_request) counts[std::max<std::int64_t>(1, v)] += 1;
    nlohmann::json tokens = nlohmann::json::array(), weights = nlohmann::json::array();
    for (const auto& entry : counts) {
      tokens.push_back(entry.first);
      weights.push_back(entry.second);
    }
    how = "the file's " + std::to_string(l.per_request.size()) + " per-request lengths (empirical, mean " + text_of(l.mean) + ")";
    return {{"impl", "empirical"}, {"tokens", tokens}, {"weights", weights}};
  }
  if (l.stddev > 0.0) {
    const auto lo = std::max<std::int64_t>(1, l.min > 0 ? l.min : static_cast<std::int64_t>(std::floor(l.mean - 4.0 * l.stddev)));
    const auto hi = std::max<std::int64_t>(lo, l.max > 0 ? l.max : static_cast<std::int64_t>(std::ceil(l.mean + 4.0 * l.stddev)));
    how = "normal, the file's mean " + text_of(l.mean) + " and spread " + text_of(l.stddev) + " in [" + std::to_string(lo) + ", " +
          std::to_string(hi) + "]";
    return {{"impl", "normal"}, {"mean_tokens", l.mean}, {"stddev_tokens", l.stddev}, {"min_tokens", lo}, {"max_tokens", hi}};
  }
  const auto v = std::max<std::int64_t>(1, std::llround(l.mean));
  how = "fixed at the file's mean, " + std::to_string(v);
  return {{"impl", "fixed"}, {"value_tokens", v}};
}

// The arrival process of the file's load, and a line saying so.
nlohmann::json arrival_json(const BenchLoad& load, std::string& how) {
  if (load.rate_per_s > 0.0) {
    nlohmann::json a = {{"impl", load.arrival}, {"rate_per_s", load.rate_per_s}};
    if (load.arrival == "gamma") a["cv"] = load.cv;
    how = load.arrival + " arrivals at " + text_of(load.rate_per_s) + " req/s" + (load.arrival == "gamma" ? " (cv " + text_of(load.cv) + ")" : "");
    if (load.concurrency > 0) {
      how += "; the client's cap of " + std::to_string(load.concurrency) +
             " outstanding requests is not modelled (an open loop: a request the cap would hold waits in the server's queue)";
    }
    return a;
  }
  if (load.concurrency > 0) {
    how = "a closed loop of " + std::to_string(load.concurrency) + " clients, each sending its next request when one returns";
    return {{"impl", "concurrency"}, {"clients", load.concurrency}};
  }
  how = "every request at t = 0 (rate inf, no concurrency cap)";
  return {{"impl", "all_at_once"}};
}

const char* model_key(BenchFormat f) {
  return f == BenchFormat::vllm_bench ? "model_id" : f == BenchFormat::genai_perf ? "input_config.model" : "model";
}

bool set_by_flag(const std::vector<std::string>& overrides, const std::string& key) {
  return std::any_of(overrides.begin(), overrides.end(), [&key](const std::string& o) { return o.rfind(key + "=", 0) == 0; });
}

// Where each part of the scenario came from: the file, --scenario, --set or servesim's default.
struct Origins {
  std::string model, hardware, tensor_parallel, engine, load, prompts, outputs;
};

// The scenario document: --scenario's (or a bare one), the file's model, tensor-parallel size and
// workload over it, then --set.
nlohmann::json scenario_doc(const BenchResult& b, const AgainstOptions& o, Origins& from) {
  nlohmann::json doc = o.scenario_path.empty() ? nlohmann::json::object() : load_json_file(o.scenario_path);
  if (!doc.is_object()) throw InputError(o.scenario_path, "(top level)", "must be an object (a scenario)");
  const std::string from_scenario = o.scenario_path.empty() ? "servesim's default" : "--scenario " + o.scenario_path;
  const auto origin = [&](const std::string& key, const std::string& from_file) {
    return set_by_flag(o.overrides, key) ? std::string("--set") : !from_file.empty() ? from_file : from_scenario;
  };
  if (!doc.contains("name")) doc["name"] = "against " + std::filesystem::path(b.file).filename().string();
  if (!doc.contains("seed")) doc["seed"] = 1;
  if (!doc.contains("dtype")) doc["dtype"] = "bf16";
  std::string model_note;
  if (!b.model.empty()) {
    std::vector<std::string> candidates;
    const std::string card = bundled_model_for(b.model, &candidates);
    if (!card.empty()) {
      doc["model"] = card;
      model_note = std::string("the file's ") + model_key(b.format) + " " + b.model;
    } else if (set_by_flag(o.overrides, "model") || doc.contains("model")) {
      model_note = origin("model", "") + "; the file's " + b.model + " matches no single bundled card";
    } else {
      const std::string why = candidates.empty() ? "no bundled card matches '" + b.model + "'" : "several bundled cards match '" + b.model + "'";
      throw InputError(b.file, model_key(b.format), why + " (servesim list models): give --set model=NAME");
    }
  }
  if (b.tensor_parallel_size > 0) doc["parallel"]["tensor_parallel_size"] = b.tensor_parallel_size;
  nlohmann::json& w = doc["workload"];
  if (!w.is_object()) w = nlohmann::json::object();
  for (const char* k : {"arrival", "num_requests", "duration_s", "prompt_tokens", "output_tokens", "classes", "trace"}) w.erase(k);
  std::string arrival_how, prompt_how, output_how;
  w["arrival"] = arrival_json(b.load, arrival_how);
  w["num_requests"] = b.load.num_requests;
  w["prompt_tokens"] = length_json(b.prompt, prompt_how);
  w["output_tokens"] = length_json(b.output, output_how);
  for (const std::string& s : o.overrides) apply_override(doc, s, "--set");
  if (b.load.num_requests == 0 && !set_by_flag(o.overrides, "workload.num_requests")) {
    throw InputError(b.file, "request_count", "missing (GenAI-Perf before December 2024 did not write it): give --set workload.num_requests=N");
  }
  if (!doc.contains("model")) {
    throw InputError(b.file, "model", "the file does not name the model: give --set model=NAME (servesim list models) or --scenario");
  }
  if (!doc.contains("hardware")) {
    throw InputError(b.file, "hardware", "the file does not say which GPU served it: give --set hardware=NAME (servesim list hardware) or --scenario");
  }
  from.model = origin("model", model_note);
  from.hardware = origin("hardware", "");
  from.tensor_parallel = origin("parallel.tensor_parallel_size", b.tensor_parallel_size > 0 ? "the file" : "");
  from.engine = origin("engine.profile", "");
  from.load = arrival_how + ", " + std::to_string(b.load.num_requests) + " requests (" + origin("workload.arrival", "the file") + ")";
  from.prompts = prompt_how + " (" + origin("workload.prompt_tokens", "the file") + ")";
  from.outputs = output_how + " (" + origin("workload.output_tokens", "the file") + ")";
  return doc;
}

const LogHistogram& histogram_of(const RunMetrics& m, const std::string& metric) {
  if (metric == "ttft") return m.ttft_s;
  if (metric == "tpot") return m.tpot_s;
  if (metric == "itl") return m.itl_s;
  return m.e2e_s;
}

}  // namespace

AgainstCase against_case(const std::string& file, const AgainstOptions& options) {
  AgainstCase c;
  c.bench = read_bench_result(load_json_file(file), file, options.read);
  Origins from;
  c.scenario_doc = scenario_doc(c.bench, options, from);
  c.scenario = parse_scenario(c.scenario_doc, file + " (as a scenario)");
  const Scenario& s = c.scenario;
  c.assumptions = {
      "model: " + s.model.name + " (" + from.model + ")",
      "hardware: " + s.hw.name + " (" + from.hardware + ")",
      "tensor parallel: " + std::to_string(s.parallel.tensor_parallel_size) + " (" + from.tensor_parallel + ")",
      "engine: " + s.engine.profile.name + ", " + s.engine.profile.display_name + " (" + from.engine + "; --set engine.profile=NAME for another)",
      "load: " + from.load,
      "prompts: " + from.prompts,
      "outputs: " + from.outputs,
  };
  return c;
}

std::vector<AgainstRow> compare_against(const BenchResult& bench, const SimResult& result) {
  std::vector<AgainstRow> rows;
  const RunMetrics& m = result.metrics;
  for (const char* metric : {"ttft", "tpot", "itl", "e2e"}) {
    const auto it = bench.latency.find(metric);
    if (it == bench.latency.end()) continue;
    const LogHistogram& h = histogram_of(m, metric);
    for (const BenchStatistic& s : bench_statistics()) {
      const auto v = it->second.find(s.name);
      if (v == it->second.end()) continue;
      rows.push_back({metric, s.name, v->second, s.quantile < 0.0 ? h.mean() : h.quantile(s.quantile)});
    }
  }
  const double duration_s = ns_to_seconds(m.end_ns);
  const auto per_s = [duration_s](double n) { return duration_s > 0.0 ? n / duration_s : 0.0; };
  if (bench.requests_per_s) rows.push_back({"throughput", "requests_per_s", *bench.requests_per_s, per_s(static_cast<double>(m.completed))});
  if (bench.output_tokens_per_s) {
    rows.push_back({"throughput", "output_tokens_per_s", *bench.output_tokens_per_s, per_s(static_cast<double>(m.output_tokens))});
  }
  return rows;
}

const AgainstRow* find_row(const std::vector<AgainstRow>& rows, const std::string& metric, const std::string& statistic) {
  for (const AgainstRow& r : rows) {
    if (r.metric == metric && r.statistic == statistic) return &r;
  }
  return nullptr;
}

}  // namespace servesim
