// See load_profile.hpp.
#include "sim/io/load_profile.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "sim/config/scenario_keys.hpp"
#include "sim/core/error.hpp"

namespace servesim {

namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}
// std::nullopt unless `text` is a finite number > 0.
std::optional<double> positive_number(const std::string& text) {
  double v = 0.0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || !std::isfinite(v) || v <= 0.0) return std::nullopt;
  return v;
}
double parse_positive(const std::string& text, const std::string& what) {
  const auto v = positive_number(text);
  if (!v) throw InputError("--load-profile", what, "must be a number > 0, got '" + text + "'");
  return *v;
}
// `v` within the range of the scenario key it sets, so that an error names the --load-profile key
// (the user's) rather than the scenario's.
double in_range_of(double v, const std::string& key_path, const std::string& what) {
  const KeyRange& range = find_scenario_key(key_path)->range;
  if (!range.contains(v)) throw InputError("--load-profile", what, "must be in " + range.text() + ", got " + key_number_text(v));
  return v;
}
}  // namespace

double parse_duration_s(const std::string& text, const std::string& flag, const std::string& what) {
  static const std::pair<const char*, double> units[] = {{"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}};
  std::optional<double> v = positive_number(text);
  for (const auto& [suffix, scale] : units) {
    const std::string sfx = suffix;
    if (v || text.size() <= sfx.size() || text.compare(text.size() - sfx.size(), sfx.size(), sfx) != 0) continue;
    const std::string num = text.substr(0, text.size() - sfx.size());
    if (num.empty() || !(std::isdigit(static_cast<unsigned char>(num.back())) || num.back() == '.')) continue;
    if (const auto n = positive_number(num)) v = *n * scale;
  }
  if (!v) throw InputError(flag, what, "must be a duration > 0 (seconds, or a number with us, ms, s, m or h), got '" + text + "'");
  return *v;
}

void apply_load_profile(nlohmann::json& doc, const std::string& profile) {
  std::map<std::string, std::string> kv;
  std::size_t start = 0;
  while (start < profile.size()) {
    auto comma = profile.find(',', start);
    if (comma == std::string::npos) comma = profile.size();
    const std::string item = trim(profile.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw InputError("--load-profile", "", "expected key=value, got '" + item + "'");
    const std::string key = trim(item.substr(0, eq));
    if (key != "rps" && key != "duration" && key != "requests" && key != "arrival" && key != "cv" && key != "timeout") {
      throw InputError("--load-profile", key, "unknown key (rps, duration, requests, arrival, cv, timeout)");
    }
    if (kv.count(key)) throw InputError("--load-profile", key, "given twice");
    kv[key] = trim(item.substr(eq + 1));
  }
  if (!doc.is_object()) return;
  nlohmann::json& w = doc["workload"];
  if (!w.is_object()) w = nlohmann::json::object();
  if (kv.count("rps") || kv.count("arrival") || kv.count("cv")) {
    const std::string arrival = kv.count("arrival") ? kv["arrival"] : "poisson";
    if (arrival != "poisson" && arrival != "gamma" && arrival != "constant") {
      throw InputError("--load-profile", "arrival", "must be poisson, gamma or constant, got '" + arrival + "'");
    }
    if (!kv.count("rps")) throw InputError("--load-profile", "rps", "required with arrival/cv");
    nlohmann::json a = {{"impl", arrival}, {"rate_per_s", in_range_of(parse_positive(kv["rps"], "rps"), "workload.arrival.rate_per_s", "rps")}};
    if (arrival == "gamma") a["cv"] = kv.count("cv") ? in_range_of(parse_positive(kv["cv"], "cv"), "workload.arrival.cv", "cv") : 1.0;
    else if (kv.count("cv")) throw InputError("--load-profile", "cv", "only with arrival=gamma");
    w["arrival"] = a;
  }
  if (kv.count("duration")) {
    w["duration_s"] = in_range_of(parse_duration_s(kv["duration"], "--load-profile", "duration"), "workload.duration_s", "duration");
    if (!kv.count("requests")) w.erase("num_requests");  // the duration ends the workload
  }
  if (kv.count("requests")) {
    const double n = in_range_of(parse_positive(kv["requests"], "requests"), "workload.num_requests", "requests");
    if (n != std::floor(n)) throw InputError("--load-profile", "requests", "must be an integer");
    w["num_requests"] = static_cast<std::int64_t>(n);
  }
  if (kv.count("timeout")) {
    w["request_timeout_s"] = in_range_of(parse_duration_s(kv["timeout"], "--load-profile", "timeout"), "workload.request_timeout_s", "timeout");
  }
}

}  // namespace servesim
