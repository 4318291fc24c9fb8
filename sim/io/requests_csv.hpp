// requests.csv: one row per arrived request, written (streamed) the moment it leaves the system
// (finished or rejected), so memory does not grow with the run. Rows are in departure order.
#pragma once
#include <cstdint>
#include <string>

#include "sim/io/output_file.hpp"
#include "sim/metrics/run_observer.hpp"

namespace servesim {

class RequestsCsvWriter final : public RunObserver {
 public:
  static constexpr const char* kHeader =
      "id,status,arrival_s,scheduled_s,first_token_s,finish_s,queue_s,ttft_s,e2e_s,"
      "prompt_tokens,output_tokens,generated_tokens,preemptions";

  explicit RequestsCsvWriter(const std::string& path);
  void on_rejected(std::uint32_t id, const Request& r, TimeNs now) override { row(id, r, "rejected", now); }
  void on_finished(std::uint32_t id, const Request& r, TimeNs now) override { row(id, r, "completed", now); }
  // Renames the finished file into place.
  void commit() { file_.commit(); }
  std::int64_t rows() const { return rows_; }

 private:
  void row(std::uint32_t id, const Request& r, const char* status, TimeNs now);
  OutputFile file_;
  std::int64_t rows_ = 0;
};

}  // namespace servesim
