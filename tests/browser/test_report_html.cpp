// report.html in a real browser: headless Chromium (Debian's `chromium` package; CI installs it)
// loads the run page and a sweep page, must log no console message (the page has no scripts, so
// any message is an error such as a blocked resource), and every chart's <svg> must be in the DOM.
// Also takes a screenshot; a control page proves the console check sees errors. Without the
// binary the test says so loudly and skips.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support.hpp"
#include "sim/io/html_report.hpp"
#include "sim/io/report_io.hpp"

using namespace servesim;
using namespace servesim::test;

namespace {

std::string find_chromium() {
  if (const char* env = std::getenv("SERVESIM_CHROMIUM")) return env;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

struct Browser {
  int exit_code;
  std::string stdout_text, stderr_text;
};

// Runs headless Chromium on `html_path` with `mode` (--dump-dom or --screenshot=...).
Browser chromium(const std::string& bin, const std::string& html_path, const std::string& mode) {
  const std::string tag = std::to_string(::getpid());
  const std::string profile = "/tmp/servesim_chromium_profile_" + tag;
  const std::string out = "/tmp/servesim_chromium_out_" + tag, err = "/tmp/servesim_chromium_err_" + tag;
  std::filesystem::remove_all(profile);
  const std::string cmd = "timeout 120 " + bin +
                          " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
                          " --disable-component-update --disable-sync --disable-dev-shm-usage --user-data-dir=" +
                          profile + " --enable-logging=stderr --v=0 --window-size=1240,2400 " + mode + " file://" + html_path + " >" + out +
                          " 2>" + err;
  const int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  Browser b{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  std::filesystem::remove_all(profile);
  return b;
}

// Lines Chromium logs for the page's console (errors, blocked loads, CSP violations).
std::string console_lines(const std::string& log) {
  std::istringstream in(log);
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.find("CONSOLE") != std::string::npos || line.find("Refused to") != std::string::npos ||
        line.find("Uncaught") != std::string::npos) {
      found += line + "\n";
    }
  }
  return found;
}

void check_page(const std::string& bin, const std::string& html, const std::vector<std::string>& chart_ids, const std::string& png) {
  std::ifstream in(html);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // Self-contained: no script, no external reference (the SVG namespace URI is a name, not a load).
  CHECK(text.find("<script") == std::string::npos);
  std::string stripped = text;
  for (std::size_t p; (p = stripped.find("http://www.w3.org/2000/svg")) != std::string::npos;) stripped.erase(p, 26);
  CHECK(stripped.find("http://") == std::string::npos);
  CHECK(stripped.find("https://") == std::string::npos);

  const Browser dom = chromium(bin, html, "--dump-dom");
  INFO("chromium stderr:\n" << dom.stderr_text.substr(0, 4000));
  REQUIRE(dom.exit_code == 0);
  const std::string console = console_lines(dom.stderr_text);
  CHECK_MESSAGE(console.empty(), "console output: " << console);
  for (const auto& id : chart_ids) {
    INFO("chart " << id);
    CHECK(dom.stdout_text.find("<svg id=\"" + id + "\"") != std::string::npos);
  }
  if (png.empty()) return;
  const Browser shot = chromium(bin, html, "--screenshot=" + png);
  CHECK(shot.exit_code == 0);
  CHECK(std::filesystem::exists(png));
  if (std::filesystem::exists(png)) {
    MESSAGE("screenshot " << png << ": " << std::filesystem::file_size(png) << " bytes");
    CHECK(std::filesystem::file_size(png) > 20000);  // a blank page compresses to a few KB
  }
}

}  // namespace

TEST_CASE("report.html renders in headless Chromium without console errors, with every chart") {
  const std::string bin = find_chromium();
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found (apt-get install chromium, or set SERVESIM_CHROMIUM); "
            "report.html was NOT checked in a browser ***");
    return;
  }
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 400;
  doc["workload"]["arrival"]["rate_per_s"] = 25.0;
  const std::string scen = write_temp("html.json", doc.dump());
  const std::string dir = "/tmp/servesim_html_" + std::to_string(::getpid());
  const auto res = run_cli("run " + scen + " --quiet --out " + dir);
  REQUIRE_MESSAGE(res.exit_code == 0, res.output);
  check_page(bin, dir + "/report.html",
             {"chart-cdf-ttft", "chart-cdf-tpot", "chart-cdf-e2e", "chart-throughput", "chart-requests", "chart-queue", "chart-batch",
              "chart-kv", "chart-gantt", "chart-roofline"},
             dir + "/report.png");
}

namespace {
// `html` with its Content-Security-Policy removed and a script that opens every <details> and lists
// the card cells (and folded text) whose box reaches past their card's right edge or whose
// content is wider than the cell; `extra_css` is appended to the page's style. The probe writes
// "N:first ones" into the body's data-overflow attribute, which --dump-dom shows.
std::string overflow_probe(const std::string& html, const std::string& extra_css) {
  std::string page = html;
  const std::size_t csp = page.find("<meta http-equiv=\"Content-Security-Policy\"");
  REQUIRE(csp != std::string::npos);
  page.erase(csp, page.find('>', csp) + 1 - csp);
  page.replace(page.find("</style>"), 8, extra_css + "</style>");
  const std::string script =
      "<script>document.querySelectorAll('details').forEach(function(d){d.open=true});var bad=[];"
      "document.querySelectorAll('.card').forEach(function(c){var edge=c.getBoundingClientRect().right;"
      "c.querySelectorAll('td,h3,details div').forEach(function(e){if(e.getBoundingClientRect().right>edge+0.5||"
      "e.scrollWidth>e.clientWidth+1)bad.push(e.textContent.slice(0,40))})});"
      "document.body.setAttribute('data-overflow',bad.length+':'+bad.slice(0,3).join('|'))</script>";
  page.replace(page.rfind("</body>"), 7, script + "</body>");
  return page;
}
std::string overflow_of(const std::string& dom) {
  const std::size_t at = dom.find("data-overflow=\"");
  return at == std::string::npos ? "(no probe result)" : dom.substr(at + 15, dom.find('"', at + 15) - at - 15);
}
}  // namespace

TEST_CASE("report.html's cards: the precision and layout run, long provenance text kept inside its card") {
  const std::string bin = find_chromium();
  // A 2 x B200 fp8 run: the derived B200 profile's provenance runs to ~2,000 characters with long
  // unbroken key names and URLs among its sources.
  auto doc = base_scenario();
  doc["hardware"] = "b200";
  doc["dtype"] = "bf16";
  doc["quantization"] = {{"method", "fp8"}, {"kv_cache_dtype", "fp8"}};
  doc["parallel"] = {{"data_parallel_size", 2}};
  doc["workload"]["num_requests"] = 100;
  const std::string scen = write_temp("html_cards.json", doc.dump());
  const std::string dir = "/tmp/servesim_htmlcards_" + std::to_string(::getpid());
  const auto res = run_cli("run " + scen + " --out " + dir + " --no-trace --no-csv");
  REQUIRE_MESSAGE(res.exit_code == 0, res.output);
  CHECK(res.output.find("fp8, KV cache fp8, tp 1, 2 replicas") != std::string::npos);  // the summary's engine line
  std::ifstream in(dir + "/report.html");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string html = ss.str();
  CHECK(html.find("<td>precision</td><td>fp8 (8-bit weights, fp8 GEMMs; base bf16), KV cache fp8</td>") != std::string::npos);
  CHECK(html.find("<td>layout</td><td>tp 1, 2 replicas on 2 GPUs</td>") != std::string::npos);
  CHECK(html.find("FLOP/s fp8</td>") != std::string::npos);  // the peak the fp8 GEMMs run against
  CHECK(html.find("<td>dtype</td>") == std::string::npos);
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found; the cards' overflow was NOT checked in a browser ***");
    return;
  }
  const std::string probe = write_temp("cards_probe.html", overflow_probe(html, ""));
  const std::string seen = overflow_of(chromium(bin, probe, "--dump-dom").stdout_text);
  CHECK_MESSAGE(seen.rfind("0:", 0) == 0, "cells past their card: " << seen);
  // Control: the page's style before the fix (a grid item as wide as its longest word, no breaks
  // inside words) does overflow, so the probe sees it.
  const std::string before = write_temp(
      "cards_probe_before.html", overflow_probe(html, ".card{min-width:auto!important}.card td{overflow-wrap:normal!important}"));
  const std::string seen_before = overflow_of(chromium(bin, before, "--dump-dom").stdout_text);
  CHECK_MESSAGE(seen_before.rfind("0:", 0) != 0, "the control page shows no overflow: " << seen_before);
  CHECK(seen_before.rfind("(no", 0) != 0);
  MESSAGE("cells past their card: " << seen << "; with the old style: " << seen_before);
}

TEST_CASE("load page (sweep/saturate) renders in headless Chromium with its charts") {
  const std::string bin = find_chromium();
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found; the sweep page was NOT checked in a browser ***");
    return;
  }
  // Three real runs at increasing load, as a sweep would produce them.
  LoadPage page;
  page.title = "sweep: llama-2-7b on a100-80gb-sxm";
  page.facts = {{"grid", "workload.arrival.rate_per_s=2,8,32"}};
  page.slos = {{"ttft_s", 99, 0.5}};
  for (const double rate : {2.0, 8.0, 32.0}) {
    auto doc = base_scenario();
    doc["workload"]["num_requests"] = 150;
    doc["workload"]["arrival"]["rate_per_s"] = rate;
    const Scenario s = scenario_from(doc);
    const auto report = make_report(s, simulate(s));
    LoadPoint p = load_point_from_report(rate, report);
    p.meets_slo = p.ttft_p99_s <= 0.5;
    page.points.push_back(p);
  }
  page.marked_load = 8.0;
  const std::string dir = "/tmp/servesim_loadhtml_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir + "/sweep.html");
    write_load_html(out, page);
  }
  check_page(bin, dir + "/sweep.html",
             {"chart-load-ttft_s", "chart-load-tpot_s", "chart-load-e2e_s", "chart-load-throughput", "chart-load-requests"}, "");
}

TEST_CASE("saturate --html: the probed rates' latency against load, drawn in headless Chromium") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 150;
  const std::string scen = write_temp("saturate_html.json", doc.dump());
  const std::string dir = "/tmp/servesim_sathtml_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto r = run_cli("saturate " + scen + " --slo ttft=500ms,tpot=50ms --replications 1 --tolerance 0.1 --json --html " + dir +
                         "/saturate.html 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  const auto result = nlohmann::json::parse(r.output);
  std::ifstream in(dir + "/saturate.html");
  std::stringstream page;
  page << in.rdbuf();
  // One load level per probe, the SLO's two targets and the stable rate on the page.
  CHECK(page.str().find(std::to_string(result["probes"].size()) + " load levels") != std::string::npos);
  CHECK(page.str().find("SLO TTFT p99") != std::string::npos);
  CHECK(page.str().find("SLO TPOT p99") != std::string::npos);
  CHECK(page.str().find("stable QPS") != std::string::npos);
  const std::string bin = find_chromium();
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found ***");
    return;
  }
  check_page(bin, dir + "/saturate.html",
             {"chart-load-ttft_s", "chart-load-tpot_s", "chart-load-e2e_s", "chart-load-throughput", "chart-load-requests"}, "");
}

TEST_CASE("sweep --html over the arrival rate: its rows' latency against load, drawn in headless Chromium") {
  auto doc = base_scenario();
  doc["workload"]["num_requests"] = 100;
  const std::string scen = write_temp("sweep_html.json", doc.dump());
  const std::string dir = "/tmp/servesim_sweephtml_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto r = run_cli("sweep " + scen + " --grid workload.arrival.rate_per_s=2,8,32 --slo ttft=500ms --html " + dir + "/sweep.html 2>&1");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("latency.e2e_s.p50") != std::string::npos);  // the column the page draws, added
  std::ifstream in(dir + "/sweep.html");
  std::stringstream page;
  page << in.rdbuf();
  CHECK(page.str().find("3 load levels") != std::string::npos);
  CHECK(page.str().find("SLO TTFT p99") != std::string::npos);
  // Any other grid is refused before anything runs, naming the flag.
  const auto bad = run_cli("sweep " + scen + " --grid engine.max_num_seqs=8,16 --html " + dir + "/x.html 2>&1");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--html") != std::string::npos);
  const std::string bin = find_chromium();
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found ***");
    return;
  }
  check_page(bin, dir + "/sweep.html",
             {"chart-load-ttft_s", "chart-load-tpot_s", "chart-load-e2e_s", "chart-load-throughput", "chart-load-requests"}, "");
}

TEST_CASE("plan --html: cost against latency with its Pareto front, and each option's latency against the probed rates") {
  const std::string small = std::string(test_data_dir()) + "/dist/small.json";
  const std::string dir = "/tmp/servesim_planhtml_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto r = run_cli("plan --model llama-2-7b --rate 30 --slo ttft=2s,tpot=100ms --hw a100-80gb-sxm,h100-sxm --tp 1,2 "
                         "--replications 1 --tolerance 0.1 --workload " + small + " --json --html " + dir + "/plan.html 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  const auto result = nlohmann::json::parse(r.output);
  std::ifstream in(dir + "/plan.html");
  std::stringstream page;
  page << in.rdbuf();
  // One pair of charts per option whose search kept its probes (those meeting the SLO here), one
  // cost point per priced row predicted at the target rate, and the SLO's two targets.
  std::vector<std::string> charts = {"chart-cost-latency"};
  std::size_t options = 0, priced = 0;
  for (const auto& row : result["rows"]) {
    if (!row["meets_slo"].get<bool>()) continue;
    charts.push_back("chart-load-ttft_s-" + std::to_string(options));
    charts.push_back("chart-load-tpot_s-" + std::to_string(options++));
    if (row.contains("usd_per_million_output_tokens")) ++priced;
    const std::string name = row["hw"].get<std::string>() + " " + row["quant"].get<std::string>() + " tp " + std::to_string(row["tp"].get<int>());
    CHECK(page.str().find("<h3>" + name + "</h3>") != std::string::npos);
  }
  REQUIRE(options >= 2);
  CHECK(page.str().find(std::to_string(options) + " configurations, ") != std::string::npos);
  CHECK(page.str().find("SLO TTFT p99") != std::string::npos);
  CHECK(page.str().find("SLO TPOT p99") != std::string::npos);
  CHECK(page.str().find("Pareto front (nothing both cheaper and faster)") != std::string::npos);
  std::size_t marks = 0;
  for (std::size_t at = 0; (at = page.str().find("per million output tokens, ", at)) != std::string::npos; ++at) ++marks;
  CHECK(marks == priced);  // each cost point's tooltip
  const std::string bin = find_chromium();
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found ***");
    return;
  }
  check_page(bin, dir + "/plan.html", charts, dir + "/plan.png");
}

TEST_CASE("plan --html where no option fits: the page says so and draws no empty chart") {
  const std::string dir = "/tmp/servesim_planhtml_empty_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto r = run_cli("plan --model llama-2-70b --rate 5 --slo ttft=2s,tpot=100ms --hw a10 --tp 1 --html " + dir + "/plan.html 2>/dev/null");
  REQUIRE(r.exit_code == 0);
  std::ifstream in(dir + "/plan.html");
  std::stringstream page;
  page << in.rdbuf();
  CHECK(page.str().find("0 configurations, 0 load levels") != std::string::npos);
  CHECK(page.str().find("No configuration has a search to draw") != std::string::npos);
  CHECK(page.str().find("<svg") == std::string::npos);
}

TEST_CASE("roofline --html: the step's ops on the roofline, drawn in headless Chromium") {
  const std::string dir = "/tmp/servesim_roofhtml_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto r = run_cli("roofline --model llama-2-7b --hw a100-80gb-sxm --batch 1 --context 2048 --quant int8 --html " + dir +
                         "/roofline.html 2>&1");
  REQUIRE(r.exit_code == 0);
  std::ifstream in(dir + "/roofline.html");
  std::stringstream page;
  page << in.rdbuf();
  CHECK(page.str().find("MFU") != std::string::npos);
  CHECK(page.str().find("int8 GEMMs move fewer bytes") != std::string::npos);  // the why line in the card
  const std::string bin = find_chromium();
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found ***");
    return;
  }
  check_page(bin, dir + "/roofline.html", {"chart-roofline"}, "");
}

TEST_CASE("control: the console check does see a page's console errors") {
  const std::string bin = find_chromium();
  if (bin.empty()) {
    MESSAGE("*** SKIPPED: chromium not found ***");
    return;
  }
  const std::string html = write_temp("control.html", "<html><body><script>console.error('servesim-control')</script></body></html>");
  const Browser b = chromium(bin, html, "--dump-dom");
  CHECK(b.exit_code == 0);
  CHECK(console_lines(b.stderr_text).find("servesim-control") != std::string::npos);
}
