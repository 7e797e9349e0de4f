// SummarySaverHook and StepCounterHook (train/summary_hooks.h): what reaches the event file.
#ifdef PF_WITH_PROTOBUF
#include "placeflow/train/summary_hooks.h"

#include "placeflow/io/event_file.h"
#include "placeflow/ops/summary/summary.h"
#include "tests/testing/test_util.h"

namespace pf::summary_hooks_test {
namespace {

TEST_CASE("SummarySaverHook writes every N steps at the global step; StepCounterHook its rate",
          "[monitored][summary]") {
  testing::TempDir dir("pf_summary_hooks");
  Graph g;
  Scope root = Scope::Root(&g);
  Variable step = train::GetOrCreateGlobalStep(root);
  Output p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT, {});
  summary::Scalar(root, "p", p);
  Operation bump = ops::AssignAdd(root, step.ref(), ops::Const(root, Tensor::Scalar<int64_t>(1)));
  auto writer = std::make_shared<SummaryWriter>(dir.path.string());
  train::SessionCreatorOptions co;
  co.graph = &g;
  co.log = [](const std::string&) {};
  auto counter = std::make_shared<train::StepCounterHook>(writer, 2);
  train::MonitoredSession sess(
      std::make_unique<train::ChiefSessionCreator>(co),
      {std::make_shared<train::SummarySaverHook>(writer, summary::MergeAll(root), 2), counter});
  for (int i = 1; i <= 5; ++i)
    sess.Run({{p, Tensor::Scalar<float>(10.f * static_cast<float>(i))}}, {}, {bump});
  sess.Close();
  writer->Close();
  CHECK(counter->last_rate() > 0);
  auto events = io::ReadEventFile(writer->path()).value();
  std::vector<std::pair<int64_t, double>> p_values, rates;
  bool graph = false;
  for (const io::EventRecord& e : events) {
    graph = graph || !e.graph_def.empty();
    for (const io::SummaryValue& v : e.values) {
      if (v.tag == "p") p_values.emplace_back(e.step, v.scalar);
      if (v.tag == "global_step/sec") rates.emplace_back(e.step, v.scalar);
    }
  }
  CHECK(graph);
  // Steps 1, 3 and 5 (every second, from the first), each with the value fed in that step.
  CHECK(p_values == std::vector<std::pair<int64_t, double>>{{1, 10}, {3, 30}, {5, 50}});
  // The rate over steps 0-2 and 2-4 (from the session's creation).
  REQUIRE(rates.size() == 2);
  CHECK(rates[0].first == 2);
  CHECK(rates[1].first == 4);
  CHECK(rates[1].second > 0);
}

}  // namespace
}  // namespace pf::summary_hooks_test
#endif  // PF_WITH_PROTOBUF
