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

// "00".."99": two decimal digits per table read.
constexpr char kDigitPairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// v < 10^9 as exactly nine digits with its leading zeros, without to_chars' digit count and
// divisions (7 of a row's 13 cells are such fractions). y / 2^57 tracks v / 10^8: the integer
// part is the first digit, and each multiplication of the fraction by 100 brings the next two
// into the integer part. The multiplier is 2^57 / 10^8 rounded up; its rounding never carries
// into a digit for v < 10^9 (all 10^9 values were checked against printf's %09u;
// tests/unit/test_outputs.cpp checks a sample through the writer). Small integers stay with
// to_chars: a fixed-width version of this for them was slower (most have 1-4 digits).
// Measured gain (kept because it is above the 2% of a bench/million.sh run that a hand-made
// numeric must earn): bench/instructions.sh 100000 (bench/million.json, requests.csv on,
// callgrind) 1,592.9M instructions with zero-padded std::to_chars here -> 1,535.7M (-3.6%),
// 2026-12-06; when introduced (6b2cc0a) -2.9% at the same size. Accuracy: exact (above).
void nine_digits(char* out, std::uint32_t v) {
  constexpr unsigned kShift = 57;
  constexpr std::uint64_t kFraction = (std::uint64_t{1} << kShift) - 1;
  std::uint64_t y = static_cast<std::uint64_t>(v) * 1'441'151'881u;  // < 2^61 for v < 10^9
  out[0] = static_cast<char>('0' + (y >> kShift));
  for (int pair = 0; pair < 4; ++pair) {
    y = (y & kFraction) * 100;  // < 2^64
    std::memcpy(out + 1 + 2 * pair, kDigitPairs + 2 * (y >> kShift), 2);
  }
}

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
    *p++ = '.';
    nine_digits(p, static_cast<std::uint32_t>(ns % 1'000'000'000));
    p += 9;
  }
  void comma() { *p++ = ','; }
};

}  // namespace

RequestsCsvWriter::RequestsCsvWriter(const std::string& path, bool with_stage) : file_(path), with_stage_(with_stage) {
  file_.write(kHeader);
  file_.write(with_stage ? ",stage\n" : "\n");
}

void RequestsCsvWriter::write_block() {
  std::fwrite(block_.data(), 1, used_, file_.get());
  used_ = 0;
}

void RequestsCsvWriter::close() {
  if (!file_.is_open()) return;
  write_block();
  file_.close();
}

void RequestsCsvWriter::commit() {
  close();
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
  if (with_stage_) {
    w.comma();
    w.integer(r.stage);
  }
  *w.p++ = '\n';
  used_ = static_cast<std::size_t>(w.p - block_.data());
  ++rows_;
}

}  // namespace servesim
