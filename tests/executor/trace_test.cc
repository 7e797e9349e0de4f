// Step traces: the session's own phases around the executors (RunMetadata::session_phases).
#include "tests/testing/test_util.h"

namespace pf::trace_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("A traced step shows the session's phases around the executors", "[session][trace]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, Shape({2, 2}));
  Output y = ops::MatMul(root.WithOpName("y").WithDevice("/cpu:1"), x, x);
  Output z = ops::Add(root.WithOpName("z"), y, x);
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sess(g, opts);
  Tensor v(DT_FLOAT, {2, 2});
  for (int i = 0; i < 4; ++i) v.data<float>()[i] = static_cast<float>(i + 1);
  RunOptions ro;
  ro.trace = true;
  RunMetadata md;
  std::vector<Tensor> out = sess.Run(ro, {{x, v}}, {z}, {}, &md);
  // [[1,2],[3,4]]^2 + x = [[8,12],[18,26]]: the traced step computes what an untraced one does.
  REQUIRE(out.size() == 1);
  CHECK(out[0].data<float>()[0] == 8.f);
  CHECK(out[0].data<float>()[3] == 26.f);

  // In order, back to back from the step's start, on the "session" track.
  const char* phases[] = {"stage feeds", "run executors", "wait for devices", "copy fetches"};
  REQUIRE(md.session_phases.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    const NodeExecStats& p = md.session_phases[i];
    CHECK(p.node == phases[i]);
    CHECK(p.op == "_SessionPhase");
    CHECK(p.device == "session");
    CHECK(p.end_us >= p.start_us);
    CHECK(p.start_us == (i == 0 ? 0 : md.session_phases[i - 1].end_us));
  }
  // The executors' phase ends after every node did.
  int64_t last_node_end = 0;
  for (const NodeExecStats& n : md.step_stats) last_node_end = std::max(last_node_end, n.end_us);
  CHECK(md.step_stats.size() >= 3);
  CHECK(md.session_phases[1].end_us >= last_node_end);
  // One more process in the Chrome trace, after the devices (sorted by name).
  const std::string json = ChromeTraceJson(md);
  CHECK_THAT(json, Contains("\"name\": \"process_name\", \"pid\": 2, \"args\": {\"name\": "
                            "\"session\"}"));
  CHECK_THAT(json, Contains("\"name\": \"wait for devices\", \"cat\": \"_SessionPhase\""));

  // A step run again without tracing records nothing, and a traced one starts afresh.
  RunMetadata none;
  sess.Run(RunOptions{}, {{x, v}}, {z}, {}, &none);
  CHECK(none.session_phases.empty());
  sess.Run(ro, {{x, v}}, {z}, {}, &md);
  CHECK(md.session_phases.size() == 4);
}

}  // namespace
}  // namespace pf::trace_test
