// Long chains under the default stack: nothing in gradients, pruning, placement, partitioning
// or the executor may recurse once per node or per cross-device hop.
#include "tests/testing/test_util.h"

namespace pf::deep_graph_test {
namespace {

TEST_CASE("A 10,000-hop cross-device chain runs without recursing per hop", "[executor][deep]") {
  // Each Identity sits on the other CPU from its input: 10,000 _Send/_Recv pairs, each _Recv
  // finishing on the stack of the _Send before it.
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2});
  Output y = x;
  const int hops = 10000;
  for (int i = 0; i < hops; ++i) {
    y = ops::Identity(root.WithDevice(i % 2 ? "/cpu:0" : "/cpu:1"), y);
  }
  SessionOptions o;
  o.device_count["CPU"] = 2;
  Session sess(g, o);
  Tensor in = testing::FromDoubles(DT_FLOAT, {2}, {1.5, -2});
  for (int step = 0; step < 2; ++step) {
    Tensor out = sess.Run({{x, in}}, {y})[0];
    CHECK(out.BitwiseEqual(in));
  }
}

TEST_CASE("A 1,000,000-node chain goes through gradients, pruning, placement and the executor",
          "[executor][deep]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable w = GetVariable(root, "w", {2}, [](const Scope& s, const Shape&, DType) {
    return ops::Const(s, testing::FromDoubles(DT_FLOAT, {2}, {1, 2}));
  });
  Output y = w.value();
  const int n = 1000000;
  for (int i = 0; i < n; ++i) y = ops::Identity(root, y);
  Output loss = ops::Sum(root, ops::Mul(root, y, y));
  std::vector<Output> grads = Gradients(root, {loss}, {w.value()});
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  std::vector<Tensor> out = sess.Run({loss, grads[0], y});
  CHECK(out[0].scalar<float>() == 5.f);   // 1 + 4
  CHECK(out[1].data<float>()[0] == 2.f);  // d(w.w)/dw = 2w
  CHECK(out[1].data<float>()[1] == 4.f);
  CHECK(out[2].data<float>()[1] == 2.f);
}

}  // namespace
}  // namespace pf::deep_graph_test
