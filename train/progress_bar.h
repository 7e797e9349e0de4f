// Keras-style progress for pf-train: on a terminal one line per epoch, redrawn in place with \r,
//   [=====>........................] 312/600 - ETA 0:12 - loss 0.3100 - 41k ex/s
// and finished with the epoch's totals and newline; elsewhere (a pipe, a CI log) nothing is
// redrawn: the trainer prints plain periodic lines instead (see Mode).
//
//   pf::progress::ProgressBar bar(stdout, /*total=*/600);
//   bar.Update(312, {{"loss", 0.31}}, /*examples_per_s=*/41000);
//   bar.Finish(600, {{"loss", 0.29}, {"test_accuracy", 0.87}}, 42000);
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace pf::progress {

enum class Mode {
  kAuto,   // kBar when the output is a terminal, else kLines
  kBar,    // redrawn in place
  kLines,  // plain periodic lines (CI logs, pipes)
  kQuiet,  // no per-step progress (epoch summaries and errors still print)
};

// Whether `out` is a terminal (isatty); PF_PROGRESS=bar|lines|quiet overrides kAuto.
Mode Resolve(Mode requested, FILE* out);

using Metrics = std::vector<std::pair<std::string, double>>;

// "0:12", "1:02:03".
std::string FormatDuration(double seconds);
// "950 ex/s", "41k ex/s", "1.2M ex/s".
std::string FormatRate(double per_second);

class ProgressBar {
 public:
  // `total` steps; `width` characters between the brackets. Redraws are at most every
  // `min_interval_s` (the last step always draws).
  ProgressBar(FILE* out, int64_t total, int width = 30, double min_interval_s = 0.1);
  // After `done` of `total` steps.
  void Update(int64_t done, const Metrics& metrics, double examples_per_s);
  // The final draw of the line: elapsed time instead of the ETA, then a newline.
  void Finish(int64_t done, const Metrics& metrics, double examples_per_s);
  // The text of the line (without \r), for tests and for Update.
  std::string Line(int64_t done, double elapsed_s, const Metrics& metrics, double examples_per_s,
                   bool finished) const;

 private:
  FILE* out_;
  int64_t total_;
  int width_;
  double min_interval_s_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
  size_t last_length_ = 0;
};

}  // namespace pf::progress
