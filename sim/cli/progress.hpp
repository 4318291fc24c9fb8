// A one-line progress bar on stderr for long runs, sweeps, saturate and plan. It draws only when
// stderr is a terminal and the user did not ask for --quiet, at most ten times per wall-clock
// second, and erases itself when done, so redirected output and logs never see it. update() may
// be called from several threads (parallel simulations report as they finish).
#pragma once
#include <chrono>
#include <mutex>
#include <string>

namespace servesim::cli {

class ProgressBar {
 public:
  // Enabled when `wanted` and stderr is a terminal.
  explicit ProgressBar(bool wanted);
  ~ProgressBar() { finish(); }
  bool enabled() const { return enabled_; }
  // `fraction` in [0, 1] (clamped); `detail` follows the bar ("1200/5000 requests").
  void update(double fraction, const std::string& detail);
  // Erases the line (idempotent).
  void finish();

 private:
  bool enabled_;
  std::mutex mu_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
  std::chrono::milliseconds delay_{300};  // short runs finish before a bar is worth drawing
};

}  // namespace servesim::cli
