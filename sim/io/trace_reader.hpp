// Streaming, strict readers of request trace files: one row at a time (constant memory however
// large the file), and every malformed row is an InputError naming the file and line. The
// simulation takes their rows through TraceRows (config/trace_rows.hpp) and opens no file itself.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.hpp"
#include "sim/config/trace_rows.hpp"
#include "sim/core/input_file.hpp"

namespace servesim {

// Formats and the columns they need, for messages and `servesim gen-trace`.
const std::vector<std::string>& trace_formats();

class TraceReader final : public TraceRows {
 public:
  // Opens `path` (InputError when missing, not a file or stream, or the header lacks the format's
  // columns; core/input_file.hpp says how streams are read). With
  // `sort_arrivals` the whole file is read on the first next() and served by arrival time (for
  // logs merged from several clients); otherwise rows stream and must not go back in time.
  TraceReader(std::string path, std::string format, bool sort_arrivals = false);
  std::optional<TraceRecord> next() override;
  std::int64_t skipped_rows() const override { return skipped_; }
  std::int64_t line() const override { return in_->line(); }

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

// The opener the parser puts in TraceConfig::open: a TraceReader of `t`'s file.
TraceOpener trace_file_opener(const TraceConfig& t);

}  // namespace servesim
