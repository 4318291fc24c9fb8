// See trace_bootstrap.hpp.
#include "sim/workload/trace_bootstrap.hpp"

#include <string>
#include <utility>
#include <vector>

#include "sim/core/rng.hpp"

namespace servesim {

namespace {

class BootstrapRows final : public TraceRows {
 public:
  BootstrapRows(std::unique_ptr<TraceRows> rows, std::uint64_t seed, std::uint64_t pass)
      : rng_(seed, "trace_bootstrap/" + std::to_string(pass)) {
    while (auto row = rows->next()) {
      rows_.push_back(std::move(*row));
      lines_.push_back(rows->line());
    }
    skipped_ = rows->skipped_rows();
  }
  std::optional<TraceRecord> next() override {
    if (next_ >= rows_.size()) return std::nullopt;
    const auto drawn = static_cast<std::size_t>(rng_.uniform_int(0, static_cast<std::int64_t>(rows_.size()) - 1));
    TraceRecord r = rows_[drawn];
    r.arrival_s = rows_[next_].arrival_s;
    line_ = lines_[drawn];  // the request's row: what a message about its lengths, class or prefix names
    ++next_;
    return r;
  }
  std::int64_t skipped_rows() const override { return skipped_; }
  std::int64_t line() const override { return line_; }

 private:
  RngStream rng_;
  std::vector<TraceRecord> rows_;
  std::vector<std::int64_t> lines_;
  std::size_t next_ = 0;
  std::int64_t skipped_ = 0, line_ = 0;
};

}  // namespace

std::unique_ptr<TraceRows> bootstrap_rows(std::unique_ptr<TraceRows> rows, std::uint64_t seed, std::uint64_t pass) {
  return std::make_unique<BootstrapRows>(std::move(rows), seed, pass);
}

}  // namespace servesim
