// While loops whose nodes are on several devices (issue 35): the partitioner gives each device
// its own control loop driven by the predicate it receives (placer/partition.cc), and each
// iteration's transfers have keys of their own (executor/executor_state.h). Each loop is
// checked against a plain C++ loop, and against the same graph on one device.
#include "tests/testing/test_util.h"

namespace pf::control_flow_devices_test {
namespace {

using Catch::Matchers::Contains;
using Vars = std::vector<Output>;

SessionOptions TwoCpus() {
  SessionOptions o;
  o.device_count["CPU"] = 2;
  return o;
}

// A hang would be a bug: fail instead.
std::vector<Tensor> RunWithin(Session& sess, const FeedDict& feeds, const Vars& fetches) {
  RunOptions ro;
  ro.timeout_in_ms = 20000;
  std::vector<Tensor> r;
  Status s = sess.TryRun(feeds, fetches, {}, &r, ro);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return r;
}

Output LessThan(const Scope& s, Output v, int32_t n) {
  return ops::Less(s, v, ops::ConstInt(s, n));
}

TEST_CASE("A loop whose body is on another device counts as on one device",
          "[control_flow][devices]") {
  for (int parallel : {1, 10}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output n = ops::Placeholder(root.WithOpName("n"), DT_INT32, {});
    ops::WhileOptions opts;
    opts.parallel_iterations = parallel;
    // i counts on /cpu:0 (with the loop's control nodes), acc grows on /cpu:1.
    Vars out = ops::WhileLoop(
        root, [&](const Scope& s, const Vars& v) { return ops::Less(s, v[0], n); },
        [](const Scope& s, const Vars& v) {
          Scope one = s.WithDevice("/cpu:1");
          Output acc =
              ops::Add(one.WithOpName("acc"), v[1], ops::Mul(one, v[0], ops::ConstInt(one, 3)));
          return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), acc};
        },
        {ops::ConstInt(root, 0), ops::ConstInt(root, 7)}, opts);
    Session sess(g, TwoCpus());
    // 10,000 iterations, then 50 in the next step (whose transfers have keys of their own).
    for (int iterations : {10000, 50}) {
      int64_t acc = 7;
      for (int i = 0; i < iterations; ++i) acc += 3 * i;
      auto r = RunWithin(sess, {{n, Tensor::Scalar<int32_t>(iterations)}}, out);
      CHECK(r[0].scalar<int32_t>() == iterations);
      CHECK(r[1].scalar<int32_t>() == static_cast<int32_t>(acc));
    }
    // Five iterations, traced: /cpu:1 runs its control loop six times (the predicate's last,
    // false value included), the body five.
    RunOptions ro;
    ro.trace = true;
    RunMetadata md;
    sess.Run(ro, {{n, Tensor::Scalar<int32_t>(5)}}, out, {}, &md);
    std::map<std::pair<std::string, std::string>, int> runs;  // (device, op) -> count
    for (const NodeExecStats& st : md.step_stats)
      ++runs[{st.device.substr(st.device.size() - 5), st.node == "while/acc" ? "acc" : st.op}];
    CHECK(runs[{"CPU:1", "acc"}] == 5);
    CHECK(runs[{"CPU:1", "Merge"}] == 6);
    CHECK(runs[{"CPU:0", "LoopCond"}] == 6);
    CHECK(runs[{"CPU:1", "_Recv"}] >= 6);
  }
}

TEST_CASE("A loop's predicate computed on another device, a constant sent every iteration",
          "[control_flow][devices]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {3});
  Output scale = ops::Mul(root.WithDevice("/cpu:1"), x, ops::Const(root, 0.5f));  // captured
  // The condition runs on /cpu:1; the body's first half on /cpu:1, its second on /cpu:0.
  Vars out = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return LessThan(s.WithDevice("/cpu:1"), v[0], 5); },
      [&](const Scope& s, const Vars& v) {
        Output y = ops::Add(s.WithDevice("/cpu:1"), v[1], scale);
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), ops::Mul(s, y, ops::Const(s, 2.f))};
      },
      {ops::ConstInt(root, 0), ops::Const(root, Tensor::FromVector<float>({0, 1, -1}, {3}))});
  Session sess(g, TwoCpus());
  const std::vector<float> xv = {2, 4, -6};
  auto r = RunWithin(sess, {{x, Tensor::FromVector<float>(xv, {3})}}, {out[1]});
  std::vector<float> y = {0, 1, -1};
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 3; ++k) y[k] = (y[k] + 0.5f * xv[k]) * 2.f;
  for (int k = 0; k < 3; ++k) CHECK(r[0].flat<float>()[k] == y[k]);
}

TEST_CASE("Nested loops spanning devices, and a loop spanning devices inside a cond",
          "[control_flow][devices]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output n = ops::Placeholder(root.WithOpName("n"), DT_INT32, {});
  Output p = ops::Placeholder(root.WithOpName("p"), DT_BOOL, {});
  // total = sum over i < n, j < i of (i * j), the inner sum on /cpu:1.
  auto nested = [&](const Scope& s) {
    return ops::WhileLoop(
        s, [&](const Scope& c, const Vars& v) { return ops::Less(c, v[0], n); },
        [&](const Scope& b, const Vars& v) {
          Output i = v[0];
          Vars inner = ops::WhileLoop(
              b.WithOpName("inner"),
              [&](const Scope& c, const Vars& w) { return ops::Less(c, w[0], i); },
              [&](const Scope& ib, const Vars& w) {
                Scope one = ib.WithDevice("/cpu:1");
                return Vars{ops::Add(ib, w[0], ops::ConstInt(ib, 1)),
                            ops::Add(one, w[1], ops::Mul(one, i, w[0]))};
              },
              {ops::ConstInt(b, 0), v[1]});
          return Vars{ops::Add(b, i, ops::ConstInt(b, 1)), inner[1]};
        },
        {ops::ConstInt(s, 0), ops::ConstInt(s, 0)});
  };
  Vars total = nested(root.WithOpName("outer"));
  Vars chosen = ops::Cond(
      root.WithOpName("pick"), p,
      [&](const Scope& s) { return Vars{nested(s.WithOpName("loop"))[1]}; },
      [&](const Scope& s) { return Vars{ops::ConstInt(s, -1)}; });
  Session sess(g, TwoCpus());
  for (int nv : {0, 1, 7, 30}) {
    int32_t want = 0;
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j < i; ++j) want += i * j;
    for (bool pv : {true, false}) {
      auto r = RunWithin(sess, {{n, Tensor::Scalar<int32_t>(nv)}, {p, Tensor::Scalar<bool>(pv)}},
                         {total[1], chosen[0]});
      CHECK(r[0].scalar<int32_t>() == want);
      CHECK(r[1].scalar<int32_t>() == (pv ? want : -1));
    }
  }
}

TEST_CASE("A loop spanning devices: its gradient matches finite differences and one device's",
          "[control_flow][devices][gradients]") {
  auto build = [](Graph* g, bool split, Output* x, Output* y) {
    Scope root = Scope::Root(g);
    *x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {3});
    Output w = ops::Const(root, Tensor::FromVector<double>({0.5, -0.25, 0.75}, {3}));
    Vars out = ops::WhileLoop(
        root, [](const Scope& s, const Vars& v) { return LessThan(s, v[0], 4); },
        [&](const Scope& s, const Vars& v) {
          Scope other = split ? s.WithDevice("/cpu:1") : s;
          Output h = ops::Tanh(other, ops::Add(other, ops::Mul(other, v[1], w), *x));
          return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), ops::Mul(s, h, v[1])};
        },
        {ops::ConstInt(root, 0), *x});
    *y = out[1];
    return root;
  };
  for (bool split : {false, true}) {
    Graph g;
    Output x, y;
    Scope root = build(&g, split, &x, &y);
    SessionOptions opts = TwoCpus();
    const double err = ComputeGradientError(root, x, {3}, y, {3}, nullptr, 0, opts);
    INFO("split " << split);
    CHECK(err < 1e-8);
  }
}

TEST_CASE("A loop variable's Enter on another device than its Merge is Unimplemented",
          "[control_flow][devices][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Vars out = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return LessThan(s, v[0], 3); },
      [](const Scope& s, const Vars& v) { return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1))}; },
      {ops::ConstInt(root, 0)});
  g.FindNode("while/Enter")->set_requested_device("/cpu:1");
  Session sess(g, TwoCpus());
  RunOptions ro;
  ro.timeout_in_ms = 20000;
  std::vector<Tensor> r;
  Status s = sess.TryRun({}, out, {}, &r, ro);
  CHECK(s.code() == Code::kUnimplemented);
  CHECK_THAT(s.message(), Contains("Enter node 'while/Enter'") && Contains("Merge's device"));
}

}  // namespace
}  // namespace pf::control_flow_devices_test
