// Trace readers and writers. CSV rows are split by hand and numbers parsed with from_chars over
// the whole field, so "12abc" or an empty field is an error rather than a silent 12 or 0.
#include "sim/io/trace_reader.hpp"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"

namespace servesim {

namespace {

struct FormatInfo {
  std::string name;
  std::vector<std::string> columns;  // arrival, prompt, output[, class]
  bool absolute_time;                // timestamps made relative to the first row
};

const std::vector<FormatInfo>& formats() {
  static const std::vector<FormatInfo> f = {
      {"azure", {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, true},
      {"burstgpt", {"Timestamp", "Request tokens", "Response tokens", "Model"}, true},
      {"splitwise", {"arrived_at", "num_prefill_tokens", "num_decode_tokens"}, false},
      {"jsonl", {}, false},
  };
  return f;
}

const FormatInfo* find_format(const std::string& name) {
  for (const auto& f : formats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(field);
      field.clear();
    } else {
      field += c;
    }
  }
  out.push_back(field);
  for (auto& s : out) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
  }
  return out;
}

template <class T>
std::optional<T> parse_number(const std::string& s) {
  T v{};
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

}  // namespace

const std::vector<std::string>& trace_formats() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& f : formats()) n.push_back(f.name);
    return n;
  }();
  return names;
}

std::optional<double> parse_timestamp_s(const std::string& text) {
  // YYYY-MM-DD HH:MM:SS[.frac], optionally with 'T' and a trailing 'Z' or "+00:00".
  std::string t = text;
  if (!t.empty() && t.back() == 'Z') t.pop_back();
  if (t.size() > 6 && t.compare(t.size() - 6, 6, "+00:00") == 0) t.resize(t.size() - 6);
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || (t[10] != ' ' && t[10] != 'T') || t[13] != ':' || t[16] != ':') return std::nullopt;
  const auto y = parse_number<int>(t.substr(0, 4));
  const auto mo = parse_number<int>(t.substr(5, 2));
  const auto d = parse_number<int>(t.substr(8, 2));
  const auto h = parse_number<int>(t.substr(11, 2));
  const auto mi = parse_number<int>(t.substr(14, 2));
  const auto s = parse_number<int>(t.substr(17, 2));
  if (!y || !mo || !d || !h || !mi || !s || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *s > 60) return std::nullopt;
  double frac = 0.0;
  if (t.size() > 19) {
    if (t[19] != '.' || t.size() == 20) return std::nullopt;
    const std::string digits = t.substr(20);
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
    }
    frac = *parse_number<double>("0." + digits);
  }
  const std::int64_t days = days_from_civil(*y, static_cast<unsigned>(*mo), static_cast<unsigned>(*d));
  return static_cast<double>(days * 86400 + *h * 3600 + *mi * 60 + *s) + frac;
}

TraceReader::TraceReader(std::string path, std::string format, bool sort_arrivals)
    : path_(std::move(path)), format_(std::move(format)), sort_arrivals_(sort_arrivals) {
  const FormatInfo* f = find_format(format_);
  if (!f) {
    std::string names;
    for (const auto& n : trace_formats()) names += (names.empty() ? "" : ", ") + n;
    throw InputError(path_, "", "unknown trace format '" + format_ + "' (" + names + ")");
  }
  in_ = std::make_unique<InputFile>(path_);
  if (f->columns.empty()) return;
  std::string header;
  if (!in_->getline(header)) throw InputError(path_, "line 1", "empty trace file (expected a header)");
  if (header.rfind("\xEF\xBB\xBF", 0) == 0) header.erase(0, 3);  // UTF-8 byte-order mark (Excel's CSV export)
  const auto names = split_csv(header);
  header_fields_ = names.size();
  for (const auto& want : f->columns) {
    int found = -1;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == want) found = static_cast<int>(i);
    }
    if (found < 0 && want != "Model") fail("header lacks column '" + want + "' (" + format_ + " format)");
    columns_.push_back(found);
  }
}

void TraceReader::fail(const std::string& message) const {
  throw InputError(path_, "line " + std::to_string(in_->line()), message);
}

std::optional<TraceRecord> TraceReader::parse_csv_row(const std::string& text) {
  const auto fields = split_csv(text);
  if (fields.size() != header_fields_) {
    fail("expected " + std::to_string(header_fields_) + " fields, got " + std::to_string(fields.size()));
  }
  const FormatInfo& f = *find_format(format_);
  TraceRecord r;
  const std::string& t = fields[static_cast<std::size_t>(columns_[0])];
  std::optional<double> time = format_ == "azure" ? parse_timestamp_s(t) : parse_number<double>(t);
  if (!time || !std::isfinite(*time)) fail(f.columns[0] + ": not a " + std::string(format_ == "azure" ? "timestamp" : "number") + ": '" + t + "'");
  if (*time < 0.0) fail(f.columns[0] + ": must be >= 0, got " + t);
  const auto prompt = parse_number<std::int64_t>(fields[static_cast<std::size_t>(columns_[1])]);
  const auto output = parse_number<std::int64_t>(fields[static_cast<std::size_t>(columns_[2])]);
  if (!prompt) fail(f.columns[1] + ": not an integer: '" + fields[static_cast<std::size_t>(columns_[1])] + "'");
  if (!output) fail(f.columns[2] + ": not an integer: '" + fields[static_cast<std::size_t>(columns_[2])] + "'");
  if (*prompt <= 0) fail(f.columns[1] + ": must be > 0, got " + std::to_string(*prompt));
  if (*output < 0 || (*output == 0 && format_ != "burstgpt")) fail(f.columns[2] + ": must be > 0, got " + std::to_string(*output));
  if (columns_.size() > 3 && columns_[3] >= 0) r.cls = fields[static_cast<std::size_t>(columns_[3])];
  if (f.absolute_time) {
    if (!origin_s_) origin_s_ = *time;
    r.arrival_s = *time - *origin_s_;
  } else {
    r.arrival_s = *time;
  }
  r.prompt_tokens = *prompt;
  r.output_tokens = *output;
  if (*output == 0) {
    // BurstGPT logs failed requests with 0 response tokens: counted, not simulated.
    ++skipped_;
    return std::nullopt;
  }
  return r;
}

std::optional<TraceRecord> TraceReader::parse_jsonl_row(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    fail("not a JSON object");
  }
  if (!j.is_object()) fail("not a JSON object");
  TraceRecord r;
  bool has_arrival = false, has_prompt = false, has_output = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "arrival_s") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0) fail("arrival_s: must be a finite number >= 0");
      r.arrival_s = v.get<double>();
      has_arrival = true;
    } else if (key == "prefix_tokens") {
      if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) fail("prefix_tokens: must be an integer > 0");
      r.prefix_tokens = v.get<std::int64_t>();
    } else if (key == "prompt_tokens" || key == "output_tokens") {
      if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) fail(key + ": must be an integer > 0");
      (key == "prompt_tokens" ? r.prompt_tokens : r.output_tokens) = v.get<std::int64_t>();
      (key == "prompt_tokens" ? has_prompt : has_output) = true;
    } else if (key == "prefix_id" || key == "class") {
      if (v.is_null()) continue;
      if (!v.is_string() && !v.is_number_integer()) fail(key + ": must be a string or an integer");
      (key == "class" ? r.cls : r.prefix_id) = v.is_string() ? v.get<std::string>() : std::to_string(v.get<std::int64_t>());
    } else {
      fail("unknown key '" + key + "' (arrival_s, prompt_tokens, output_tokens, prefix_id, prefix_tokens, class)");
    }
  }
  if (!has_arrival) fail("missing arrival_s");
  if (!has_prompt) fail("missing prompt_tokens");
  if (!has_output) fail("missing output_tokens");
  if (r.prefix_tokens > 0 && r.prefix_id.empty()) fail("prefix_tokens: needs a prefix_id (the prefix it is the length of)");
  if (r.prefix_tokens > r.prompt_tokens) {
    fail("prefix_tokens: " + std::to_string(r.prefix_tokens) + " is longer than the prompt (" + std::to_string(r.prompt_tokens) + " tokens)");
  }
  return r;
}

std::optional<TraceRecord> TraceReader::read_row() {
  std::string text;
  while (in_->getline(text)) {
    if (text.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines
    auto r = format_ == "jsonl" ? parse_jsonl_row(text) : parse_csv_row(text);
    if (r) return r;
  }
  return std::nullopt;
}

std::optional<TraceRecord> TraceReader::next() {
  if (sort_arrivals_) {
    if (!sorted_) {
      sorted_.emplace();
      while (auto r = read_row()) sorted_->push_back(std::move(*r));
      // Stable: rows with one arrival time keep their file order.
      std::stable_sort(sorted_->begin(), sorted_->end(),
                       [](const TraceRecord& a, const TraceRecord& b) { return a.arrival_s < b.arrival_s; });
      // Absolute timestamps count from the first row of the file; sorted, from the earliest.
      if (!sorted_->empty() && find_format(format_)->absolute_time) {
        const double t0 = sorted_->front().arrival_s;
        for (auto& r : *sorted_) r.arrival_s -= t0;
      }
    }
    if (next_sorted_ >= sorted_->size()) return std::nullopt;
    return (*sorted_)[next_sorted_++];
  }
  auto r = read_row();
  if (r && r->arrival_s < last_arrival_s_) {
    fail("arrival time goes back (" + std::to_string(r->arrival_s) + " s after " + std::to_string(last_arrival_s_) +
         " s); set workload.trace.sort_arrivals to true to replay the rows sorted by arrival time");
  }
  if (r) last_arrival_s_ = r->arrival_s;
  return r;
}

std::string trace_header_line(const std::string& format) {
  if (format == "azure") return "TIMESTAMP,ContextTokens,GeneratedTokens";
  if (format == "burstgpt") return "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type";
  if (format == "splitwise") return "arrived_at,num_prefill_tokens,num_decode_tokens";
  return "";
}

std::string trace_row_line(const std::string& format, const TraceRecord& r) {
  char buf[256];
  if (format == "azure") {
    // Anchored at the Azure 2023 trace's first day; 7 fractional digits as in the real files.
    const double t = r.arrival_s + static_cast<double>(days_from_civil(2023, 11, 16) * 86400);
    const auto whole = static_cast<std::int64_t>(std::floor(t));
    const auto frac = static_cast<long long>(std::llround((t - static_cast<double>(whole)) * 1e7));
    std::int64_t y;
    unsigned m, d;
    const std::int64_t secs = whole + (frac >= 10000000 ? 1 : 0);
    civil_from_days(secs / 86400, y, m, d);
    const std::int64_t sod = secs % 86400;
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u %02lld:%02lld:%02lld.%07lld,%lld,%lld", static_cast<long long>(y), m, d,
                  static_cast<long long>(sod / 3600), static_cast<long long>(sod / 60 % 60), static_cast<long long>(sod % 60),
                  frac % 10000000, static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.output_tokens));
  } else if (format == "burstgpt") {
    std::snprintf(buf, sizeof buf, "%.3f,%s,%lld,%lld,%lld,Conversation log", r.arrival_s, r.cls.empty() ? "ChatGPT" : r.cls.c_str(),
                  static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.output_tokens),
                  static_cast<long long>(r.prompt_tokens + r.output_tokens));
  } else if (format == "splitwise") {
    std::snprintf(buf, sizeof buf, "%.6f,%lld,%lld", r.arrival_s, static_cast<long long>(r.prompt_tokens),
                  static_cast<long long>(r.output_tokens));
  } else {
    nlohmann::json j = {{"arrival_s", std::round(r.arrival_s * 1e6) / 1e6}, {"prompt_tokens", r.prompt_tokens}, {"output_tokens", r.output_tokens}};
    if (!r.prefix_id.empty()) j["prefix_id"] = r.prefix_id;
    if (r.prefix_tokens > 0) j["prefix_tokens"] = r.prefix_tokens;
    if (!r.cls.empty()) j["class"] = r.cls;
    return j.dump();
  }
  return buf;
}

TraceOpener trace_file_opener(const TraceConfig& t) {
  return [path = t.path, format = t.format, sort = t.sort_arrivals]() -> std::unique_ptr<TraceRows> {
    return std::make_unique<TraceReader>(path, format, sort);
  };
}

}  // namespace servesim
