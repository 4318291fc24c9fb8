// requests.csv writer; see requests_csv.hpp. Times are exact decimal seconds from integer ns.
// Rows are formatted with std::to_chars into one buffer (no printf parsing): this runs once per
// request, so it is on the path that 10M-request runs pay for.
#include "sim/io/requests_csv.hpp"

#include <charconv>
#include <cstdio>
#include <cstring>

namespace servesim {

namespace {

struct Row {
  char buf[512];
  char* p = buf;
  void text(const char* s) {
    const std::size_t n = std::strlen(s);
    std::memcpy(p, s, n);
    p += n;
  }
  void integer(std::int64_t v) { p = std::to_chars(p, buf + sizeof buf, v).ptr; }
  // Non-negative ns as seconds with nine decimals; negative (never happened) as an empty cell.
  void seconds(TimeNs ns) {
    if (ns < 0) return;
    integer(ns / 1'000'000'000);
    char frac[10];
    std::int64_t f = ns % 1'000'000'000;
    for (int i = 8; i >= 0; --i, f /= 10) frac[i] = static_cast<char>('0' + f % 10);
    *p++ = '.';
    std::memcpy(p, frac, 9);
    p += 9;
  }
  void comma() { *p++ = ','; }
};

}  // namespace

RequestsCsvWriter::RequestsCsvWriter(const std::string& path) : file_(path) {
  file_.write(kHeader);
  file_.write("\n");
}

void RequestsCsvWriter::row(std::uint32_t id, const Request& r, const char* status, TimeNs now) {
  const bool done = r.state == RequestState::completed;
  Row w;
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
  std::fwrite(w.buf, 1, static_cast<std::size_t>(w.p - w.buf), file_.get());
  ++rows_;
}

}  // namespace servesim
