// Output writers: bounded timeline, request phase spans, SVG charts, and the files `run` writes
// (requests.csv and trace.json checked against report.json and the trace event format).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "../support.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/json_reader.hpp"
#include "sim/io/report_io.hpp"
#include "sim/io/requests_csv.hpp"
#include "sim/io/svg_chart.hpp"
#include "sim/metrics/run_recorder.hpp"
#include "sim/serve/simulation.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// The base scenario with `requests` Poisson arrivals at `rate_per_s`, written to a temporary file.
std::string temp_scenario(const std::string& name, int requests, double rate_per_s) {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = requests;
  doc["workload"]["arrival"]["rate_per_s"] = rate_per_s;
  return write_temp(name, doc.dump());
}

// servesim ARGS on a pseudo-terminal (`script`), progress bars drawn at once; what reached stderr
// (stdout goes to /dev/null), after checking the command succeeded.
std::string run_on_tty(const std::string& args) {
  const std::string cmd = "SERVESIM_PROGRESS_DELAY_MS=0 script -qec \"" + std::string(servesim::test::servesim_binary()) + " " + args +
                          " >/dev/null\" /dev/null 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  CHECK(pclose(pipe) == 0);
  return out;
}

}  // namespace

TEST_CASE("timeline: bucket count stays bounded and widening keeps every count") {
  Timeline t(16, 1000);
  std::int64_t added = 0;
  for (TimeNs x = 0; x < 10'000'000; x += 777) {
    t.at(x).arrived += 1;
    ++added;
  }
  std::int64_t sum = 0;
  for (const auto& b : t.buckets()) sum += b.arrived;
  CHECK(t.buckets().size() <= 16);
  CHECK(sum == added);
  CHECK(t.bucket_width_ns() * 16 > 10'000'000 - 777);
  // Each point sits in the bucket covering it: the last bucket holds the latest times.
  CHECK(t.buckets().back().arrived > 0);
}

TEST_CASE("run recorder: sampled requests' spans tile arrival to finish, in order") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 200;
  doc["workload"]["arrival"]["rate_per_s"] = 40.0;  // enough load to queue
  const Scenario s = scenario_from(doc);
  RunRecorder rec(200, 30);
  SimHooks hooks;
  hooks.observer = &rec;
  const SimResult r = simulate(s, hooks);
  REQUIRE(rec.sample().size() == 30);
  CHECK(rec.sample().front().id == 85);
  int queued_spans = 0;
  for (const auto& req : rec.sample()) {
    INFO("request " << req.id);
    CHECK(req.done);
    REQUIRE(!req.spans.empty());
    CHECK(req.spans.front().start_ns >= req.arrival_ns);
    for (std::size_t i = 0; i < req.spans.size(); ++i) {
      CHECK(req.spans[i].end_ns > req.spans[i].start_ns);
      if (i > 0) CHECK(req.spans[i].start_ns == req.spans[i - 1].end_ns);
    }
    CHECK(req.spans.back().phase == RequestPhase::decode);
    if (req.spans.front().phase == RequestPhase::queued) ++queued_spans;
  }
  CHECK(queued_spans > 0);
  // The timeline's counts agree with the run's.
  std::int64_t arrived = 0, completed = 0, tokens = 0;
  for (const auto& b : rec.timeline().buckets()) arrived += b.arrived, completed += b.completed, tokens += b.output_tokens;
  CHECK(arrived == r.metrics.arrived);
  CHECK(completed == r.metrics.completed);
  CHECK(tokens == r.metrics.output_tokens);
  CHECK(rec.shapes().prefill_iterations == r.metrics.prefill_iterations);
}

TEST_CASE("svg: escaping, log-axis ticks and the element id") {
  CHECK(svg::escape("a<b & \"c\"") == "a&lt;b &amp; &quot;c&quot;");
  CHECK(svg::format_number(1234567.0) == "1.23M");
  CHECK(svg::format_number(0.00125) == "0.00125");
  svg::Chart c;
  c.id = "x-chart";
  c.title = "T <1>";
  c.x.log = true;
  c.y.log = true;
  c.series.push_back({"s", "#000", {{1.0, 10.0}, {1000.0, 1e6}}, false, false, false});
  const std::string out = svg::render(c);
  CHECK(out.find("<svg id=\"x-chart\"") == 0);
  CHECK(out.find("T &lt;1&gt;") != std::string::npos);
  for (const char* tick : {">1<", ">10<", ">100<", ">1000<", ">1M<"}) CHECK(out.find(tick) != std::string::npos);
  svg::Chart empty;
  empty.id = "e";
  CHECK(svg::render(empty).find("no data") != std::string::npos);
}

TEST_CASE("requests.csv times: integer ns as seconds with exactly nine decimals, as printf writes them") {
  // The writer formats the decimals itself (requests_csv.cpp, nine_digits); printf's
  // "%lld.%09lld" is the reference. Values at digit boundaries, then a spread of others.
  std::vector<TimeNs> times = {0, 1, 9, 10, 99, 100, 999'999'999, 1'000'000'000, 1'000'000'001, 1'999'999'999,
                               123'456'789'012, 86'400'000'000'000, 9'007'199'254'740'993};
  for (TimeNs p = 1; p <= 100'000'000; p *= 10) {
    for (const TimeNs d : {-1, 0, 1}) times.push_back(p + d);
  }
  std::uint64_t x = 88172645463325252ull;  // xorshift64: a fixed spread of fractions
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    times.push_back(static_cast<TimeNs>(x % 4'000'000'000'000ull));
  }
  const std::string path = "/tmp/servesim_csv_digits_" + std::to_string(::getpid()) + ".csv";
  {
    RequestsCsvWriter w(path);
    for (std::size_t i = 0; i < times.size(); ++i) {
      Request r;
      r.arrival_ns = times[i];
      w.on_rejected(static_cast<std::uint32_t>(i), r, 0);
    }
    w.commit();
  }
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  std::size_t rows = 0, wrong = 0;
  while (std::getline(in, line)) {
    const auto f = split(line, ',');
    REQUIRE(f.size() == 13);
    const TimeNs t = times[rows++];
    char want[40];
    std::snprintf(want, sizeof want, "%lld.%09lld", static_cast<long long>(t / 1'000'000'000), static_cast<long long>(t % 1'000'000'000));
    if (f[2] != want) {
      if (++wrong <= 5) MESSAGE("arrival " << t << " ns written " << f[2] << ", printf " << want);
    }
  }
  std::filesystem::remove(path);
  MESSAGE(rows << " times formatted, " << wrong << " differ from printf");
  CHECK(rows == times.size());
  CHECK(wrong == 0);
}

TEST_CASE("run writes requests.csv that agrees with report.json") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 300;
  doc["workload"]["arrival"]["rate_per_s"] = 30.0;
  doc["workload"]["output_tokens"] = nlohmann::json::parse(R"({"impl": "uniform", "min_tokens": 1, "max_tokens": 300})");
  doc["engine"]["max_model_len"] = 400;  // some requests are too long: rejected rows
  doc["workload"]["prompt_tokens"] = nlohmann::json::parse(R"({"impl": "uniform", "min_tokens": 50, "max_tokens": 200})");
  const std::string scen = write_temp("csv.json", doc.dump());
  const std::string dir = "/tmp/servesim_csv_" + std::to_string(::getpid());
  const auto res = run_cli("run " + scen + " --quiet --out " + dir);
  REQUIRE_MESSAGE(res.exit_code == 0, res.output);
  const auto report = load_json_file(dir + "/report.json");
  std::ifstream in(dir + "/requests.csv");
  std::string line;
  std::getline(in, line);
  CHECK(line == "id,status,arrival_s,scheduled_s,first_token_s,finish_s,queue_s,ttft_s,e2e_s,prompt_tokens,output_tokens,generated_tokens,preemptions");
  std::int64_t rows = 0, completed = 0, rejected = 0, preemptions = 0, out_tokens = 0;
  double ttft_sum = 0, e2e_sum = 0, e2e_max = 0;
  std::map<long, int> ids;
  while (std::getline(in, line)) {
    const auto f = split(line, ',');
    REQUIRE(f.size() == 13);
    ++rows;
    ids[std::stol(f[0])] += 1;
    preemptions += std::stol(f[12]);
    if (f[1] == "completed") {
      ++completed;
      const double arrival = std::stod(f[2]), sched = std::stod(f[3]), first = std::stod(f[4]), finish = std::stod(f[5]);
      CHECK(arrival <= sched);
      CHECK(sched < first);
      CHECK(first <= finish);
      CHECK(std::fabs(std::stod(f[8]) - (finish - arrival)) < 1e-8);
      ttft_sum += std::stod(f[7]);
      e2e_sum += std::stod(f[8]);
      e2e_max = std::max(e2e_max, std::stod(f[8]));
      CHECK(f[10] == f[11]);  // generated all it asked for
      out_tokens += std::stol(f[11]);
    } else {
      CHECK(f[1] == "rejected");
      ++rejected;
      CHECK(f[4].empty());
      CHECK(f[5].empty());
    }
  }
  const auto& rq = report["requests"];
  CHECK(rows == rq["arrived"].get<std::int64_t>());
  CHECK(completed == rq["completed"].get<std::int64_t>());
  CHECK(rejected == rq["rejected"].get<std::int64_t>());
  CHECK(rejected > 0);
  CHECK(preemptions == rq["preemptions"].get<std::int64_t>());
  CHECK(ids.size() == static_cast<std::size_t>(rows));  // each id once
  CHECK(ids.rbegin()->first == rows - 1);
  // Means from the rows agree with the report's exact means (CSV times are exact ns).
  const double ttft_mean = report["latency"]["ttft_s"]["mean"], e2e_mean = report["latency"]["e2e_s"]["mean"];
  MESSAGE("csv vs report: ttft mean " << ttft_sum / completed << " vs " << ttft_mean << ", e2e mean " << e2e_sum / completed << " vs "
                                      << e2e_mean);
  CHECK(std::fabs(ttft_sum / completed - ttft_mean) <= 1e-9 * ttft_mean + 1e-12);
  CHECK(std::fabs(e2e_sum / completed - e2e_mean) <= 1e-9 * e2e_mean + 1e-12);
  CHECK(std::fabs(e2e_max - report["latency"]["e2e_s"]["max"].get<double>()) < 1e-9);
  CHECK(out_tokens == std::llround(report["throughput"]["output_tokens_per_s"].get<double>() * report["sim"]["simulated_s"].get<double>()));
}

namespace {

// Checks `doc` against the trace event format as Perfetto and chrome://tracing read it and
// returns the number of complete (X) events per (pid, tid) track.
std::map<std::pair<long, long>, int> validate_trace(const nlohmann::json& doc) {
  std::map<std::pair<long, long>, int> spans;
  REQUIRE(doc.is_object());
  REQUIRE(doc.contains("traceEvents"));
  REQUIRE(doc["traceEvents"].is_array());
  std::map<std::pair<long, long>, double> last_start, last_end;
  std::map<std::pair<long, std::string>, double> last_counter;
  for (const auto& e : doc["traceEvents"]) {
    INFO(e.dump());
    for (const char* k : {"name", "ph", "ts", "pid", "tid"}) REQUIRE(e.contains(k));
    REQUIRE(e["name"].is_string());
    REQUIRE(e["ph"].is_string());
    REQUIRE(e["ts"].is_number());
    REQUIRE(e["pid"].is_number_integer());
    REQUIRE(e["tid"].is_number_integer());
    const std::string ph = e["ph"];
    const double ts = e["ts"];
    CHECK(ts >= 0.0);
    const std::pair<long, long> track{e["pid"].get<long>(), e["tid"].get<long>()};
    if (ph == "X") {
      REQUIRE(e.contains("dur"));
      REQUIRE(e["dur"].is_number());
      const double dur = e["dur"];
      CHECK(dur >= 0.0);
      // Spans on one track come in time order and do not overlap (a track is one request or one
      // replica's iteration stream).
      if (last_start.count(track)) {
        CHECK(ts >= last_start[track]);
        CHECK(ts >= last_end[track] - 1e-6);
      }
      last_start[track] = ts;
      last_end[track] = ts + dur;
      spans[track] += 1;
    } else if (ph == "C") {
      REQUIRE(e.contains("args"));
      REQUIRE(e["args"].is_object());
      REQUIRE(!e["args"].empty());
      for (const auto& [k, v] : e["args"].items()) CHECK(v.is_number());
      const auto key = std::make_pair(e["pid"].get<long>(), e["name"].get<std::string>());
      if (last_counter.count(key)) CHECK(ts >= last_counter[key]);
      last_counter[key] = ts;
    } else {
      CHECK(ph == "M");
      CHECK(e["args"].is_object());
    }
  }
  return spans;
}

}  // namespace

TEST_CASE("run writes trace.json in the trace event format, sampled as asked") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 120;
  doc["workload"]["arrival"]["rate_per_s"] = 40.0;
  doc["engine"]["max_num_seqs"] = 8;  // a queue forms
  const std::string scen = write_temp("trace.json", doc.dump());
  const std::string dir = "/tmp/servesim_trace_" + std::to_string(::getpid());

  SUBCASE("default bounds: every request of a short run, every iteration") {
    const auto res = run_cli("run " + scen + " --quiet --out " + dir);
    REQUIRE_MESSAGE(res.exit_code == 0, res.output);
    const auto trace = load_json_file(dir + "/trace.json");
    const auto report = load_json_file(dir + "/report.json");
    const auto spans = validate_trace(trace);
    int request_tracks = 0, iteration_spans = 0, queued = 0;
    for (const auto& [track, n] : spans) {
      if (track.first == 1000) ++request_tracks;
      if (track.first == 1) iteration_spans += n;
    }
    for (const auto& e : trace["traceEvents"]) queued += e["name"] == "queued" ? 1 : 0;
    MESSAGE("trace: " << trace["traceEvents"].size() << " events, " << request_tracks << " request tracks, " << iteration_spans
                      << " iterations, " << queued << " queued spans");
    CHECK(request_tracks == 120);
    CHECK(iteration_spans == report["batch"]["iterations"].get<int>());
    CHECK(queued > 0);
  }
  SUBCASE("--trace-requests and --trace-seconds bound the file") {
    const auto res = run_cli("run " + scen + " --quiet --trace-requests 5 --trace-seconds 1.5 --out " + dir);
    REQUIRE_MESSAGE(res.exit_code == 0, res.output);
    const auto trace = load_json_file(dir + "/trace.json");
    const auto spans = validate_trace(trace);
    int request_tracks = 0;
    for (const auto& [track, n] : spans) request_tracks += track.first == 1000 ? 1 : 0;
    CHECK(request_tracks == 5);
    for (const auto& e : trace["traceEvents"]) {
      if (e["pid"] == 1 && e["ph"] != "M") CHECK(e["ts"].get<double>() < 1.5e6);
    }
  }
  SUBCASE("--no-trace, --no-csv, --no-html write none of them; bad bounds exit 2") {
    std::filesystem::remove_all(dir);
    const auto res = run_cli("run " + scen + " --quiet --no-trace --no-csv --no-html --out " + dir);
    REQUIRE_MESSAGE(res.exit_code == 0, res.output);
    CHECK(std::filesystem::exists(dir + "/report.json"));
    CHECK(!std::filesystem::exists(dir + "/trace.json"));
    CHECK(!std::filesystem::exists(dir + "/requests.csv"));
    CHECK(!std::filesystem::exists(dir + "/report.html"));
    const auto bad = run_cli("run " + scen + " --quiet --trace-seconds -1 --out " + dir);
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("--trace-seconds") != std::string::npos);
  }
}

TEST_CASE("same scenario and seed: byte-identical requests.csv, trace.json and report.html") {
  const std::string scen = temp_scenario("det.json", 150, 30.0);
  const std::string a = "/tmp/servesim_outdet_a_" + std::to_string(::getpid());
  const std::string b = "/tmp/servesim_outdet_b_" + std::to_string(::getpid());
  REQUIRE(run_cli("run " + scen + " --quiet --out " + a).exit_code == 0);
  REQUIRE(run_cli("run " + scen + " --quiet --out " + b).exit_code == 0);
  for (const char* f : {"requests.csv", "trace.json", "report.html"}) {
    INFO(f);
    const std::string x = slurp(a + "/" + f);
    CHECK(!x.empty());
    CHECK(x == slurp(b + "/" + f));
  }
}

TEST_CASE("progress bar: drawn on a terminal only, silenced by --quiet") {
  const std::string scen = temp_scenario("progress.json", 3000, 20.0);
  const std::string dir = "/tmp/servesim_progress_" + std::to_string(::getpid());
  // Not a terminal (a pipe): no bar, no carriage returns.
  const auto piped = run_cli("run " + scen + " --out " + dir);
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.output.find('\r') == std::string::npos);
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    MESSAGE("*** SKIPPED the terminal half: `script` (util-linux) not found ***");
    return;
  }
  auto on_tty = [&](const std::string& extra) { return run_on_tty("run " + scen + " --out " + dir + " " + extra); };
  const std::string bar = on_tty("");
  CHECK(bar.find("requests,") != std::string::npos);
  CHECK(bar.find("%") != std::string::npos);
  CHECK(bar.find("\r\033[K") != std::string::npos);  // drawn in place, erased at the end
  CHECK(on_tty("--quiet").find("requests,") == std::string::npos);
}

TEST_CASE("progress lines on sweep, saturate and plan: on a terminal only") {
  const std::string scen = temp_scenario("progress_analyses.json", 100, 2.0);
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"sweep " + scen + " --grid engine.max_num_seqs=8,16,32", "runs"},
      {"saturate " + scen + " --slo ttft=1s --replications 1 --tolerance 0.2", "probe "},
      {"plan --model llama-2-7b --hw a100-80gb-sxm --tp 1,2 --rate 1 --slo ttft=1s --replications 1 --tolerance 0.3", "options"}};
  // Plain pair access, not a structured binding: clang (the sanitizer build) refuses a binding
  // captured by INFO's lambda.
  for (const auto& command : commands) {
    const std::string& args = command.first;
    INFO(args);
    const auto piped = run_cli(args);  // a pipe: no bar
    REQUIRE(piped.exit_code == 0);
    CHECK(piped.output.find('\r') == std::string::npos);
  }
  if (std::system("command -v script >/dev/null 2>&1") != 0) {
    MESSAGE("*** SKIPPED the terminal half: `script` (util-linux) not found ***");
    return;
  }
  for (const auto& command : commands) {
    const std::string& args = command.first;
    INFO(args);
    const std::string out = run_on_tty(args);
    CHECK(out.find(command.second) != std::string::npos);
    CHECK(out.find("\r\033[K") != std::string::npos);
  }
}

TEST_CASE("report.html: SLO rows and lines, when the caller has SLOs") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 60;
  const Scenario s = scenario_from(doc);
  RunRecorder rec(60);
  SimHooks hooks;
  hooks.observer = &rec;
  const SimResult r = simulate(s, hooks);
  const auto report = make_report(s, r);
  std::ostringstream page;
  write_run_html(page, s, r, report, rec, {{"ttft_s", 99, 1e-6}, {"e2e_s", 50, 1e6}});
  const std::string html = page.str();
  CHECK(html.find("SLO TTFT p99") != std::string::npos);
  CHECK(html.find("misses</span>") != std::string::npos);  // no TTFT is a microsecond
  CHECK(html.find("SLO E2E p50") != std::string::npos);
  CHECK(html.find("meets</span>") != std::string::npos);   // every E2E is under 11 days
  CHECK(html.find("SLO p99 1 µs") != std::string::npos);    // the threshold line on the TTFT CDF
  std::ostringstream plain;
  write_run_html(plain, s, r, report, rec);
  CHECK(plain.str().find("none set (no latency target)") != std::string::npos);
}

TEST_CASE("no latency target is reported as no SLO in report.json and the summary, not as met") {
  auto doc = base_scenario();  // no "slo": the default class has no latency target
  doc["workload"]["num_requests"] = 30;
  const Scenario s = scenario_from(doc);
  const auto report = make_report(s, simulate(s));
  CHECK(report["slo"]["status"] == "none");
  CHECK(report["slo"]["met"].is_null());
  CHECK(report["slo"]["classes"][0]["status"] == "none");
  std::ostringstream summary;
  print_summary(summary, report, 0.0);
  CHECK(summary.str().find("slo        none set (no latency target)") != std::string::npos);
  CHECK(summary.str().find("slo        met") == std::string::npos);

  doc["slo"] = {{"ttft_s", 1e-6}};  // no TTFT is a microsecond
  const Scenario strict = scenario_from(doc);
  const auto missed = make_report(strict, simulate(strict));
  CHECK(missed["slo"]["status"] == "not met");
  CHECK(missed["slo"]["met"] == false);
  std::ostringstream text;
  print_summary(text, missed, 0.0);
  CHECK(text.str().find("slo        NOT met") != std::string::npos);
}

TEST_CASE("the summary labels preempted requests, preemption events and padding waste") {
  auto doc = base_scenario();
  doc["engine"]["gpu_memory_utilization"] = 0.2;  // a small KV cache: decodes preempt
  doc["workload"] = nlohmann::json::parse(R"({"num_requests": 64, "arrival": {"impl": "all_at_once"},
      "prompt_tokens": {"impl": "fixed", "value_tokens": 1500}, "output_tokens": {"impl": "fixed", "value_tokens": 1500}})");
  const Scenario s = scenario_from(doc);
  const auto report = make_report(s, simulate(s));
  REQUIRE(report["requests"]["preemptions"].get<long long>() > 0);
  std::ostringstream summary;
  print_summary(summary, report, 0.0);
  const std::string want = "  preempted  " + std::to_string(report["requests"]["preempted"].get<long long>()) + " requests (" +
                           std::to_string(report["requests"]["preemptions"].get<long long>()) + " preemptions, ";
  CHECK(summary.str().find(want) != std::string::npos);
  CHECK(summary.str().find("padding waste 0.0%") != std::string::npos);
}
