// Scenario parsing: every key read through its declaration (config/scenario_keys.cpp: type,
// range, default), then the cross-checks vLLM itself makes at start-up.
#include "sim/io/scenario_io.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sim/core/suggest.hpp"
#include "sim/core/error.hpp"
#include "sim/io/data_paths.hpp"
#include "sim/io/engine_io.hpp"
#include "sim/io/hw_io.hpp"
#include "sim/io/increasing_sizes.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/key_reader.hpp"
#include "sim/io/model_io.hpp"
#include "sim/io/trace_reader.hpp"
#include "sim/model/speculative.hpp"
#include "sim/sched/batch_scheduler.hpp"
#include "sim/serve/parallel.hpp"
#include "sim/serve/router.hpp"
#include "sim/serve/step_cost.hpp"

namespace servesim {

namespace {

// Simulated time is int64 nanoseconds (292 years); a workload must fit well inside it.
constexpr double kMaxSimulatedSpanS = 1e9;

LengthDist parse_length(KeyReader r) {
  LengthDist d;
  const std::string impl = r.string("impl");
  auto bounds = [&](std::int64_t default_max) {
    d.min_tokens = r.integer("min_tokens", 1);
    d.max_tokens = default_max > 0 ? r.integer("max_tokens", default_max) : r.integer("max_tokens");
    if (d.max_tokens < d.min_tokens) r.fail("max_tokens", "must be >= min_tokens");
  };
  if (impl == "fixed") {
    d.kind = LengthDist::Kind::fixed;
    d.value_tokens = r.integer("value_tokens");
    d.min_tokens = d.max_tokens = d.value_tokens;
  } else if (impl == "uniform") {
    d.kind = LengthDist::Kind::uniform;
    d.min_tokens = r.integer("min_tokens");
    d.max_tokens = r.integer("max_tokens");
    if (d.max_tokens < d.min_tokens) r.fail("max_tokens", "must be >= min_tokens");
  } else if (impl == "normal") {
    d.kind = LengthDist::Kind::normal;
    d.mean_tokens = r.number("mean_tokens");
    d.stddev_tokens = r.number("stddev_tokens");
    bounds(0);
  } else if (impl == "lognormal") {
    d.kind = LengthDist::Kind::lognormal;
    d.mean_tokens = r.number("mean_tokens");
    d.sigma = r.number("sigma");
    bounds(0);
  } else if (impl == "zipf") {
    d.kind = LengthDist::Kind::zipf;
    d.zipf_s = r.number("s");
    bounds(0);
    if (d.max_tokens - d.min_tokens > 10'000'000) r.fail("max_tokens", "zipf support must be <= 1e7 tokens wide");
  } else if (impl == "empirical") {
    d.kind = LengthDist::Kind::empirical;
    const auto& tokens = r.raw("tokens");
    const auto& weights = r.raw("weights");
    if (!tokens.is_array() || tokens.empty()) r.fail("tokens", "must be a non-empty array of token counts");
    if (!weights.is_array() || weights.size() != tokens.size()) r.fail("weights", "must be an array as long as tokens");
    const KeyRange& length = r.declared("tokens").range;
    const KeyRange& weight = r.declared("weights").range;  // the documented range, enforced (1e308 used to pass)
    double total = 0.0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (!tokens[i].is_number_integer() || !length.contains(static_cast<double>(tokens[i].get<std::int64_t>()))) {
        r.fail("tokens", "[" + std::to_string(i) + "] must be an integer in " + length.text());
      }
      if (!weights[i].is_number() || !weight.contains(weights[i].get<double>())) {
        r.fail("weights", "[" + std::to_string(i) + "] must be a number in " + weight.text());
      }
      d.tokens.push_back(tokens[i].get<std::int64_t>());
      d.weights.push_back(weights[i].get<double>());
      total += d.weights.back();
    }
    if (total <= 0.0) r.fail("weights", "must not all be 0");
    d.min_tokens = *std::min_element(d.tokens.begin(), d.tokens.end());
    d.max_tokens = *std::max_element(d.tokens.begin(), d.tokens.end());
  } else if (impl == "trace") {
    d.kind = LengthDist::Kind::trace;
  }
  r.finish();
  return d;
}

ArrivalConfig parse_arrival(KeyReader r) {
  using K = ArrivalConfig::Kind;
  ArrivalConfig a;
  const std::string impl = r.string("impl");
  if (impl == "poisson") {
    a.kind = K::poisson;
    a.rate_per_s = r.number("rate_per_s");
  } else if (impl == "gamma") {
    a.kind = K::gamma;
    a.rate_per_s = r.number("rate_per_s");
    a.cv = r.number("cv");
  } else if (impl == "constant") {
    a.kind = K::constant;
    a.rate_per_s = r.number("rate_per_s");
  } else if (impl == "on_off") {
    a.kind = K::on_off;
    a.rate_per_s = r.number("rate_per_s");
    a.on_s = r.number("on_s");
    a.off_s = r.number("off_s");
  } else if (impl == "ramp") {
    a.kind = K::ramp;
    a.start_rate_per_s = r.number("start_rate_per_s");
    a.end_rate_per_s = r.number("end_rate_per_s");
    a.ramp_s = r.number("ramp_s");
  } else if (impl == "trace") {
    a.kind = K::trace;
  } else if (impl == "all_at_once") {
    a.kind = K::all_at_once;
  } else if (impl == "concurrency") {
    a.kind = K::concurrency;
    a.clients = r.integer("clients");
    a.think_time_s = r.number("think_time_s", a.think_time_s);
  } else if (impl == "stages") {
    a.kind = K::stages;
    const auto& stages = r.raw("stages");
    if (!stages.is_array() || stages.empty() || stages.size() > 1024) r.fail("stages", "must be an array of 1 to 1024 stages");
    double span_s = 0.0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      if (!stages[i].is_object()) r.fail("stages", "[" + std::to_string(i) + "] must be an object {impl, rate_per_s, duration_s}");
      KeyReader st = r.element(stages[i], "stages", i);
      ArrivalStage stage;
      stage.poisson = st.string("impl") == "poisson";
      stage.rate_per_s = st.number("rate_per_s");
      stage.duration_s = st.number("duration_s");
      st.finish();
      if (stage.rate_per_s * stage.duration_s > 1e12) st.fail("rate_per_s", "times duration_s is over 1e12 requests");
      span_s += stage.duration_s;
      a.stages.push_back(stage);
    }
    a.stage_gap_s = r.number("stage_gap_s", a.stage_gap_s);
    span_s += a.stage_gap_s * static_cast<double>(stages.size() - 1);
    if (span_s > kMaxSimulatedSpanS) r.fail("stages", "the stages and gaps span more than 1e9 simulated seconds");
  }
  r.finish();
  return a;
}

SloConfig parse_slo(KeyReader r, SloConfig s) {
  s.ttft_s = r.number("ttft_s", s.ttft_s);
  s.tpot_s = r.number("tpot_s", s.tpot_s);
  s.e2e_s = r.number("e2e_s", s.e2e_s);
  s.percentile = r.number("percentile", s.percentile);
  s.min_success_frac = r.number("min_success_frac", s.min_success_frac);
  r.finish();
  return s;
}

TraceConfig parse_trace(KeyReader r) {
  TraceConfig t;
  t.path = r.string("path");
  t.format = r.string("format");
  const auto& formats = trace_formats();
  if (std::find(formats.begin(), formats.end(), t.format) == formats.end()) {
    r.fail("format", "unknown trace format '" + t.format + "' (" + join_names(formats) + ")");
  }
  t.time_scale = r.number("time_scale", t.time_scale);
  t.loop = r.boolean("loop", t.loop);
  t.sort_arrivals = r.boolean("sort_arrivals", t.sort_arrivals);
  t.prefix_tokens = r.integer("prefix_tokens", t.prefix_tokens);
  if (t.prefix_tokens > 0 && t.format != "jsonl") r.fail("prefix_tokens", "only the jsonl format has prefix ids, got format '" + t.format + "'");
  r.finish();
  // Relative paths: from the working directory, else from the scenario file's directory.
  namespace fs = std::filesystem;
  if (fs::path(t.path).is_relative() && !fs::exists(t.path)) {
    const fs::path beside = fs::path(r.file()).parent_path() / t.path;
    if (fs::exists(beside)) t.path = beside.string();
  }
  if (!fs::exists(t.path)) r.fail("path", "trace file not found: '" + t.path + "'");
  t.open = trace_file_opener(t);
  return t;
}

std::vector<RequestClass> parse_classes(KeyReader& r, const SloConfig& default_slo) {
  std::vector<RequestClass> classes;
  const auto& arr = r.raw("classes");
  if (!arr.is_array() || arr.empty()) r.fail("classes", "must be a non-empty array of request classes");
  for (std::size_t i = 0; i < arr.size(); ++i) {
    KeyReader c = r.element(arr[i], "classes", i);
    RequestClass k;
    k.name = c.string("name");
    for (const auto& other : classes) {
      if (other.name == k.name) c.fail("name", "duplicate class name '" + k.name + "'");
    }
    k.weight = c.number("weight", k.weight);
    k.prompt_tokens = parse_length(c.object("prompt_tokens", "<length>"));
    k.output_tokens = parse_length(c.object("output_tokens", "<length>"));
    k.slo = c.has("slo") ? parse_slo(c.object("slo", "<slo>"), default_slo) : (c.accept("slo"), default_slo);
    c.finish();
    classes.push_back(k);
  }
  double total = 0.0;
  for (const auto& k : classes) total += k.weight;
  if (total <= 0.0) r.fail("classes", "weights must not all be 0");
  return classes;
}

// Checks across the workload's keys: a finite span, the trace the kinds need, sessions' lengths.
void check_workload(KeyReader& r, const WorkloadConfig& w) {
  using K = ArrivalConfig::Kind;
  if ((w.arrival.kind == K::poisson || w.arrival.kind == K::gamma || w.arrival.kind == K::constant) &&
      static_cast<double>(w.num_requests) / w.arrival.rate_per_s > kMaxSimulatedSpanS) {
    r.fail("arrival.rate_per_s", "too low for " + std::to_string(w.num_requests) +
                                     " requests: their arrivals would span more than 1e9 simulated seconds");
  }
  if (w.arrival.kind == K::trace && !w.trace) r.fail("arrival", "impl 'trace' needs workload.trace");
  if (w.arrival.kind == K::all_at_once && w.num_requests < 0) r.fail("num_requests", "required with all_at_once arrivals");
  for (const auto& k : w.classes) {
    const bool trace_lengths = k.prompt_tokens.kind == LengthDist::Kind::trace || k.output_tokens.kind == LengthDist::Kind::trace;
    if (trace_lengths && !w.trace) r.fail(w.legacy_lengths ? "prompt_tokens" : "classes", "length impl 'trace' needs workload.trace");
    if (trace_lengths && w.sessions.turns > 1) {
      r.fail("sessions", "later turns draw their lengths: sessions need drawn prompt/output lengths, not 'trace'");
    }
  }
}

WorkloadConfig parse_workload(KeyReader r, const SloConfig& default_slo) {
  WorkloadConfig w;
  if (auto t = r.object_if("trace")) w.trace = parse_trace(*t);
  w.duration_s = r.number("duration_s", w.duration_s);
  w.request_timeout_s = r.number("request_timeout_s", w.request_timeout_s);
  if (r.has("num_requests")) {
    w.num_requests = r.integer("num_requests");
  } else {
    r.accept("num_requests");
  }
  w.arrival = parse_arrival(r.object("arrival"));
  if (w.num_requests < 0 && w.duration_s <= 0.0 && !w.trace && w.arrival.kind != ArrivalConfig::Kind::stages) {
    r.fail("num_requests", "required unless workload.duration_s, workload.trace or arrival stages end the workload");
  }
  const bool top = r.has("prompt_tokens") || r.has("output_tokens");
  if (r.has("classes")) {
    if (top) r.fail("classes", "give lengths either per class or at the top of workload, not both");
    w.classes = parse_classes(r, default_slo);
    w.legacy_lengths = false;
  } else {
    r.accept("classes");
    RequestClass k;
    k.prompt_tokens = parse_length(r.object("prompt_tokens", "<length>"));
    k.output_tokens = parse_length(r.object("output_tokens", "<length>"));
    k.slo = default_slo;
    w.classes.push_back(k);
  }
  if (auto p = r.object_if("shared_prefix")) {
    w.shared_prefix.num_prefixes = p->integer("num_prefixes");
    w.shared_prefix.prefix_tokens = p->integer("prefix_tokens");
    w.shared_prefix.prompts_per_prefix = p->integer("prompts_per_prefix", 0);
    if (w.shared_prefix.prompts_per_prefix > 0 && w.classes.size() > 1) {
      p->fail("prompts_per_prefix", "a prompt pool draws its question lengths from one request class, got " +
                                        std::to_string(w.classes.size()));
    }
    p->finish();
  }
  if (auto p = r.object_if("sessions")) {
    w.sessions.turns = p->integer("turns");
    w.sessions.think_time_s = p->number("think_time_s", w.sessions.think_time_s);
    if (w.sessions.turns > 1 && w.shared_prefix.prompts_per_prefix > 0) {
      p->fail("turns", "multi-turn sessions do not combine with a prompt pool (workload.shared_prefix.prompts_per_prefix)");
    }
    p->finish();
  }
  if (r.has("priority_class_weights")) {
    const auto& a = r.raw("priority_class_weights");
    const std::string key = "priority_class_weights";
    // The declared range (1e308 used to pass: the weights' sum was inf and the classes NaN).
    const KeyRange& range = r.declared(key).range;
    if (!a.is_array() || a.empty() || a.size() > 16) r.fail(key, "must be an array of 1 to 16 numbers in " + range.text());
    for (const auto& v : a) {
      if (!v.is_number() || !range.contains(v.get<double>())) {
        r.fail(key, "must be an array of 1 to 16 numbers in " + range.text() + ", got " + v.dump());
      }
      w.priority_class_weights.push_back(v.get<double>());
    }
  } else {
    r.accept("priority_class_weights");
  }
  check_workload(r, w);
  r.finish();
  return w;
}

// The common keys, then every declared setting the chosen policy reads (config/scenario_keys.cpp
// names the SchedulerConfig field each fills; the policy's registry entry, sched/policies.cpp,
// names its own), so a new setting needs no code here.
SchedulerConfig parse_scheduler(KeyReader s) {
  SchedulerConfig c;
  c.impl = s.string("impl");
  if (!scheduler_policies().find(c.impl)) s.fail("impl", scheduler_policies().unknown(c.impl));
  c.order = s.string("scheduling_policy", "fcfs") == "priority" ? SchedulerConfig::Order::priority : SchedulerConfig::Order::fcfs;
  for (const ScenarioKey* k : keys_in("engine.scheduler")) {
    if (!policy_reads(c.impl, k->path)) continue;
    const std::string name = k->path.substr(k->path.rfind('.') + 1);
    if (const auto* f = std::get_if<std::int64_t SchedulerConfig::*>(&k->scheduler_field)) {
      c.**f = s.integer(name, c.**f);
    } else if (const auto* g = std::get_if<double SchedulerConfig::*>(&k->scheduler_field)) {
      c.**g = s.number(name, c.**g);
    }
  }
  s.finish([](const std::string& path) { return scheduler_policies().readers_of(path); });
  return c;
}

ParallelConfig parse_parallel(KeyReader r) {
  ParallelConfig p;
  p.tensor_parallel_size = r.integer("tensor_parallel_size", p.tensor_parallel_size);
  p.pipeline_parallel_size = r.integer("pipeline_parallel_size", p.pipeline_parallel_size);
  p.data_parallel_size = r.integer("data_parallel_size", p.data_parallel_size);
  p.num_micro_batches = r.integer("num_micro_batches", p.num_micro_batches);
  p.instances_per_gpu = r.integer("instances_per_gpu", p.instances_per_gpu);
  p.expert_parallel_size = r.integer("expert_parallel_size", p.expert_parallel_size);
  p.expert_load_imbalance = r.number("expert_load_imbalance", p.expert_load_imbalance);
  if (p.tensor_parallel_size % p.expert_parallel_size != 0) {
    r.fail("expert_parallel_size", "must divide tensor_parallel_size (" + std::to_string(p.tensor_parallel_size) + "), got " +
                                       std::to_string(p.expert_parallel_size));
  }
  if (p.expert_load_imbalance > static_cast<double>(p.expert_parallel_size)) {
    r.fail("expert_load_imbalance", "must be <= expert_parallel_size (one GPU cannot receive more than every token)");
  }
  p.enable_attention_dp = r.boolean("enable_attention_dp", p.enable_attention_dp);
  if (r.has("attention_dp_load_imbalance") && !p.enable_attention_dp) {
    r.fail("attention_dp_load_imbalance", "only read with enable_attention_dp true");
  }
  p.attention_dp_load_imbalance = r.number("attention_dp_load_imbalance", p.attention_dp_load_imbalance);
  if (p.enable_attention_dp) {
    const std::string tp = std::to_string(p.tensor_parallel_size);
    if (p.tensor_parallel_size < 2) r.fail("enable_attention_dp", "needs tensor_parallel_size > 1: its GPUs are the attention ranks");
    if (p.pipeline_parallel_size > 1) r.fail("enable_attention_dp", "does not combine with pipeline_parallel_size > 1");
    if (p.expert_parallel_size != p.tensor_parallel_size) {
      r.fail("expert_parallel_size", "must equal tensor_parallel_size (" + tp + ") with enable_attention_dp: the experts split over every rank, got " +
                                         std::to_string(p.expert_parallel_size));
    }
    if (p.attention_dp_load_imbalance > static_cast<double>(p.tensor_parallel_size)) {
      r.fail("attention_dp_load_imbalance", "must be <= tensor_parallel_size (" + tp + "): one rank cannot hold more than the batch");
    }
  }
  if (p.instances_per_gpu > 1 && p.tensor_parallel_size * p.pipeline_parallel_size > 1) {
    r.fail("instances_per_gpu", "several instances per GPU need tensor_parallel_size = pipeline_parallel_size = 1");
  }
  r.finish();
  return p;
}

RouterConfig parse_router(KeyReader r) {
  RouterConfig c;
  c.impl = r.string("impl");
  if (!routers().find(c.impl)) r.fail("impl", routers().unknown(c.impl));
  c.balance_abs_threshold = r.number("balance_abs_threshold", c.balance_abs_threshold);
  c.balance_rel_threshold = r.number("balance_rel_threshold", c.balance_rel_threshold);
  r.finish();
  return c;
}

CostModelConfig parse_cost_model(KeyReader r) {
  CostModelConfig c;
  c.impl = r.string("impl", c.impl);
  if (!step_cost_models().find(c.impl)) r.fail("impl", step_cost_models().unknown(c.impl));
  c.interpolate_decode = r.boolean("interpolate_decode", c.interpolate_decode);
  r.finish();
  return c;
}

PoolConfig parse_pool(KeyReader r, const ParallelConfig& defaults) {
  PoolConfig p;
  p.replicas = r.integer("replicas");
  p.tensor_parallel_size = r.integer("tensor_parallel_size", defaults.tensor_parallel_size);
  p.pipeline_parallel_size = r.integer("pipeline_parallel_size", defaults.pipeline_parallel_size);
  r.finish();
  return p;
}

DisaggregationConfig parse_disaggregation(KeyReader r, const ParallelConfig& parallel) {
  DisaggregationConfig d;
  d.enabled = true;
  d.prefill = parse_pool(r.object("prefill", "<pool>"), parallel);
  d.decode = parse_pool(r.object("decode", "<pool>"), parallel);
  d.kv_transfer_link = r.string("kv_transfer_link", d.kv_transfer_link);
  r.finish();
  return d;
}

void parse_cold_start(KeyReader c, ColdStartConfig& cs) {
  cs.disk_bandwidth_bytes_per_s = c.number("disk_bandwidth_bytes_per_s", cs.disk_bandwidth_bytes_per_s);
  cs.cuda_context_s = c.number("cuda_context_s", cs.cuda_context_s);
  cs.framework_init_s = c.number("framework_init_s", cs.framework_init_s);
  cs.graph_capture_s_per_batch_size = c.number("graph_capture_s_per_batch_size", cs.graph_capture_s_per_batch_size);
  c.finish();
}

// The drafter's keys; its architecture is resolved with the target's (resolve_references).
SpeculativeConfig parse_speculative(KeyReader r) {
  SpeculativeConfig c;
  c.method = r.string("method");
  if (c.method == "none") {  // off, so `sweep --grid engine.speculative.method=none,eagle` has its baseline
    for (const char* key : {"num_speculative_tokens", "acceptance_rate", "draft_model"}) {
      if (r.has(key)) r.raw(key);
    }
    r.finish();
    return SpeculativeConfig{};
  }
  const SpeculativeMethodEntry* m = speculative_methods().find(c.method);
  if (!m) r.fail("method", speculative_methods().unknown(c.method));
  c.num_speculative_tokens = r.integer("num_speculative_tokens");
  if (m->default_acceptance_rate < 0.0 && !r.has("acceptance_rate")) {
    r.fail("acceptance_rate", "required with method " + c.method + ": how often a draft model's tokens are accepted depends on the pair");
  }
  c.acceptance_rate = r.number("acceptance_rate", m->default_acceptance_rate);
  if (m->needs_draft_card) c.draft_model_ref = r.string("draft_model");
  c.shares_embeddings = m->shares_embeddings;
  c.target_precision = m->target_precision;
  r.finish([](const std::string& path) { return speculative_methods().readers_of(path); });
  return c;
}

// The offload tiers' keys; prefix caching is checked by the caller (the engine's key).
KvOffloadConfig parse_kv_offload(KeyReader r) {
  KvOffloadConfig c;
  c.cpu_bytes = r.number("cpu_bytes");
  c.cpu_bandwidth_bytes_per_s = r.number("cpu_bandwidth_bytes_per_s", 0.0);
  c.disk_bytes = r.number("disk_bytes", 0.0);
  if (c.disk_bytes > 0.0) {
    if (c.cpu_bytes <= 0.0) r.fail("disk_bytes", "the disk tier holds what the CPU tier evicts: needs cpu_bytes > 0");
    c.disk_bandwidth_bytes_per_s = r.number("disk_bandwidth_bytes_per_s");
  } else if (r.has("disk_bandwidth_bytes_per_s")) {
    r.fail("disk_bandwidth_bytes_per_s", "only read with a disk tier (disk_bytes > 0)");
  }
  c.blocking_load = r.string("load", "async") == "blocking";
  r.finish();
  return c;
}

EngineConfig parse_engine(KeyReader r) {
  EngineConfig e;
  e.launch.host_overhead_per_step_s = EngineConfig::kDefaultHostOverheadPerStepS;
  e.launch.host_overhead_per_seq_s = EngineConfig::kDefaultHostOverheadPerSeqS;
  {
    // The profile (EngineConfig::kDefaultProfile when the scenario names none) supplies defaults;
    // keys given in the scenario override them.
    const std::string ref = r.has("profile") ? r.string("profile") : std::string(EngineConfig::kDefaultProfile);
    e.profile = load_engine_profile(ref, r.file(), r.path_of("profile"));
    e.launch = e.profile.launch;
    e.block_size = e.profile.block_size;
    if (scheduler_policies().find(e.profile.scheduler)) e.scheduler.impl = e.profile.scheduler;
    if (e.profile.max_num_seqs > 0) e.max_num_seqs = e.profile.max_num_seqs;
    e.enable_prefix_caching = e.profile.enable_prefix_caching;
    if (e.profile.watermark_frac >= 0.0) e.watermark_frac = e.profile.watermark_frac;
  }
  // Limits the scenario leaves to the engine may depend on the GPU (check_engine_limits).
  e.max_num_seqs_set = r.has("max_num_seqs");
  e.max_num_batched_tokens_set = r.has("max_num_batched_tokens");
  e.max_num_seqs = r.integer("max_num_seqs", e.max_num_seqs);
  e.num_scheduler_steps = r.integer("num_scheduler_steps", e.num_scheduler_steps);
  e.max_num_batched_tokens = r.integer("max_num_batched_tokens", e.profile.max_num_batched_tokens);
  e.block_size = r.integer("block_size", e.block_size);
  e.gpu_memory_utilization = r.number("gpu_memory_utilization", e.gpu_memory_utilization);
  e.max_model_len = r.integer("max_model_len", 0);
  e.watermark_frac = r.number("watermark_frac", e.watermark_frac);
  if (r.has("max_queued_requests")) {
    r.fail("max_queued_requests", "the queue limit is engine.scheduler.max_queue_size (0 = no limit)");
  }
  e.runtime_overhead_bytes = r.number("runtime_overhead_bytes", e.runtime_overhead_bytes);
  e.launch.cuda_graphs = r.boolean("cuda_graphs", e.launch.cuda_graphs);
  if (r.has("cuda_graph_batch_sizes")) {
    // A run's own capture list (trtllm-bench's cuda_graph_config.batch_sizes, say), in place of the
    // profile's: what `validate --suite published --print-scenario` writes for the published rows.
    const auto& a = r.raw("cuda_graph_batch_sizes");
    if (!a.is_array() || a.empty()) r.fail("cuda_graph_batch_sizes", "must be a non-empty array of increasing positive integers");
    std::vector<std::int64_t> sizes;
    if (const std::size_t bad = read_increasing_sizes(a, std::int64_t{1} << 20, sizes); bad < a.size()) {
      r.fail("cuda_graph_batch_sizes", "element " + std::to_string(bad) + " must be an integer in [1, 1048576] above the one before it");
    }
    e.profile.cuda_graph_batch_sizes = std::move(sizes);
    e.profile.vllm_v1_capture_sizes = false;
  }
  e.launch.host_overhead_per_step_s = r.number("host_overhead_per_step_s", e.launch.host_overhead_per_step_s);
  e.launch.host_overhead_per_seq_s = r.number("host_overhead_per_seq_s", e.launch.host_overhead_per_seq_s);
  e.frontend_latency_s = r.number("frontend_latency_s", e.profile.frontend_latency_s);
  if (auto c = r.object_if("cold_start")) parse_cold_start(*c, e.profile.cold_start);
  const std::string reservation = r.string("kv_reservation", "paged");
  e.kv_reservation = reservation == "contiguous" ? KvReservation::contiguous : reservation == "token" ? KvReservation::token : KvReservation::paged;
  e.enable_prefix_caching = r.boolean("enable_prefix_caching", e.enable_prefix_caching);
  if (r.has("kv_cache_windowed_layers")) {  // the declared choices, window or full
    e.profile.kv_windowed_layers = *parse_kv_windowed_layers(r.string("kv_cache_windowed_layers"));
  }
  if (e.enable_prefix_caching && e.kv_reservation != KvReservation::paged) {
    r.fail("enable_prefix_caching", "needs kv_reservation paged (cached blocks are shared pages)");
  }
  e.preemption_mode = r.string("preemption_mode", "recompute") == "swap" ? PreemptionMode::swap : PreemptionMode::recompute;
  e.swap_space_bytes = r.number("swap_space_bytes", e.swap_space_bytes);
  if (auto s = r.object_if("scheduler")) e.scheduler = parse_scheduler(*s);
  if (auto s = r.object_if("speculative")) e.speculative = parse_speculative(*s);
  if (auto o = r.object_if("kv_offload")) e.kv_offload = parse_kv_offload(*o);
  if (e.kv_offload.enabled() && !e.enable_prefix_caching) {
    r.fail("kv_offload", "offloaded blocks are prefix-cache blocks: needs engine.enable_prefix_caching true");
  }
  if (e.speculative.enabled() && e.num_scheduler_steps > 1) {
    r.fail("speculative", "does not combine with multi-step scheduling (engine.num_scheduler_steps > 1)");
  }
  if (e.num_scheduler_steps > 1 && !make_scheduler(e.scheduler)->supports_multi_step()) {
    // vLLM 0.6.0 refused multi-step with chunked prefill ("Chunked prefill is not supported with
    // multi-step (--num-scheduler-steps > 1)", vllm/engine/arg_utils.py; reported against 0.6.0 in
    // vllm-project/vllm issue "vllm 0.6.0 ... --enable-chunked-prefill --num-scheduler-steps 8");
    // the other policies are not vLLM's. Only the continuous window is modelled.
    r.fail("num_scheduler_steps", "multi-step scheduling (> 1) needs engine.scheduler.impl " +
                                      policies_with(&BatchScheduler::supports_multi_step) +
                                      " (vLLM 0.6.0 refused it with chunked prefill), got scheduler " + e.scheduler.impl);
  }
  r.finish();
  return e;
}

Precision parse_precision(KeyReader& r) {
  const std::string dtype = r.string("dtype", "bf16");  // bf16 or fp16 (declared choices)
  const auto d = parse_dtype(dtype);
  if (!d) r.fail("dtype", "unknown dtype '" + dtype + "'");
  Precision p{*d, *d, *d};
  if (auto q = r.object_if("quantization")) {
    const std::string method = q->string("method", "none");
    const auto scheme = parse_quant(method);
    if (!scheme) q->fail("method", "unknown scheme '" + method + "' (none, " + kQuantNames + ")");
    p.quant = *scheme;
    p.group_size = q->integer("group_size", p.group_size);
    const std::string kv = q->string("kv_cache_dtype", "auto");
    const auto kv_dtype = parse_kv_cache_dtype(kv, p.kv_cache);
    if (!kv_dtype) q->fail("kv_cache_dtype", "unknown KV cache dtype '" + kv + "' (" + kKvCacheDtypeNames + ")");
    p.kv_cache = *kv_dtype;
    const std::string scales = q->string("activation_scales", "static");
    if (scales != "static" && scales != "dynamic") q->fail("activation_scales", "must be static or dynamic, got '" + scales + "'");
    p.dynamic_activation_scales = scales == "dynamic";
    const std::string scope = q->string("scope", "all");
    const auto quant_scope = parse_quant_scope(scope);
    if (!quant_scope) q->fail("scope", "must be all or experts, got '" + scope + "'");
    p.quant_scope = *quant_scope;
    q->finish();
  }
  return p;
}

// The scenario's own keys, before the model and hardware they name are loaded.
Scenario read_scenario_keys(const nlohmann::json& doc, const std::string& file) {
  KeyReader r(JsonReader(doc, file, ""), "");
  Scenario s;
  s.file = file;
  r.accept("schema");
  r.accept("description");
  s.name = r.string("name", "scenario");
  s.seed = static_cast<std::uint64_t>(r.integer("seed", 0));
  s.model_ref = r.string("model");
  s.hardware_ref = r.string("hardware");
  s.precision = parse_precision(r);
  static const nlohmann::json kNoEngineKeys = nlohmann::json::object();  // every engine key has a default
  s.engine = parse_engine(KeyReader(JsonReader(r.has("engine") ? r.raw("engine") : kNoEngineKeys, file, "engine"), "engine"));
  SloConfig slo;
  if (auto p = r.object_if("slo", "<slo>")) slo = parse_slo(*p, slo);
  s.workload = parse_workload(r.object("workload"), slo);
  if (auto p = r.object_if("parallel")) s.parallel = parse_parallel(*p);
  s.instances = s.parallel.instances_per_gpu;
  if (auto p = r.object_if("router")) s.router = parse_router(*p);
  if (auto p = r.object_if("cost_model")) s.cost_model = parse_cost_model(*p);
  if (auto p = r.object_if("disaggregation")) {
    s.disaggregation = parse_disaggregation(*p, s.parallel);
    if (s.instances > 1) r.fail("disaggregation", "does not combine with parallel.instances_per_gpu > 1");
    if (s.parallel.enable_attention_dp) r.fail("disaggregation", "does not combine with parallel.enable_attention_dp");
    if (doc.contains("parallel") && doc["parallel"].contains("data_parallel_size")) {
      r.fail("disaggregation", "sets the replica counts per pool; leave parallel.data_parallel_size out");
    }
  }
  r.finish();
  return s;
}

// The drafter of engine.speculative: a draft model's card (same vocabulary as the target, split as
// the target over the decoding replicas' tensor-parallel GPUs), or a head built from the target.
void resolve_drafter(Scenario& s) {
  SpeculativeConfig& sp = s.engine.speculative;
  const SpeculativeMethodEntry& method = *speculative_methods().find(sp.method);
  ModelSpec card;
  if (method.needs_draft_card) {
    card = load_model(resolve_data_ref("models", sp.draft_model_ref, s.file, "engine.speculative.draft_model"));
    if (card.vocab_size != s.model.vocab_size) {
      throw InputError(s.file, "engine.speculative.draft_model",
                       card.name + "'s vocabulary (" + std::to_string(card.vocab_size) + " tokens) differs from " + s.model.name + "'s (" +
                           std::to_string(s.model.vocab_size) + "): the target verifies the draft's token ids");
    }
  }
  sp.drafter = method.drafter(s.model, card);
  const std::int64_t tp = s.disaggregation.enabled ? s.disaggregation.decode.tensor_parallel_size : s.parallel.tensor_parallel_size;
  const std::string why = parallel_config_error(sp.drafter, tp, 1);
  if (!why.empty()) throw InputError(s.file, method.needs_draft_card ? "engine.speculative.draft_model" : "engine.speculative.method", why);
}

// The model and hardware the scenario names, and what they allow: the dtype, the parallel layout.
void resolve_references(Scenario& s) {
  const std::string& file = s.file;
  s.model = load_model(resolve_data_ref("models", s.model_ref, file, "model"));
  s.hw = load_hw_profile(resolve_data_ref("hwprofiles", s.hardware_ref, file, "hardware"));
  if (!s.hw.supports(s.precision.weights)) {
    throw InputError(file, "dtype", std::string(dtype_name(s.precision.weights)) + " is not supported by " + s.hw.name);
  }
  if (auto d8 = w8a8_dtype(s.precision.quant)) s.quant_emulated = !s.hw.supports(*d8);
  if (const std::string why = quant_scope_refusal(s.precision.quant_scope, s.model); !why.empty()) {
    throw InputError(file, "quantization.scope", why);
  }

  const auto check_parallel = [&](const std::string& key, std::int64_t tp, std::int64_t pp) {
    const std::string why = parallel_config_error(s.model, tp, pp);
    if (!why.empty()) throw InputError(file, key, why);
  };
  if (s.disaggregation.enabled) {
    check_parallel("disaggregation.prefill", s.disaggregation.prefill.tensor_parallel_size, s.disaggregation.prefill.pipeline_parallel_size);
    check_parallel("disaggregation.decode", s.disaggregation.decode.tensor_parallel_size, s.disaggregation.decode.pipeline_parallel_size);
  } else {
    check_parallel("parallel", s.parallel.tensor_parallel_size, s.parallel.pipeline_parallel_size);
  }
  if (s.engine.speculative.enabled()) resolve_drafter(s);
  if (s.parallel.enable_attention_dp && !s.model.is_moe()) {
    throw InputError(file, "parallel.enable_attention_dp", "pairs attention data parallelism with expert parallelism: " + s.model.name + " is dense");
  }
  // The CPU tier copies over the GPU's host link unless the scenario says otherwise (GH200 and
  // GB200 profiles give NVLink-C2C as their host link).
  KvOffloadConfig& offload = s.engine.kv_offload;
  if (offload.enabled() && offload.cpu_bandwidth_bytes_per_s <= 0.0) offload.cpu_bandwidth_bytes_per_s = s.hw.host_link_bytes_per_s;
  if (s.parallel.expert_parallel_size > 1) {
    const std::string why = expert_parallel_error(s.model, s.parallel.expert_parallel_size);
    if (!why.empty()) throw InputError(file, "parallel.expert_parallel_size", why);
    if (s.disaggregation.enabled) {
      for (const PoolConfig* pool : {&s.disaggregation.prefill, &s.disaggregation.decode}) {
        if (pool->tensor_parallel_size % s.parallel.expert_parallel_size != 0) {
          throw InputError(file, "parallel.expert_parallel_size", "must divide each disaggregated pool's tensor_parallel_size");
        }
      }
    }
  }

}

// The engine's limits against the model and the workload, as vLLM checks them at start-up.
void check_engine_limits(Scenario& s) {
  const std::string& file = s.file;
  EngineConfig& e = s.engine;
  if (e.max_model_len == 0) e.max_model_len = s.model.max_context_tokens;
  if (e.max_model_len > s.model.max_context_tokens) {
    throw InputError(file, "engine.max_model_len", "must be <= the model's max context (" +
                                                       std::to_string(s.model.max_context_tokens) + "), got " +
                                                       std::to_string(e.max_model_len));
  }
  apply_gpu_sized_defaults(e, s.hw);
  resolve_quant_kernels(e.profile, s.hw);
  s.quant_emulated = quant_emulated(s.precision, e.profile.kernels, s.hw);  // the engine's MoE kernel may keep bf16 activations
  if (const PrecisionSupport no = engine_supports(e.profile, s.precision, s.hw); !no.key.empty()) throw InputError(file, no.key, no.why);
  const std::unique_ptr<BatchScheduler> policy = make_scheduler(e.scheduler);
  const bool chunked = policy->chunks_prompts() || policy->rejects_prompts_over_budget();
  // An engine's token budget is its chunking scheduler's: a scenario that picks a policy running
  // whole prompts, and sets no budget, gets one a prompt fits (vLLM's rule without chunking).
  if (!chunked && !e.max_num_batched_tokens_set && e.max_num_batched_tokens < e.max_model_len) e.max_num_batched_tokens = 0;
  if (e.max_num_batched_tokens == 0) e.max_num_batched_tokens = std::max<std::int64_t>(e.max_model_len, 2048);
  if (e.profile.vllm_v1_capture_sizes) {
    e.profile.cuda_graph_batch_sizes = vllm_v1_capture_sizes(e.max_num_seqs, e.max_num_batched_tokens);
  }
  // A policy that rejects longer prompts on arrival (in-flight batching, Replica::enqueue) bounds
  // only the prompt by max_num_batched_tokens.
  if (e.max_num_batched_tokens < e.max_model_len && !chunked) {
    // vLLM refuses this too: without chunked prefill a prompt must fit one iteration.
    throw InputError(file, "engine.max_num_batched_tokens",
                     "must be >= max_model_len (" + std::to_string(e.max_model_len) + ") without chunked prefill (scheduler impl " +
                         policies_with(&BatchScheduler::chunks_prompts) + "), got " + std::to_string(e.max_num_batched_tokens));
  }
  if (const auto rows = policy->max_batch_rows(); rows && rows->rows > e.max_num_seqs) {
    throw InputError(file, rows->key,
                     "must be <= engine.max_num_seqs (" + std::to_string(e.max_num_seqs) + "), got " + std::to_string(rows->rows));
  }
  if (e.max_num_batched_tokens < e.max_num_seqs) {
    throw InputError(file, "engine.max_num_batched_tokens", "must be >= max_num_seqs (" + std::to_string(e.max_num_seqs) + ")");
  }
  const WorkloadConfig& w = s.workload;
  for (std::size_t i = 0; i < w.classes.size(); ++i) {
    const RequestClass& c = w.classes[i];
    if (w.num_requests == 0 || c.prompt_tokens.kind == LengthDist::Kind::trace || c.output_tokens.kind == LengthDist::Kind::trace) continue;
    if (c.prompt_tokens.min_tokens + w.shared_prefix.prefix_tokens + c.output_tokens.min_tokens > e.max_model_len) {
      // Every request of the class would be rejected: almost certainly a mistake, so say so
      // instead of reporting zeros.
      throw InputError(file, w.legacy_lengths ? "workload.prompt_tokens.min_tokens" : "workload.classes[" + std::to_string(i) + "]",
                       "every request is longer than engine.max_model_len (" + std::to_string(e.max_model_len) +
                           "): at least " + std::to_string(c.prompt_tokens.min_tokens + w.shared_prefix.prefix_tokens) +
                           " prompt + " + std::to_string(c.output_tokens.min_tokens) + " output tokens");
    }
  }
}

}  // namespace

Scenario parse_scenario(const nlohmann::json& doc, const std::string& file) {
  Scenario s = read_scenario_keys(doc, file);
  resolve_references(s);
  check_engine_limits(s);
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  nlohmann::json doc = load_json_file(path);
  for (const auto& o : overrides) apply_override(doc, o, path);
  return parse_scenario(doc, path);
}

namespace {
nlohmann::json length_to_json(const LengthDist& d) {
  using K = LengthDist::Kind;
  switch (d.kind) {
    case K::fixed: return {{"impl", "fixed"}, {"value_tokens", d.value_tokens}};
    case K::uniform: return {{"impl", "uniform"}, {"min_tokens", d.min_tokens}, {"max_tokens", d.max_tokens}};
    case K::normal:
      return {{"impl", "normal"}, {"mean_tokens", d.mean_tokens}, {"stddev_tokens", d.stddev_tokens},
              {"min_tokens", d.min_tokens}, {"max_tokens", d.max_tokens}};
    case K::lognormal:
      return {{"impl", "lognormal"}, {"mean_tokens", d.mean_tokens}, {"sigma", d.sigma},
              {"min_tokens", d.min_tokens}, {"max_tokens", d.max_tokens}};
    case K::zipf: return {{"impl", "zipf"}, {"s", d.zipf_s}, {"min_tokens", d.min_tokens}, {"max_tokens", d.max_tokens}};
    case K::empirical: return {{"impl", "empirical"}, {"tokens", d.tokens}, {"weights", d.weights}};
    case K::trace: return {{"impl", "trace"}};
  }
  return {};
}

nlohmann::json arrival_to_json(const ArrivalConfig& a) {
  using K = ArrivalConfig::Kind;
  switch (a.kind) {
    case K::poisson: return {{"impl", "poisson"}, {"rate_per_s", a.rate_per_s}};
    case K::gamma: return {{"impl", "gamma"}, {"rate_per_s", a.rate_per_s}, {"cv", a.cv}};
    case K::constant: return {{"impl", "constant"}, {"rate_per_s", a.rate_per_s}};
    case K::on_off: return {{"impl", "on_off"}, {"rate_per_s", a.rate_per_s}, {"on_s", a.on_s}, {"off_s", a.off_s}};
    case K::ramp:
      return {{"impl", "ramp"}, {"start_rate_per_s", a.start_rate_per_s}, {"end_rate_per_s", a.end_rate_per_s}, {"ramp_s", a.ramp_s}};
    case K::trace: return {{"impl", "trace"}};
    case K::all_at_once: return {{"impl", "all_at_once"}};
    case K::concurrency: return {{"impl", "concurrency"}, {"clients", a.clients}, {"think_time_s", a.think_time_s}};
    case K::stages: {
      nlohmann::json stages = nlohmann::json::array();
      for (const ArrivalStage& st : a.stages) {
        stages.push_back({{"impl", st.poisson ? "poisson" : "constant"}, {"rate_per_s", st.rate_per_s}, {"duration_s", st.duration_s}});
      }
      return {{"impl", "stages"}, {"stages", stages}, {"stage_gap_s", a.stage_gap_s}};
    }
  }
  return {};
}
}  // namespace

namespace {
// Every declared setting of the chosen policy; one whose default means "none" (0) only when set.
nlohmann::json scheduler_to_json(const SchedulerConfig& c) {
  nlohmann::json j = {{"impl", c.impl},
                      {"scheduling_policy", c.order == SchedulerConfig::Order::priority ? "priority" : "fcfs"}};
  for (const ScenarioKey* k : keys_in("engine.scheduler")) {
    if (!policy_reads(c.impl, k->path)) continue;
    const std::string name = k->path.substr(k->path.rfind('.') + 1);
    const bool optional = k->default_text == "none";
    if (const auto* f = std::get_if<std::int64_t SchedulerConfig::*>(&k->scheduler_field)) {
      if (!optional || c.**f > 0) j[name] = c.**f;
    } else if (const auto* g = std::get_if<double SchedulerConfig::*>(&k->scheduler_field)) {
      if (!optional || c.**g > 0.0) j[name] = c.**g;
    }
  }
  return j;
}
}  // namespace

nlohmann::json slo_to_json(const SloConfig& s) {
  return {{"ttft_s", s.ttft_s}, {"tpot_s", s.tpot_s}, {"e2e_s", s.e2e_s}, {"percentile", s.percentile},
          {"min_success_frac", s.min_success_frac}};
}

namespace {
nlohmann::json workload_to_json(const WorkloadConfig& w) {
  nlohmann::json workload = {{"num_requests", w.num_requests}, {"arrival", arrival_to_json(w.arrival)}};
  if (w.duration_s > 0.0) workload["duration_s"] = w.duration_s;
  if (w.request_timeout_s > 0.0) workload["request_timeout_s"] = w.request_timeout_s;
  if (w.trace) {
    workload["trace"] = {{"path", w.trace->path}, {"format", w.trace->format}, {"time_scale", w.trace->time_scale}, {"loop", w.trace->loop}};
    if (w.trace->sort_arrivals) workload["trace"]["sort_arrivals"] = true;
    if (w.trace->prefix_tokens > 0) workload["trace"]["prefix_tokens"] = w.trace->prefix_tokens;
  }
  if (w.legacy_lengths) {
    workload["prompt_tokens"] = length_to_json(w.classes[0].prompt_tokens);
    workload["output_tokens"] = length_to_json(w.classes[0].output_tokens);
  } else {
    workload["classes"] = nlohmann::json::array();
    for (const auto& c : w.classes) {
      workload["classes"].push_back({{"name", c.name}, {"weight", c.weight}, {"prompt_tokens", length_to_json(c.prompt_tokens)},
                                     {"output_tokens", length_to_json(c.output_tokens)}, {"slo", slo_to_json(c.slo)}});
    }
  }
  if (w.shared_prefix.num_prefixes > 0) {
    workload["shared_prefix"] = {{"num_prefixes", w.shared_prefix.num_prefixes},
                                 {"prefix_tokens", w.shared_prefix.prefix_tokens}};
    if (w.shared_prefix.prompts_per_prefix > 0) workload["shared_prefix"]["prompts_per_prefix"] = w.shared_prefix.prompts_per_prefix;
  }
  if (w.sessions.turns > 1) workload["sessions"] = {{"turns", w.sessions.turns}, {"think_time_s", w.sessions.think_time_s}};
  if (!w.priority_class_weights.empty()) workload["priority_class_weights"] = w.priority_class_weights;
  return workload;
}
}  // namespace

namespace {
// The serving features a scenario turns on, echoed only when on so other reports keep their bytes.
void echo_features(nlohmann::json& j, const Scenario& s) {
  const EngineConfig& e = s.engine;
  if (e.speculative.enabled()) {  // only when on, so other reports keep their bytes
    nlohmann::json& sp = j["engine"]["speculative"];
    sp = {{"method", e.speculative.method},
          {"num_speculative_tokens", e.speculative.num_speculative_tokens},
          {"acceptance_rate", e.speculative.acceptance_rate},
          {"drafter", e.speculative.drafter.name}};
    if (!e.speculative.draft_model_ref.empty()) sp["draft_model"] = e.speculative.draft_model_ref;
  }
  if (s.parallel.enable_attention_dp) {
    j["parallel"]["enable_attention_dp"] = true;
    j["parallel"]["attention_dp_load_imbalance"] = s.parallel.attention_dp_load_imbalance;
  }
}

// The offload tiers as a report echoes them (the disk tier only when there is one).
nlohmann::json kv_offload_to_json(const KvOffloadConfig& o) {
  nlohmann::json j = {{"cpu_bytes", o.cpu_bytes},
                      {"cpu_bandwidth_bytes_per_s", o.cpu_bandwidth_bytes_per_s},
                      {"load", o.blocking_load ? "blocking" : "async"}};
  if (o.disk_bytes > 0.0) {
    j["disk_bytes"] = o.disk_bytes;
    j["disk_bandwidth_bytes_per_s"] = o.disk_bandwidth_bytes_per_s;
  }
  return j;
}
}  // namespace

nlohmann::json scenario_to_json(const Scenario& s) {
  const EngineConfig& e = s.engine;
  const WorkloadConfig& w = s.workload;
  nlohmann::json j = {{"name", s.name},
          {"seed", s.seed},
          {"model", s.model_ref},
          {"hardware", s.hardware_ref},
          {"dtype", dtype_name(s.precision.weights)},
          {"engine",
           {{"max_num_seqs", e.max_num_seqs},
            {"max_num_batched_tokens", e.max_num_batched_tokens},
            {"block_size", e.block_size},
            {"gpu_memory_utilization", e.gpu_memory_utilization},
            {"max_model_len", e.max_model_len},
            {"watermark_frac", e.watermark_frac},
            {"runtime_overhead_bytes", e.runtime_overhead_bytes},
            {"cuda_graphs", e.launch.cuda_graphs},
            {"host_overhead_per_step_s", e.launch.host_overhead_per_step_s},
            {"host_overhead_per_seq_s", e.launch.host_overhead_per_seq_s},
            {"kv_reservation", kv_reservation_name(e.kv_reservation)},
            {"enable_prefix_caching", e.enable_prefix_caching},
            {"preemption_mode", preemption_mode_name(e.preemption_mode)},
            {"swap_space_bytes", e.swap_space_bytes},
            {"scheduler", scheduler_to_json(e.scheduler)},
            {"profile", engine_profile_summary(e.profile)},
            {"cold_start",
             {{"disk_bandwidth_bytes_per_s", e.profile.cold_start.disk_bandwidth_bytes_per_s},
              {"cuda_context_s", e.profile.cold_start.cuda_context_s},
              {"framework_init_s", e.profile.cold_start.framework_init_s},
              {"graph_capture_s_per_batch_size", e.profile.cold_start.graph_capture_s_per_batch_size}}}}},
          {"quantization",
           {{"method", quant_name(s.precision.quant)},
            {"group_size", s.precision.group_size},
            {"kv_cache_dtype", dtype_name(s.precision.kv_cache)}}},
          {"parallel",
           {{"tensor_parallel_size", s.parallel.tensor_parallel_size},
            {"pipeline_parallel_size", s.parallel.pipeline_parallel_size},
            {"data_parallel_size", s.parallel.data_parallel_size},
            {"num_micro_batches", s.parallel.micro_batches()},
            {"instances_per_gpu", s.parallel.instances_per_gpu}}},
          {"router",
           {{"impl", s.router.impl},
            {"balance_abs_threshold", s.router.balance_abs_threshold},
            {"balance_rel_threshold", s.router.balance_rel_threshold}}},
          {"workload", workload_to_json(w)}};
  if (w.legacy_lengths) j["slo"] = slo_to_json(w.classes[0].slo);
  // Only when multi-step is on, so single-step reports keep their bytes.
  if (e.num_scheduler_steps != 1) j["engine"]["num_scheduler_steps"] = e.num_scheduler_steps;
  if (e.frontend_latency_s > 0.0) j["engine"]["frontend_latency_s"] = e.frontend_latency_s;
  echo_features(j, s);
  if (e.kv_offload.enabled()) j["engine"]["kv_offload"] = kv_offload_to_json(e.kv_offload);  // only when on: other reports keep their bytes
  if (s.model.is_moe()) {  // only for MoE models, so dense reports keep their bytes
    j["parallel"]["expert_parallel_size"] = s.parallel.expert_parallel_size;
    j["parallel"]["expert_load_imbalance"] = s.parallel.expert_load_imbalance;
  }
  // Echoed only when it is not the default, so reports of scenarios that do not name one keep
  // their bytes.
  if (s.cost_model.impl != CostModelConfig{}.impl || s.cost_model.interpolate_decode) {
    j["cost_model"] = {{"impl", s.cost_model.impl}};
    if (s.cost_model.interpolate_decode) j["cost_model"]["interpolate_decode"] = true;
  }
  if (s.precision.dynamic_activation_scales) j["quantization"]["activation_scales"] = "dynamic";  // other reports keep their bytes
  if (s.precision.quant_scope != QuantScope::all) j["quantization"]["scope"] = quant_scope_name(s.precision.quant_scope);  // likewise
  if (s.disaggregation.enabled) {
    const auto pool = [](const PoolConfig& p) {
      return nlohmann::json{{"replicas", p.replicas},
                            {"tensor_parallel_size", p.tensor_parallel_size},
                            {"pipeline_parallel_size", p.pipeline_parallel_size}};
    };
    j["disaggregation"] = {{"prefill", pool(s.disaggregation.prefill)},
                           {"decode", pool(s.disaggregation.decode)},
                           {"kv_transfer_link", s.disaggregation.kv_transfer_link}};
  }
  return j;
}

RegisteredKeys registered_keys() {
  RegisteredKeys registered;
  registered.values["workload.trace.format"] = trace_formats();
  const auto add = [&registered](const std::string& key, const auto& registry) {
    registered.values[key] = registry.names();
    for (const RegistryEntry& e : registry) {
      for (const std::string& k : e.own_keys) registered.readers[k].push_back(e.name);
    }
  };
  add("engine.scheduler.impl", scheduler_policies());
  add("router.impl", routers());
  add("cost_model.impl", step_cost_models());
  add("engine.speculative.method", speculative_methods());
  return registered;
}

}  // namespace servesim
