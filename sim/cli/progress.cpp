// Terminal progress bar; see progress.hpp.
#include "sim/cli/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace servesim::cli {

ProgressBar::ProgressBar(bool wanted)
    : enabled_(wanted && ::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()), last_(start_) {
  // Tests set SERVESIM_PROGRESS_DELAY_MS=0 to see the bar on short runs.
  if (const char* env = std::getenv("SERVESIM_PROGRESS_DELAY_MS")) delay_ = std::chrono::milliseconds(std::atoi(env));
}

void ProgressBar::update(double fraction, const std::string& detail) {
  if (!enabled_) return;
  const std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  // Short runs finish before the bar is worth drawing.
  if (!drawn_ && now - start_ < delay_) return;
  last_ = now;
  drawn_ = true;
  fraction = std::clamp(fraction, 0.0, 1.0);
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r\033[K[%s] %5.1f%%  %s  %.1f s", bar.c_str(), 100.0 * fraction, detail.c_str(), elapsed);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace servesim::cli
