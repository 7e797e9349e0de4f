// Dynamic control flow (issue 35): cond and while_loop built from Switch, Merge, Enter, Exit,
// NextIteration and LoopCond, run by the executor's frames (executor/frames.h). TensorFlow's own
// scenarios (control_flow_ops_test.py), checked against plain C++ loops.
#include "tests/testing/test_util.h"

namespace pf::control_flow_test {
namespace {

using Catch::Matchers::Contains;
using Vars = std::vector<Output>;

Tensor Int(int32_t v) { return Tensor::Scalar<int32_t>(v); }
Tensor Bool(bool v) { return Tensor::Scalar<bool>(v); }

TEST_CASE("Cond runs the taken branch and returns its values", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL, {});
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2});
  Vars y = ops::Cond(
      root, pred, [&](const Scope& s) { return Vars{ops::Mul(s, x, ops::Const(s, 2.f))}; },
      [&](const Scope& s) { return Vars{ops::Neg(s, x)}; });
  REQUIRE(y.size() == 1);
  CHECK(y[0].shape() == Shape{2});
  Session sess(g);
  const Tensor xv = Tensor::FromVector<float>({1.5f, -4.f}, {2});
  CHECK(sess.Run({{pred, Bool(true)}, {x, xv}}, {y[0]})[0].DebugString() ==
        "Tensor<float [2]> [3, -8]");
  CHECK(sess.Run({{pred, Bool(false)}, {x, xv}}, {y[0]})[0].DebugString() ==
        "Tensor<float [2]> [-1.5, 4]");
}

TEST_CASE("Cond: side effects happen only in the taken branch", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL, {});
  Variable a = GetVariable(root, "a", {},
                           [](const Scope& s, const Shape&, DType) { return ops::Const(s, 0.f); });
  Variable b = GetVariable(root, "b", {},
                           [](const Scope& s, const Shape&, DType) { return ops::Const(s, 0.f); });
  // The constants have no input: the branch's pivot keeps them (and the updates) in the branch.
  Vars r = ops::Cond(
      root, pred,
      [&](const Scope& s) { return Vars{ops::AssignAdd(s, a.ref(), ops::Const(s, 1.f))}; },
      [&](const Scope& s) { return Vars{ops::AssignAdd(s, b.ref(), ops::Const(s, 10.f))}; });
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  for (bool p : {true, true, false, true}) sess.Run({{pred, Bool(p)}}, {r[0]});
  auto ab = sess.Run({a.value(), b.value()});
  CHECK(ab[0].scalar<float>() == 3.f);
  CHECK(ab[1].scalar<float>() == 10.f);
}

TEST_CASE("Nested conds pick one of four values", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output p = ops::Placeholder(root.WithOpName("p"), DT_BOOL, {});
  Output q = ops::Placeholder(root.WithOpName("q"), DT_BOOL, {});
  auto leaf = [](float v) { return [v](const Scope& s) { return Vars{ops::Const(s, v)}; }; };
  Vars y = ops::Cond(
      root, p, [&](const Scope& s) { return ops::Cond(s, q, leaf(1), leaf(2)); },
      [&](const Scope& s) { return ops::Cond(s, q, leaf(3), leaf(4)); });
  Session sess(g);
  for (int i = 0; i < 4; ++i) {
    const bool pv = i < 2, qv = i % 2 == 0;
    CHECK(sess.Run({{p, Bool(pv)}, {q, Bool(qv)}}, {y[0]})[0].scalar<float>() == i + 1.f);
  }
}

TEST_CASE("A cond across two devices sends the untaken side as dead", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL, {});
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {});
  Variable hits =
      GetVariable(root.WithDevice("/cpu:1"), "hits", {},
                  [](const Scope& s, const Shape&, DType) { return ops::Const(s, 0.f); });
  // The true branch computes on /cpu:1 and counts its runs there; the Merge is on /cpu:0.
  Vars y = ops::Cond(
      root, pred,
      [&](const Scope& s) {
        const Scope on1 = s.WithDevice("/cpu:1");
        Output counted = ops::AssignAdd(on1, hits.ref(), ops::Const(on1, 1.f));
        return Vars{ops::Add(on1, ops::Mul(on1, x, x), ops::Sub(on1, counted, counted))};
      },
      [&](const Scope& s) { return Vars{ops::Neg(s.WithDevice("/cpu:1"), x)}; });
  SessionOptions two;
  two.device_count["CPU"] = 2;
  Session sess(g, two);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK(sess.Run({{pred, Bool(true)}, {x, Tensor::Scalar<float>(3)}}, {y[0]})[0].scalar<float>() ==
        9.f);
  CHECK(sess.Run({{pred, Bool(false)}, {x, Tensor::Scalar<float>(3)}}, {y[0]})[0].scalar<float>() ==
        -3.f);
  CHECK(sess.Run({hits.value()})[0].scalar<float>() == 1.f);
}

TEST_CASE("Cond errors: dtypes that differ, a predicate that is not a bool scalar",
          "[control_flow][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL, {});
  CHECK_THROWS_WITH(
      ops::Cond(
          root, pred, [](const Scope& s) { return Vars{ops::Const(s, 1.f)}; },
          [](const Scope& s) { return Vars{ops::ConstInt(s, 1)}; }),
      Contains("is float in the true branch") && Contains("int32 in the false branch"));
  CHECK_THROWS_WITH(
      ops::Cond(
          root, ops::Const(root, 1.f), [](const Scope& s) { return Vars{ops::Const(s, 1.f)}; },
          [](const Scope& s) { return Vars{ops::Const(s, 2.f)}; }),
      Contains("must be a bool scalar"));
}

// sum = 0; for i in range(n): sum += i.
struct SumLoop {
  Graph g;
  Scope root = Scope::Root(&g);
  Output n = ops::Placeholder(root.WithOpName("n"), DT_INT32, {});
  Vars out;
  explicit SumLoop(int parallel_iterations) {
    ops::WhileOptions o;
    o.parallel_iterations = parallel_iterations;
    out = ops::WhileLoop(
        root, [&](const Scope& s, const Vars& v) { return ops::Less(s, v[0], n); },
        [&](const Scope& s, const Vars& v) {
          return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), ops::Add(s, v[1], v[0])};
        },
        {ops::ConstInt(root, 0), ops::ConstInt(root, 0)}, o);
  }
};

TEST_CASE("WhileLoop sums 0..n-1 with 1 and 10 parallel iterations", "[control_flow]") {
  for (int p : {1, 10}) {
    SumLoop loop(p);
    Session sess(loop.g);
    for (int n : {0, 1, 7, 1000}) {
      auto r = sess.Run({{loop.n, Int(n)}}, loop.out);
      CHECK(r[0].scalar<int32_t>() == n);
      CHECK(r[1].scalar<int32_t>() == n * (n - 1) / 2);
    }
  }
}

TEST_CASE("WhileLoop: the same float result with 1 and 10 parallel iterations", "[control_flow]") {
  // x <- tanh(W x + b) for 30 iterations, W and b from outside (constant Enters).
  auto run = [](int p) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output w = ops::Const(root, testing::RandomTensor({16, 16}, 1, -0.5f, 0.5f));
    Output b = ops::Const(root, testing::RandomTensor({1, 16}, 2));
    ops::WhileOptions o;
    o.parallel_iterations = p;
    Vars out = ops::WhileLoop(
        root,
        [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 30)); },
        [&](const Scope& s, const Vars& v) {
          return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)),
                      ops::Tanh(s, ops::Add(s, ops::MatMul(s, v[1], w), b))};
        },
        {ops::ConstInt(root, 0), ops::Const(root, testing::RandomTensor({1, 16}, 3))}, o);
    return testing::RunOne(g, out[1]);
  };
  const Tensor one = run(1), ten = run(10);
  CHECK(testing::MaxAbsDiff(one, ten) == 0.0);
  // The reference: the same 30 steps as plain loops.
  const Tensor w = testing::RandomTensor({16, 16}, 1, -0.5f, 0.5f);
  const Tensor b = testing::RandomTensor({1, 16}, 2);
  std::vector<double> x(16);
  const Tensor x0 = testing::RandomTensor({1, 16}, 3);
  for (int j = 0; j < 16; ++j) x[j] = x0.data<float>()[j];
  for (int it = 0; it < 30; ++it) {
    std::vector<double> y(16);
    for (int j = 0; j < 16; ++j) {
      double acc = b.data<float>()[j];
      for (int k = 0; k < 16; ++k) acc += x[k] * w.data<float>()[k * 16 + j];
      y[j] = std::tanh(acc);
    }
    x = y;
  }
  for (int j = 0; j < 16; ++j) CHECK(one.data<float>()[j] == Approx(x[j]).margin(1e-5));
}

TEST_CASE("WhileLoop: a shape that grows needs a shape invariant", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  auto cond = [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 4)); };
  auto body = [](const Scope& s, const Vars& v) {
    return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)),
                ops::Concat(s, {v[1], ops::Reshape(s, v[0], {1})}, 0)};
  };
  const Vars start = {ops::ConstInt(root, 0), ops::ConstInt(root, std::vector<int32_t>{7})};
  CHECK_THROWS_WITH(ops::WhileLoop(root, cond, body, start),
                    Contains("enters the loop") && Contains("with shape [1], but has shape [2]") &&
                        Contains("shape_invariants"));
  ops::WhileOptions o;
  o.shape_invariants = {Shape{}, Shape{-1}};
  Vars out = ops::WhileLoop(root, cond, body, start, o);
  CHECK(out[1].shape() == Shape{-1});
  CHECK(testing::RunOne(g, out[1]).DebugString() == "Tensor<int32 [5]> [7, 0, 1, 2, 3]");
}

TEST_CASE("Nested while loops and a cond inside a loop", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  // count = 0; for i in range(3): for j in range(i + 2): count += i * j
  Vars outer = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 3)); },
      [](const Scope& s, const Vars& v) {
        Output i = v[0];
        Vars inner = ops::WhileLoop(
            s,
            [&](const Scope& s2, const Vars& w) {
              return ops::Less(s2, w[0], ops::Add(s2, i, ops::ConstInt(s2, 2)));
            },
            [&](const Scope& s2, const Vars& w) {
              return Vars{ops::Add(s2, w[0], ops::ConstInt(s2, 1)),
                          ops::Add(s2, w[1], ops::Mul(s2, i, w[0]))};
            },
            {ops::ConstInt(s, 0), v[1]});
        return Vars{ops::Add(s, i, ops::ConstInt(s, 1)), inner[1]};
      },
      {ops::ConstInt(root, 0), ops::ConstInt(root, 0)});
  int count = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < i + 2; ++j) count += i * j;
  CHECK(testing::RunOne(g, outer[1]).scalar<int32_t>() == count);

  // x = 1; for i in range(10): x = x + 3 if i is even else x * 2
  Vars loop = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 10)); },
      [](const Scope& s, const Vars& v) {
        Output even = ops::Equal(
            s,
            ops::Sub(s, v[0],
                     ops::Mul(s, ops::Div(s, v[0], ops::ConstInt(s, 2)), ops::ConstInt(s, 2))),
            ops::ConstInt(s, 0));
        Vars x = ops::Cond(
            s, even, [&](const Scope& b) { return Vars{ops::Add(b, v[1], ops::ConstInt(b, 3))}; },
            [&](const Scope& b) { return Vars{ops::Mul(b, v[1], ops::ConstInt(b, 2))}; });
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), x[0]};
      },
      {ops::ConstInt(root, 0), ops::ConstInt(root, 1)});
  int x = 1;
  for (int i = 0; i < 10; ++i) x = i % 2 == 0 ? x + 3 : x * 2;
  CHECK(testing::RunOne(g, loop[1]).scalar<int32_t>() == x);
}

TEST_CASE("A loop whose body returns an outside value, or holds a cond with a control input",
          "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output w = ops::Const(root, 5.f);
  // {i + 1, w}: the outside w comes back every iteration; the loop must still stop.
  Vars a = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 3)); },
      [&](const Scope& s, const Vars& v) {
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), w};
      },
      {ops::ConstInt(root, 0), ops::Const(root, 0.f)});
  // A cond made under a control dependency, in every iteration (its Merge has a control input).
  Vars b = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 6)); },
      [](const Scope& s, const Vars& v) {
        Output i = ops::Add(s, v[0], ops::ConstInt(s, 1));
        Output odd = ops::Equal(
            s,
            ops::Sub(s, i, ops::Mul(s, ops::Div(s, i, ops::ConstInt(s, 2)), ops::ConstInt(s, 2))),
            ops::ConstInt(s, 1));
        Vars x = ops::Cond(
            s.WithControlDependencies({Operation(i.node)}), odd,
            [&](const Scope& t) { return Vars{ops::Add(t, v[1], i)}; },
            [&](const Scope& f) { return Vars{ops::Sub(f, v[1], i)}; });
        return Vars{i, x[0]};
      },
      {ops::ConstInt(root, 0), ops::ConstInt(root, 0)});
  Session sess(g);
  RunOptions ro;
  ro.timeout_in_ms = 20000;
  std::vector<Tensor> out;
  REQUIRE(sess.TryRun({}, {a[0], a[1], b[1]}, {}, &out, ro).ok());
  CHECK(out[0].scalar<int32_t>() == 3);
  CHECK(out[1].scalar<float>() == 5.f);
  CHECK(out[2].scalar<int32_t>() == 1 - 2 + 3 - 4 + 5 - 6);
}

TEST_CASE("A while loop inside the untaken branch of a cond does not run", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output pred = ops::Placeholder(root.WithOpName("pred"), DT_BOOL, {});
  Variable runs = GetVariable(
      root, "runs", {}, [](const Scope& s, const Shape&, DType) { return ops::Const(s, 0.f); });
  Vars y = ops::Cond(
      root, pred,
      [&](const Scope& s) {
        return Vars{ops::WhileLoop(
            s, [](const Scope& c, const Vars& v) { return ops::Less(c, v[0], ops::Const(c, 5.f)); },
            [&](const Scope& b, const Vars& v) {
              Output counted = ops::AssignAdd(b, runs.ref(), ops::Const(b, 1.f));
              return Vars{ops::Add(b, v[0], ops::Div(b, counted, counted))};
            },
            {ops::Const(s, 0.f)})[0]};
      },
      [](const Scope& s) { return Vars{ops::Const(s, -1.f)}; });
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK(sess.Run({{pred, Bool(false)}}, {y[0]})[0].scalar<float>() == -1.f);
  CHECK(sess.Run({runs.value()})[0].scalar<float>() == 0.f);
  CHECK(sess.Run({{pred, Bool(true)}}, {y[0]})[0].scalar<float>() == 5.f);
  CHECK(sess.Run({runs.value()})[0].scalar<float>() == 5.f);
}

TEST_CASE("WhileLoop's maximum_iterations stops a loop whose condition stays true",
          "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  ops::WhileOptions o;
  o.maximum_iterations = ops::ConstInt(root, 7);
  Vars out = ops::WhileLoop(
      root, [](const Scope& s, const Vars&) { return ops::Const(s, Tensor::Scalar<bool>(true)); },
      [](const Scope& s, const Vars& v) { return Vars{ops::Mul(s, v[0], ops::ConstInt(s, 2))}; },
      {ops::ConstInt(root, 1)}, o);
  CHECK(testing::RunOne(g, out[0]).scalar<int32_t>() == 128);
}

TEST_CASE("A loop of a million iterations runs in constant stack and memory",
          "[control_flow][deep]") {
  SumLoop loop(10);
  Session sess(loop.g);
  const int n = 1000000;
  auto r = sess.Run({{loop.n, Int(n)}}, {loop.out[0]});
  CHECK(r[0].scalar<int32_t>() == n);
}

TEST_CASE("A loop that never ends is stopped by the step's timeout, naming the loop",
          "[control_flow][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Vars out = ops::WhileLoop(
      root.WithOpName("forever"),
      [](const Scope& s, const Vars&) { return ops::Const(s, Tensor::Scalar<bool>(true)); },
      [](const Scope& s, const Vars& v) { return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1))}; },
      {ops::ConstInt(root, 0)});
  Session sess(g);
  RunOptions ro;
  ro.timeout_in_ms = 300;
  std::vector<Tensor> r;
  Status s = sess.TryRun({}, out, {}, &r, ro);
  CHECK(s.code() == Code::kDeadlineExceeded);
  CHECK_THAT(s.message(), Contains("waiting: while loop 'forever' (iteration "));
}

TEST_CASE("Loop errors: a tensor of a loop fetched", "[control_flow][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output inside;
  Vars out = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 3)); },
      [&](const Scope& s, const Vars& v) {
        inside = ops::Add(s.WithOpName("step"), v[0], ops::ConstInt(s, 1));
        return Vars{inside};
      },
      {ops::ConstInt(root, 0)});
  Session sess(g);
  std::vector<Tensor> r;
  Status s = sess.TryRun({}, {inside}, {}, &r);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("Cannot fetch 'while/step:0'") && Contains("in while loop"));
  CHECK(sess.Run({out[0]})[0].scalar<int32_t>() == 3);
}

TEST_CASE("Gradients through a cond match finite differences", "[control_flow][gradients]") {
  for (bool taken : {true, false}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {3});
    Output pred = ops::Const(root, Tensor::Scalar<bool>(taken));
    Vars y = ops::Cond(
        root, pred, [&](const Scope& s) { return Vars{ops::Mul(s, x, ops::Tanh(s, x))}; },
        [&](const Scope& s) { return Vars{ops::Exp(s, x)}; });
    const double err = ComputeGradientError(root, x, {3}, y[0], {3});
    CHECK(err < 1e-8);
  }
}

TEST_CASE("InplaceUpdate replaces one row, never a buffer someone else sees",
          "[control_flow][gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  Output y = ops::InplaceUpdate(root, x, ops::ConstInt(root, 1), ops::Const(root, {9.f, 8.f}, {2}));
  auto out = testing::RunOne(g, y);
  CHECK(out.DebugString() == "Tensor<float [3,2]> [[1, 2], [9, 8], [5, 6]]");
  // The Const keeps its value: the update went into a copy.
  CHECK(testing::RunOne(g, x).DebugString() == "Tensor<float [3,2]> [[1, 2], [3, 4], [5, 6]]");
  CHECK_THROWS_WITH(testing::RunOne(g, ops::InplaceUpdate(root, x, ops::ConstInt(root, 3),
                                                          ops::Const(root, {9.f, 8.f}, {2}))),
                    Contains("row 3 of 3 rows"));
  // A value whose shape is known only at run time, and is not a row's: an error, no write
  // (the executor checks run-time shapes with the shape function).
  Output vq = ops::Placeholder(root.WithOpName("vq"), DT_FLOAT, pf::Shape::Unknown());
  Output bad = ops::InplaceUpdate(root.WithOpName("bad_row"), x, ops::ConstInt(root, 0), vq);
  Session session(g);
  std::vector<Tensor> none;
  const Status st =
      session.TryRun({{vq, Tensor::FromVector<float>({1, 2, 3}, {3})}}, {bad}, {}, &none);
  CHECK_THAT(st.ToString(), Contains("a row of [3,2] is [2], the value is [3]") &&
                                Contains("{{node bad_row}} = InplaceUpdate"));
  // Gradients with respect to both: the rest of x, and the row v.
  Output xp = ops::Placeholder(root.WithOpName("xp"), DT_DOUBLE, {3, 2});
  Output vp = ops::Placeholder(root.WithOpName("vp"), DT_DOUBLE, {2});
  Output one = ops::ConstInt(root, 1);
  Output vc = ops::Const(root, Tensor::FromVector<double>({0.5, -1}, {2}));
  Output xc = ops::Const(root, testing::RandomDoubleTensor({3, 2}, 9));
  CHECK(ComputeGradientError(root, xp, {3, 2},
                             ops::Square(root, ops::InplaceUpdate(root, xp, one, vc)),
                             {3, 2}) < 1e-8);
  CHECK(ComputeGradientError(root, vp, {2},
                             ops::Square(root, ops::InplaceUpdate(root, xc, one, vp)),
                             {3, 2}) < 1e-8);
}

// h <- tanh(h * w + b) for `steps` iterations (b and w from outside: constant Enters).
Output TanhLoop(const Scope& root, Output h0, Output w, Output b, int steps, int parallel = 10) {
  ops::WhileOptions o;
  o.parallel_iterations = parallel;
  return ops::WhileLoop(
      root,
      [steps](const Scope& s, const Vars& v) {
        return ops::Less(s, v[0], ops::ConstInt(s, steps));
      },
      [&](const Scope& s, const Vars& v) {
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)),
                    ops::Tanh(s, ops::Add(s, ops::Mul(s, v[1], w), b))};
      },
      {ops::ConstInt(root, 0), h0}, o)[1];
}

TEST_CASE("Gradients through a while loop match finite differences", "[control_flow][gradients]") {
  const Tensor h0v = testing::RandomDoubleTensor({3}, 4);
  const Tensor wv = testing::RandomDoubleTensor({3}, 5);
  for (int steps : {0, 1, 4}) {
    for (int parallel : {1, 10}) {
      CAPTURE(steps, parallel);
      {  // d/d h0: through the loop variable
        Graph g;
        Scope root = Scope::Root(&g);
        Output h0 = ops::Placeholder(root.WithOpName("h0"), DT_DOUBLE, {3});
        Output y = TanhLoop(root, h0, ops::Const(root, wv), ops::Const(root, Tensor::Scalar(0.1)),
                            steps, parallel);
        CHECK(ComputeGradientError(root, h0, {3}, y, {3}) < 1e-8);
      }
      {  // d/d w: a value every iteration uses, its gradients summed over the iterations
        Graph g;
        Scope root = Scope::Root(&g);
        Output w = ops::Placeholder(root.WithOpName("w"), DT_DOUBLE, {3});
        Output y = TanhLoop(root, ops::Const(root, h0v), w, ops::Const(root, Tensor::Scalar(0.1)),
                            steps, parallel);
        CHECK(ComputeGradientError(root, w, {3}, y, {3}) < 1e-8);
      }
    }
  }
}

TEST_CASE("Gradients of a recurrent loop over a matrix, and with maximum_iterations",
          "[control_flow][gradients]") {
  // h <- tanh(h W) for 5 steps; the gradient with respect to W, a [4,4] matrix.
  Graph g;
  Scope root = Scope::Root(&g);
  Output w = ops::Placeholder(root.WithOpName("W"), DT_DOUBLE, {4, 4});
  ops::WhileOptions o;
  o.maximum_iterations = ops::ConstInt(root, 5);
  Vars out = ops::WhileLoop(
      root, [](const Scope& s, const Vars&) { return ops::Const(s, Tensor::Scalar<bool>(true)); },
      [&](const Scope& s, const Vars& v) { return Vars{ops::Tanh(s, ops::MatMul(s, v[0], w))}; },
      {ops::Const(root, testing::RandomDoubleTensor({2, 4}, 6))}, o);
  const Tensor wv = testing::RandomDoubleTensor({4, 4}, 7);
  CHECK(ComputeGradientError(root, w, {4, 4}, out[0], {2, 4}, &wv) < 1e-8);
}

// v <- cond(i even, v * tanh(v + x), exp(-v) * x) for `steps` iterations; `nested`: the true
// branch holds a second cond (i % 4 == 0) whose branches use x and v differently.
Output LoopWithCond(const Scope& root, Output x, int steps, int parallel, bool nested) {
  ops::WhileOptions o;
  o.parallel_iterations = parallel;
  return ops::WhileLoop(
      root,
      [steps](const Scope& s, const Vars& v) {
        return ops::Less(s, v[0], ops::ConstInt(s, steps));
      },
      [&](const Scope& s, const Vars& v) {
        auto pattern = [&](std::vector<bool> p) {
          Tensor t(DT_BOOL, {static_cast<int64_t>(p.size())});
          for (size_t k = 0; k < p.size(); ++k) t.flat<bool>()[k] = p[k];
          return ops::Gather(s, ops::Const(s, t), v[0]);
        };
        Output even = pattern({true, false, true, false, true, false, true, false});
        Output quarter = pattern({true, false, false, false, true, false, false, false});
        Vars y = ops::Cond(
            s, even,
            [&](const Scope& b) {
              Output t = ops::Mul(b, v[1], ops::Tanh(b, ops::Add(b, v[1], x)));
              if (!nested) return Vars{t};
              return ops::Cond(
                  b, quarter, [&](const Scope& c) { return Vars{ops::Mul(c, t, x)}; },
                  [&](const Scope& c) { return Vars{ops::Square(c, t)}; });
            },
            [&](const Scope& b) { return Vars{ops::Mul(b, ops::Exp(b, ops::Neg(b, v[1])), x)}; });
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), y[0]};
      },
      {ops::ConstInt(root, 0), x}, o)[1];
}

TEST_CASE("Gradients of a loop whose body holds conds match finite differences",
          "[control_flow][gradients]") {
  for (bool nested : {false, true}) {
    for (int steps : {0, 1, 2, 7}) {  // at most 8: the patterns' length
      for (int parallel : {1, 10}) {
        CAPTURE(nested, steps, parallel);
        Graph g;
        Scope root = Scope::Root(&g);
        Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {3});
        Output y = LoopWithCond(root, x, steps, parallel, nested);
        CHECK(ComputeGradientError(root, x, {3}, y, {3}) < 1e-8);
      }
    }
  }
}

}  // namespace
}  // namespace pf::control_flow_test
