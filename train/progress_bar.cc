#include "placeflow/train/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace pf::progress {

Mode Resolve(Mode requested, FILE* out) {
  if (requested != Mode::kAuto) return requested;
  if (const char* env = std::getenv("PF_PROGRESS")) {
    if (std::strcmp(env, "bar") == 0) return Mode::kBar;
    if (std::strcmp(env, "lines") == 0) return Mode::kLines;
    if (std::strcmp(env, "quiet") == 0) return Mode::kQuiet;
  }
  return isatty(fileno(out)) ? Mode::kBar : Mode::kLines;
}

std::string FormatDuration(double seconds) {
  const int64_t s = std::max<int64_t>(0, std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string FormatRate(double r) {
  if (!std::isfinite(r) || r < 0) r = 0;
  if (r >= 1e6) return fmt::format("{:.1f}M ex/s", r / 1e6);
  if (r >= 1e4) return fmt::format("{:.0f}k ex/s", r / 1e3);
  if (r >= 1e3) return fmt::format("{:.1f}k ex/s", r / 1e3);
  return fmt::format("{:.0f} ex/s", r);
}

ProgressBar::ProgressBar(FILE* out, int64_t total, int width, double min_interval_s)
    : out_(out),
      total_(std::max<int64_t>(1, total)),
      width_(std::max(1, width)),
      min_interval_s_(min_interval_s),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string ProgressBar::Line(int64_t done, double elapsed_s, const Metrics& metrics,
                              double examples_per_s, bool finished) const {
  done = std::clamp<int64_t>(done, 0, total_);
  const int filled = static_cast<int>(width_ * done / total_);
  std::string bar(width_, '.');
  std::fill(bar.begin(), bar.begin() + filled, '=');
  if (filled < width_ && filled > 0) bar[filled - 1] = '>';
  std::string line = fmt::format("[{}] {}/{}", bar, done, total_);
  if (finished) {
    line += " - " + FormatDuration(elapsed_s);
  } else if (done > 0) {
    line += " - ETA " + FormatDuration(elapsed_s / done * (total_ - done));
  }
  for (const auto& [name, value] : metrics) line += fmt::format(" - {} {:.4f}", name, value);
  if (examples_per_s > 0) line += " - " + FormatRate(examples_per_s);
  return line;
}

void ProgressBar::Update(int64_t done, const Metrics& metrics, double examples_per_s) {
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total_ &&
      std::chrono::duration<double>(now - last_draw_).count() < min_interval_s_)
    return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = Line(done, elapsed, metrics, examples_per_s, false);
  // Pad over what a longer previous line left on the terminal.
  const size_t length = line.size();
  if (length < last_length_) line.append(last_length_ - length, ' ');
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
  last_length_ = length;
  last_draw_ = now;
  drawn_ = true;
}

void ProgressBar::Finish(int64_t done, const Metrics& metrics, double examples_per_s) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = Line(done, elapsed, metrics, examples_per_s, true);
  const size_t length = line.size();
  if (length < last_length_) line.append(last_length_ - length, ' ');
  std::fprintf(out_, "\r%s\n", line.c_str());
  std::fflush(out_);
  last_length_ = 0;
  drawn_ = false;
}

}  // namespace pf::progress
