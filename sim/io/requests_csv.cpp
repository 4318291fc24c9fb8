// requests.csv writer; see requests_csv.hpp. Times are exact decimal seconds from integer ns.
// Rows are formatted with std::to_chars straight into a block that is written when full (no
// printf parsing, one fwrite per block): this runs once per request, so it is on the path that
// 10M-request runs pay for.
#include "sim/io/requests_csv.hpp"

#include <charconv>
#include <cstdio>
#include <cstring>

namespace servesim {

namespace {

// One row, formatted in place at `p` (the caller keeps kMaxRowBytes free: 13 fields of at most
// 20 digits and a separator, and a status word).
struct Row {
  char* p;
  char* end;
  void text(const char* s) {
    const std::size_t n = std::strlen(s);
    std::memcpy(p, s, n);
    p += n;
  }
  void integer(std::int64_t v) { p = std::to_chars(p, end, v).ptr; }
  // Non-negative ns as seconds with nine decimals; negative (never happened) as an empty cell.
  void seconds(TimeNs ns) {
    if (ns < 0) return;
    integer(ns / 1'000'000'000);
    // The nine decimals with their leading zeros: the digits of 1e9 + the fraction after its 1.
    char digits[10];
    std::to_chars(digits, digits + sizeof digits, ns % 1'000'000'000 + 1'000'000'000);
    *p++ = '.';
    std::memcpy(p, digits + 1, 9);
    p += 9;
  }
  void comma() { *p++ = ','; }
};

}  // namespace

RequestsCsvWriter::RequestsCsvWriter(const std::string& path) : file_(path) {
  file_.write(kHeader);
  file_.write("\n");
}

void RequestsCsvWriter::write_block() {
  std::fwrite(block_.data(), 1, used_, file_.get());
  used_ = 0;
}

void RequestsCsvWriter::commit() {
  write_block();
  file_.commit();
}

void RequestsCsvWriter::row(std::uint32_t id, const Request& r, const char* status, TimeNs now) {
  const bool done = r.state == RequestState::completed;
  if (block_.size() - used_ < kMaxRowBytes) write_block();
  Row w{block_.data() + used_, block_.data() + used_ + kMaxRowBytes};
  w.integer(id);
  w.comma();
  w.text(status);
  w.comma();
  w.seconds(r.arrival_ns);
  w.comma();
  w.seconds(r.scheduled_ns);
  w.comma();
  w.seconds(r.first_token_ns);
  w.comma();
  w.seconds(done ? now : -1);
  w.comma();
  w.seconds(r.scheduled_ns >= 0 ? r.scheduled_ns - r.arrival_ns : -1);
  w.comma();
  w.seconds(r.first_token_ns >= 0 ? r.first_token_ns - r.arrival_ns : -1);
  w.comma();
  w.seconds(done ? now - r.arrival_ns : -1);
  for (const std::int64_t v : {std::int64_t{r.prompt_tokens}, std::int64_t{r.output_tokens}, std::int64_t{r.generated_tokens},
                               std::int64_t{r.preemptions}}) {
    w.comma();
    w.integer(v);
  }
  *w.p++ = '\n';
  used_ = static_cast<std::size_t>(w.p - block_.data());
  ++rows_;
}

}  // namespace servesim
