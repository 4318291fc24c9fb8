// requests.csv writer; see requests_csv.hpp. Times are exact decimal seconds from integer ns.
#include "sim/io/requests_csv.hpp"

#include <cstdio>

namespace servesim {

RequestsCsvWriter::RequestsCsvWriter(const std::string& path) : file_(path) {
  file_.write(kHeader);
  file_.write("\n");
}

void RequestsCsvWriter::row(std::uint32_t id, const Request& r, const char* status, TimeNs now) {
  // Cells for times that never happened (a rejected request has no first token) stay empty.
  char cell[7][32];
  auto time_cell = [](char* buf, TimeNs t) {
    if (t < 0) {
      buf[0] = '\0';
    } else {
      format_ns_as_seconds(buf, 32, t);
    }
  };
  const bool done = r.state == RequestState::completed;
  time_cell(cell[0], r.arrival_ns);
  time_cell(cell[1], r.scheduled_ns);
  time_cell(cell[2], r.first_token_ns);
  time_cell(cell[3], done ? now : -1);
  time_cell(cell[4], r.scheduled_ns >= 0 ? r.scheduled_ns - r.arrival_ns : -1);
  time_cell(cell[5], r.first_token_ns >= 0 ? r.first_token_ns - r.arrival_ns : -1);
  time_cell(cell[6], done ? now - r.arrival_ns : -1);
  std::fprintf(file_.get(), "%u,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%d,%d\n", id, status, cell[0], cell[1], cell[2], cell[3],
               cell[4], cell[5], cell[6], r.prompt_tokens, r.output_tokens, r.generated_tokens, r.preemptions);
  ++rows_;
}

}  // namespace servesim
