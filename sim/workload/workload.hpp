// Request generation: arrival times, request classes and prompt/output lengths, drawn lazily (one
// request at a time) from independent random streams, or streamed from a trace, so memory does
// not grow with the request count.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/time.hpp"
#include "sim/kv/prefix_hash.hpp"

namespace servesim {

struct TraceRecord;
class TraceRows;

// One request as the workload creates it. prompt_tokens is the whole prompt: shared prefix,
// conversation history (later turns of a session) and the new tokens.
struct RequestSpec {
  TimeNs arrival_ns = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int32_t prefix_id = -1;      // shared system prompt, -1 for none
  std::int64_t prefix_tokens = 0;   // its length (the first tokens of the prompt)
  std::uint32_t stream_id = 0;      // the conversation: tokens after the prefix belong to it
  std::int32_t turn = 0;            // 0 for a session's first request
  StreamUse stream_use = StreamUse::alone;  // who else may use stream_id's tokens
  std::uint8_t priority = 0;        // class, 0 = most urgent
  std::uint32_t cls = 0;             // index into WorkloadConfig::classes
  std::uint16_t stage = 0;           // arrival stage (ArrivalConfig::stages), 0 without stages
};

// Draws lengths from one distribution. Kind::trace has no sampler (the trace row gives the length).
class LengthSampler {
 public:
  LengthSampler(const LengthDist& dist, std::uint64_t seed, const std::string& stream);
  std::int64_t next();

 private:
  std::int64_t clamp(double v) const;
  LengthDist dist_;
  RngStream rng_;
  double log_mu_ = 0.0;
  std::vector<double> cdf_;  // zipf and empirical: cumulative weights, normalised
};

// Arrival times in seconds from t = 0. For Kind::trace the caller supplies each time; for
// Kind::concurrency this gives the clients' first sends (all at t = 0) and the engine the rest.
class ArrivalProcess {
 public:
  ArrivalProcess(const ArrivalConfig& config, std::uint64_t seed);
  // The next arrival; +infinity once the process has ended (after the last stage).
  double next_s();
  // Kind::stages: the stage of the arrival next_s() returned last.
  std::uint16_t stage() const { return static_cast<std::uint16_t>(stage_); }

 private:
  double next_in_stages_s();
  ArrivalConfig c_;
  RngStream rng_;
  double clock_s_ = 0.0;       // poisson/gamma/constant: wall time; on_off/ramp: see next_s; stages: time in the stage
  std::int64_t count_ = 0;
  std::size_t stage_ = 0;
  double stage_start_s_ = 0.0;
};

// Whether requests of one token stream may run at the same time (StreamUse::concurrent): a prompt
// pool (workload.shared_prefix.prompts_per_prefix) sends each prompt again and again.
bool streams_run_concurrently(const WorkloadConfig& w);

// Gamma(shape, scale=1) by Marsaglia-Tsang; shape < 1 through the boost U^(1/shape).
double gamma_variate(RngStream& rng, double shape);

class WorkloadGenerator {
 public:
  WorkloadGenerator(const WorkloadConfig& config, std::uint64_t seed);
  ~WorkloadGenerator();
  // The next request (a session's first turn) in arrival order, or nothing once the workload is
  // over (num_requests made, duration_s passed, or the trace ended).
  std::optional<RequestSpec> next();
  // Closed loop (ArrivalConfig::closed_loop): a client's next request, sent at sent_s (its
  // previous one left, plus the think time), or nothing once the workload is over.
  std::optional<RequestSpec> next_sent_at(double sent_s);
  // The turn after `done`, which completed at done_ns, or nothing when its session is over.
  std::optional<RequestSpec> next_turn(const RequestSpec& done, TimeNs done_ns);
  std::int64_t produced() const { return produced_; }
  std::int64_t trace_rows_skipped() const;

 private:
  std::optional<RequestSpec> next_request(std::optional<double> sent_s);
  std::uint32_t pick_class(const std::string& label);
  StreamUse stream_use(std::int32_t turn) const;
  std::unique_ptr<TraceRows> open_trace();
  WorkloadConfig config_;
  std::uint64_t seed_;  // the scenario's: a bootstrapped trace's draws
  ArrivalProcess arrivals_;
  RngStream class_rng_;
  std::vector<double> class_cdf_;
  std::vector<LengthSampler> prompt_, output_;
  std::unique_ptr<TraceRows> trace_;
  double trace_offset_s_ = 0.0, trace_last_s_ = 0.0;
  std::int64_t trace_skipped_before_ = 0;
  std::uint64_t trace_passes_ = 0;  // times the trace was opened (a looping trace reopens at its end)
  RngStream prefix_rng_;
  RngStream priority_rng_;
  std::vector<double> priority_cdf_;
  std::int64_t sessions_total_ = -1;  // -1: no request count (duration or trace ends the workload)
  std::int64_t sessions_started_ = 0;
  std::int64_t produced_ = 0;
  // SharedPrefixConfig::prompts_per_prefix > 0: the pool in sending order, each prompt's question
  // length, and the pool's stream ids (kPoolStreamBase + prompt index: a repeat of a prompt names
  // the same tokens, so its blocks hash the same).
  struct PooledPrompt {
    std::int32_t prefix_id;
    std::int64_t question_tokens;
    std::uint32_t stream_id;
  };
  static constexpr std::uint32_t kPoolStreamBase = 0x80000000u;
  std::vector<PooledPrompt> pool_;
  // Trace prefix ids (strings) as RequestSpec::prefix_id numbers, in order of first appearance.
  std::unordered_map<std::string, std::int32_t> trace_prefix_ids_;
  void take_trace_prefix(const TraceRecord& row, RequestSpec& r);
};

}  // namespace servesim
