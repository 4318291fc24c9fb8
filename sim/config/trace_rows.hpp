// The rows of a request trace as the simulation consumes them. The simulation (sim/serve,
// sim/workload) never opens a file: the scenario parser gives TraceConfig an opener that makes a
// reader (io/trace_reader: CSV and JSON-lines files), and the workload and the saturation estimate
// take rows from it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

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

class TraceRows {
 public:
  virtual ~TraceRows() = default;
  // The next row, or nothing at the end of the trace. Malformed rows are InputErrors naming the
  // source and line.
  virtual std::optional<TraceRecord> next() = 0;
  // Rows read but not turned into requests (BurstGPT logs failed requests with 0 response tokens).
  virtual std::int64_t skipped_rows() const = 0;
  // The line the last row came from, for messages about it.
  virtual std::int64_t line() const = 0;
};

// Makes a fresh reader from the trace's first row (a looping trace is opened again at its end).
using TraceOpener = std::function<std::unique_ptr<TraceRows>()>;

}  // namespace servesim
