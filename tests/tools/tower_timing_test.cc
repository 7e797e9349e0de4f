// pf-train --towers-table's shares (tools/tower_timing.h): parts of the step's wall time.
#include "tools/tower_timing.h"

#include <regex>
#include <sstream>

#include "tests/testing/test_util.h"
#include "tools/train_app.h"

namespace pf::tower_timing_test {
namespace {

NodeExecStats Stat(std::string node, std::string op, int64_t start, int64_t end) {
  NodeExecStats s;
  s.node = std::move(node);
  s.op = std::move(op);
  s.start_us = start;
  s.end_us = end;
  return s;
}

TEST_CASE("Tower shares count overlapping transfers once and never exceed the step",
          "[tools][towers]") {
  RunMetadata md;
  md.step_us = 1000;
  // Three transfers in flight over [100, 700], [200, 900] and [950, 1200] (past the step's end):
  // summed they are 1150 us (115%); their union within the step is 800 + 50 = 850 us.
  md.step_stats = {
      Stat("a/_send_to_cpu1", "_Send", 100, 110),  Stat("a/_recv_on_cpu1", "_Recv", 50, 700),
      Stat("b/_send_to_cpu1", "_Send", 200, 210),  Stat("b/_recv_on_cpu1", "_Recv", 200, 900),
      Stat("c/_recv_on_cpu1", "_Recv", 950, 1200), Stat("mean0", "WeightedMean", 300, 500),
      Stat("mean1", "WeightedMean", 400, 600)};
  double transfer_ms = 0, aggregation_ms = 0;
  int transfers = 0;
  towers::StepShares(md, &transfer_ms, &aggregation_ms, &transfers);
  CHECK(transfers == 3);
  CHECK(transfer_ms == Approx(0.85));
  CHECK(aggregation_ms == Approx(0.3));  // [300, 600]
  // Everything overlapping everything: still at most the whole step.
  md.step_stats.clear();
  for (int i = 0; i < 10; ++i) md.step_stats.push_back(Stat("r", "_Recv", -5, 2000));
  towers::StepShares(md, &transfer_ms, &aggregation_ms, &transfers);
  CHECK(transfer_ms == Approx(1.0));
}

TEST_CASE("pf-train --towers-table prints shares of the step's wall time, at most 100%",
          "[cli][towers]") {
  const std::string out = testing::CaptureStdout([] {
    const char* argv[] = {"pf-train", "--towers-table", "1,2,4", "--steps", "3", "--batch", "64"};
    CHECK(app::Main(7, const_cast<char**>(argv)) == 0);
  });
  INFO(out);
  // Each table row ends with the two shares: "... 12.3%     4.5%".
  std::regex row(R"(^\d+ .* ([0-9.]+)% +([0-9.]+)%$)");
  int rows = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    ++rows;
    CHECK(std::stod(m[1]) <= 100.0);
    CHECK(std::stod(m[2]) <= 100.0);
  }
  CHECK(rows == 3);
  CHECK_THAT(out, Catch::Contains("share of one traced step's wall time"));
}

}  // namespace
}  // namespace pf::tower_timing_test
