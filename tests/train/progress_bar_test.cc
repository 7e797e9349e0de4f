// The Keras-style progress bar of pf-train (train/progress_bar.h): its line, its redraws, and the
// choice between a bar and plain lines. The terminal itself is tested in observability_test.cc
// (pf-train under a pseudo-terminal).
#include "placeflow/train/progress_bar.h"

#include <cstdio>
#include <string>

#include "tests/testing/test_util.h"

namespace pf::progress::progress_bar_test {
namespace {

std::string Contents(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

TEST_CASE("Progress bar line: bar, count, ETA, metrics and rate", "[progress]") {
  ProgressBar bar(stdout, 600, 10);
  // 312/600 of 10 characters: 5 filled, the last of them the arrow head.
  CHECK(bar.Line(312, 13.0, {{"loss", 0.31}}, 41000, false) ==
        "[====>.....] 312/600 - ETA 0:12 - loss 0.3100 - 41k ex/s");
  // Done: the elapsed time instead of an ETA, a full bar.
  CHECK(bar.Line(600, 75.0, {{"loss", 0.29}, {"test_accuracy", 0.875}}, 950, true) ==
        "[==========] 600/600 - 1:15 - loss 0.2900 - test_accuracy 0.8750 - 950 ex/s");
  CHECK(bar.Line(0, 0, {}, 0, false) == "[..........] 0/600");
}

TEST_CASE("Durations and rates are formatted as Keras does", "[progress]") {
  CHECK(FormatDuration(0.4) == "0:00");
  CHECK(FormatDuration(12) == "0:12");
  CHECK(FormatDuration(62) == "1:02");
  CHECK(FormatDuration(3723) == "1:02:03");
  CHECK(FormatRate(950) == "950 ex/s");
  CHECK(FormatRate(1500) == "1.5k ex/s");
  CHECK(FormatRate(41234) == "41k ex/s");
  CHECK(FormatRate(2.5e6) == "2.5M ex/s");
}

TEST_CASE("Progress bar redraws in place with \\r and ends the line once", "[progress]") {
  FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  ProgressBar bar(f, 4, 4, /*min_interval_s=*/0);
  for (int i = 1; i <= 3; ++i) bar.Update(i, {{"loss", 1.0 / i}}, 100);
  bar.Finish(4, {{"loss", 0.25}}, 100);
  const std::string s = Contents(f);
  std::fclose(f);
  CHECK(std::count(s.begin(), s.end(), '\r') == 4);
  CHECK(std::count(s.begin(), s.end(), '\n') == 1);
  CHECK(s.back() == '\n');
  CHECK(s.find("[>...] 1/4 - ETA") != std::string::npos);
  // Padded over the longer line before it, then the newline.
  CHECK(s.find("[====] 4/4 - 0:00 - loss 0.2500 - 100 ex/s    \n") != std::string::npos);
}

TEST_CASE("Progress bar throttles redraws but always draws the last step", "[progress]") {
  FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  ProgressBar bar(f, 1000, 10, /*min_interval_s=*/3600);
  for (int i = 1; i <= 1000; ++i) bar.Update(i, {}, 0);
  const std::string s = Contents(f);
  std::fclose(f);
  // The first update draws; the next ones fall inside the interval; the last draws.
  CHECK(std::count(s.begin(), s.end(), '\r') == 2);
  CHECK(s.find("1000/1000") != std::string::npos);
}

TEST_CASE("Auto progress is plain lines when the output is not a terminal", "[progress]") {
  FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  unsetenv("PF_PROGRESS");
  CHECK(Resolve(Mode::kAuto, f) == Mode::kLines);
  CHECK(Resolve(Mode::kQuiet, f) == Mode::kQuiet);
  setenv("PF_PROGRESS", "bar", 1);
  CHECK(Resolve(Mode::kAuto, f) == Mode::kBar);
  unsetenv("PF_PROGRESS");
  std::fclose(f);
}

}  // namespace
}  // namespace pf::progress::progress_bar_test
