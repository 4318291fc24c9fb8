// Chrome trace event writer; see trace_writer.hpp. Written by hand with snprintf (not through a
// JSON DOM) so it streams in constant memory; every string written is a fixed ASCII name or a
// JSON-escaped run name.
#include "sim/io/trace_writer.hpp"

#include <cinttypes>
#include <cstdio>

namespace servesim {

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

TraceWriter::TraceWriter(const std::string& path, const TraceOptions& options, const std::string& run_name)
    : file_(path), options_(options), window_ns_(seconds_to_ns(options.window_s)) {
  std::fprintf(file_.get(),
               "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"servesim\",\"run\":\"%s\","
               "\"window_s\":%.9g,\"max_requests\":%u},\n\"traceEvents\":[\n",
               json_escape(run_name).c_str(), options.window_s, options.max_requests);
  metadata("process_name", kRequestsPid, 0, "requests (sampled)");
  metadata("process_sort_index", kRequestsPid, 0, "");
}

void TraceWriter::begin_event() {
  if (events_++ > 0) file_.write(",\n");
}

void TraceWriter::metadata(const char* what, int pid, std::int64_t tid, const std::string& name) {
  begin_event();
  if (std::string(what) == "process_sort_index") {
    std::fprintf(file_.get(), "{\"name\":\"%s\",\"ph\":\"M\",\"ts\":0,\"pid\":%d,\"tid\":%" PRId64 ",\"args\":{\"sort_index\":%d}}",
                 what, pid, tid, pid);
  } else {
    std::fprintf(file_.get(), "{\"name\":\"%s\",\"ph\":\"M\",\"ts\":0,\"pid\":%d,\"tid\":%" PRId64 ",\"args\":{\"name\":\"%s\"}}",
                 what, pid, tid, json_escape(name).c_str());
  }
}

bool TraceWriter::follow(std::uint32_t id, TimeNs arrival_ns) {
  if (followed_ >= options_.max_requests || arrival_ns >= window_ns_) return false;
  ++followed_;
  metadata("thread_name", kRequestsPid, id, "request " + std::to_string(id));
  return true;
}

void TraceWriter::on_span(std::uint32_t id, RequestPhase phase, TimeNs start_ns, TimeNs end_ns) {
  char ts[32], dur[32];
  format_ns_as_us(ts, sizeof ts, start_ns);
  format_ns_as_us(dur, sizeof dur, end_ns - start_ns);
  begin_event();
  std::fprintf(file_.get(),
               "{\"name\":\"%s\",\"cat\":\"request\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":%u,"
               "\"args\":{\"request\":%u}}",
               request_phase_name(phase), ts, dur, kRequestsPid, id, id);
}

void TraceWriter::on_iteration(const IterationRecord& it) {
  if (it.start_ns >= window_ns_) return;
  const int pid = kReplicaPid + it.replica;
  while (replicas_named_ <= it.replica) {
    metadata("process_name", kReplicaPid + replicas_named_, 0, "replica " + std::to_string(replicas_named_));
    metadata("process_sort_index", kReplicaPid + replicas_named_, 0, "");
    metadata("thread_name", kReplicaPid + replicas_named_, 0, "iterations");
    ++replicas_named_;
  }
  const char* name = it.prefill_seqs > 0 ? (it.decode_seqs > 0 ? "mixed" : "prefill") : "decode";
  const double kv = it.kv_capacity_blocks > 0 ? static_cast<double>(it.kv_used_blocks) / static_cast<double>(it.kv_capacity_blocks) : 0.0;
  char ts[32], dur[32];
  format_ns_as_us(ts, sizeof ts, it.start_ns);
  format_ns_as_us(dur, sizeof dur, it.end_ns - it.start_ns);
  begin_event();
  std::fprintf(file_.get(),
               "{\"name\":\"%s\",\"cat\":\"iteration\",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%d,\"tid\":0,"
               "\"args\":{\"seqs\":%" PRId64 ",\"prefill_tokens\":%" PRId64 ",\"decode_seqs\":%" PRId64
               ",\"launch_bound\":%s}}",
               name, ts, dur, pid, it.seqs, it.prefill_tokens, it.decode_seqs, it.launch_bound ? "true" : "false");
  begin_event();
  std::fprintf(file_.get(), "{\"name\":\"kv_cache_used_frac\",\"ph\":\"C\",\"ts\":%s,\"pid\":%d,\"tid\":0,\"args\":{\"used\":%.6f}}",
               ts, pid, kv);
  begin_event();
  std::fprintf(file_.get(), "{\"name\":\"batch_size\",\"ph\":\"C\",\"ts\":%s,\"pid\":%d,\"tid\":0,\"args\":{\"seqs\":%" PRId64 "}}",
               ts, pid, it.seqs);
  begin_event();
  std::fprintf(file_.get(), "{\"name\":\"queue_length\",\"ph\":\"C\",\"ts\":%s,\"pid\":%d,\"tid\":0,\"args\":{\"waiting\":%" PRId64 "}}",
               ts, pid, it.waiting);
}

void TraceWriter::close() {
  if (!file_.is_open()) return;
  file_.write("\n]}\n");
  file_.close();
}

void TraceWriter::commit() {
  close();
  file_.commit();
}

}  // namespace servesim
