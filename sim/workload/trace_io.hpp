// Streaming, strict readers of request traces: one row at a time (constant memory however large
// the file), and every malformed row is an InputError naming the file and line.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/core/input_file.hpp"

namespace servesim {

struct TraceRecord {
  double arrival_s = 0.0;  // relative to the trace's first row for absolute-time formats
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  // jsonl only: rows with one prefix_id start with the same prefix_tokens tokens (the row's, else
  // workload.trace.prefix_tokens), shared in the prefix cache; 0 = no length given.
  std::string prefix_id;
  std::int64_t prefix_tokens = 0;
  std::string cls;         // request class label, "" when the format has none
};

// Formats and the columns they need, for messages and `servesim gen-trace`.
const std::vector<std::string>& trace_formats();

class TraceReader {
 public:
  // Opens `path` (InputError when missing, not a file or stream, or the header lacks the format's
  // columns; core/input_file.hpp says how streams are read). With
  // `sort_arrivals` the whole file is read on the first next() and served by arrival time (for
  // logs merged from several clients); otherwise rows stream and must not go back in time.
  TraceReader(std::string path, std::string format, bool sort_arrivals = false);
  // The next row, or nothing at the end of the file.
  std::optional<TraceRecord> next();
  // Rows read but not turned into requests (BurstGPT logs failed requests with 0 response tokens).
  std::int64_t skipped_rows() const { return skipped_; }
  std::int64_t line() const { return in_->line(); }

 private:
  [[noreturn]] void fail(const std::string& message) const;
  std::optional<TraceRecord> read_row();  // the next well-formed row in file order
  std::optional<TraceRecord> parse_csv_row(const std::string& text);
  std::optional<TraceRecord> parse_jsonl_row(const std::string& text);
  std::string path_, format_;
  std::unique_ptr<InputFile> in_;
  std::int64_t skipped_ = 0;
  std::vector<int> columns_;  // csv: index of each needed column
  std::size_t header_fields_ = 0;
  std::optional<double> origin_s_;  // first absolute timestamp
  double last_arrival_s_ = 0.0;
  bool sort_arrivals_ = false;
  std::optional<std::vector<TraceRecord>> sorted_;  // sort_arrivals: every row, by arrival time
  std::size_t next_sorted_ = 0;
};

// Seconds since 1970-01-01 of "YYYY-MM-DD HH:MM:SS[.frac]" (the Azure trace's TIMESTAMP), or
// nothing when malformed.
std::optional<double> parse_timestamp_s(const std::string& text);

// Writes one record in `format`'s row syntax; header_line() is the first line of a CSV format.
std::string trace_header_line(const std::string& format);
std::string trace_row_line(const std::string& format, const TraceRecord& r);

}  // namespace servesim
