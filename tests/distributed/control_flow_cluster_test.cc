// Control flow in cluster steps (issue 35): a cond whose branches and a while loop whose body
// run on two tasks, checked against plain C++. A dead tensor crosses tasks as a
// RecvTensor header marked is_dead; each iteration's transfer has its own key.
#include "placeflow/distributed/cluster_spec.h"
#include "placeflow/distributed/server.h"
#include "tests/distributed/cluster_util.h"
#include "tests/testing/test_util.h"

namespace pf::control_flow_cluster_test {
namespace {

using Vars = std::vector<Output>;

TEST_CASE("A cond and a while loop spanning two tasks give one process's results",
          "[distributed][control_flow]") {
  std::vector<std::string> addr;
  auto spec = ClusterSpec::Parse(testing::LoopbackCluster({{"ps", 1}, {"worker", 1}}, &addr))
                  .ValueOrThrow();
  Server ps(spec, "ps", 0), worker(spec, "worker", 0);
  Graph g;
  Scope root = Scope::Root(&g).WithDevice("/job:worker/task:0");
  Scope on_ps = root.WithDevice("/job:ps/task:0");
  Output n = ops::Placeholder(root.WithOpName("n"), DT_INT32, {});
  Output p = ops::Placeholder(root.WithOpName("p"), DT_BOOL, {});
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {4});
  // The loop's control on the worker, half its body on the ps.
  Vars loop = ops::WhileLoop(
      root, [&](const Scope& s, const Vars& v) { return ops::Less(s, v[0], n); },
      [&](const Scope& s, const Vars& v) {
        Output y =
            ops::Add(s.WithDevice("/job:ps/task:0"), ops::Mul(s, v[1], ops::Const(s, 0.5f)), x);
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), ops::Tanh(s, y)};
      },
      {ops::ConstInt(root, 0), x});
  // Each branch on its own task: one of them is dead in every run.
  Vars picked = ops::Cond(
      root, p, [&](const Scope& s) { return Vars{ops::Square(on_ps.WithOpName("sq"), x)}; },
      [&](const Scope& s) { return Vars{ops::Neg(s, x)}; });
  const Tensor xv = testing::RandomTensor({4}, 7);
  SessionOptions o;
  o.target = worker.target();
  o.cluster.connect_timeout_s = 20;
  Session cluster(g, o);
  for (int nv : {0, 1, 200}) {
    std::vector<float> want(xv.flat<float>().begin(), xv.flat<float>().end());
    for (int i = 0; i < nv; ++i)
      for (int k = 0; k < 4; ++k) want[k] = std::tanh(want[k] * 0.5f + xv.flat<float>()[k]);
    for (bool pv : {true, false}) {
      RunOptions ro;
      ro.timeout_in_ms = 60000;
      std::vector<Tensor> r;
      Status s =
          cluster.TryRun({{n, Tensor::Scalar<int32_t>(nv)}, {p, Tensor::Scalar<bool>(pv)}, {x, xv}},
                         {loop[0], loop[1], picked[0]}, {}, &r, ro);
      INFO(s.ToString());
      REQUIRE(s.ok());
      CHECK(r[0].scalar<int32_t>() == nv);
      for (int k = 0; k < 4; ++k) {
        CHECK(r[1].flat<float>()[k] == Approx(want[k]).margin(1e-6));
        const float v = xv.flat<float>()[k];
        CHECK(r[2].flat<float>()[k] == (pv ? v * v : -v));
      }
    }
  }
}

}  // namespace
}  // namespace pf::control_flow_cluster_test
