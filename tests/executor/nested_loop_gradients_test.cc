// Gradients of while loops whose bodies hold while loops (train/while_gradients.cc): against
// finite differences, with inner loops of a different length in every outer iteration,
// overlapping iterations (parallel_iterations 10) and a cond inside the inner body; and the
// in-place sums (InplaceAdd) of the rows a loop gathers.
#include "tests/testing/test_util.h"

namespace pf::nested_loop_gradients_test {
namespace {

using Vars = std::vector<Output>;

// v <- inner(v) for i < outer; inner(v) runs i + 1 times: u <- tanh(u * x + v * 0.5) from u = v
// (`with_cond`: on odd j, u <- u * x instead). x: a value both loops bring in.
Output NestedLoop(const Scope& root, Output x, int outer, int parallel, bool with_cond) {
  ops::WhileOptions o;
  o.parallel_iterations = parallel;
  return ops::WhileLoop(
      root,
      [outer](const Scope& s, const Vars& v) {
        return ops::Less(s, v[0], ops::ConstInt(s, outer));
      },
      [&](const Scope& s, const Vars& v) {
        Output limit = ops::Add(s, v[0], ops::ConstInt(s, 1));
        Output half = ops::Mul(s, v[1], ops::Const(s, Tensor::Scalar(0.5)));
        Vars inner = ops::WhileLoop(
            s, [&](const Scope& c, const Vars& w) { return ops::Less(c, w[0], limit); },
            [&](const Scope& b, const Vars& w) {
              Output step = ops::Tanh(b, ops::Add(b, ops::Mul(b, w[1], x), half));
              if (with_cond) {
                Output odd = ops::Equal(b,
                                        ops::Sub(b, w[0],
                                                 ops::Mul(b, ops::Div(b, w[0], ops::ConstInt(b, 2)),
                                                          ops::ConstInt(b, 2))),
                                        ops::ConstInt(b, 1));
                step = ops::Cond(
                    b, odd, [&](const Scope& t) { return Vars{ops::Mul(t, w[1], x)}; },
                    [&](const Scope&) { return Vars{step}; })[0];
              }
              return Vars{ops::Add(b, w[0], ops::ConstInt(b, 1)), step};
            },
            {ops::ConstInt(s, 0), v[1]}, o);
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), inner[1]};
      },
      {ops::ConstInt(root, 0), x}, o)[1];
}

TEST_CASE("Gradients of a loop whose body holds a loop match finite differences",
          "[control_flow][gradients]") {
  for (bool with_cond : {false, true}) {
    for (int outer : {0, 1, 3}) {
      for (int parallel : {1, 10}) {
        CAPTURE(with_cond, outer, parallel);
        Graph g;
        Scope root = Scope::Root(&g);
        Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {3});
        Output y = NestedLoop(root, x, outer, parallel, with_cond);
        CHECK(ComputeGradientError(root, x, {3}, y, {3}) < 1e-8);
      }
    }
  }
}

// A loop of `limit` iterations over v from `start`: v <- step(i, v) at iteration i.
using StepFn = std::function<Output(const Scope&, Output i, Output v)>;
Output Counted(const Scope& s, Output limit, Output start, const StepFn& step) {
  return ops::WhileLoop(
      s, [&](const Scope& c, const Vars& v) { return ops::Less(c, v[0], limit); },
      [&](const Scope& b, const Vars& v) {
        return Vars{ops::Add(b, v[0], ops::ConstInt(b, 1)), step(b, v[0], v[1])};
      },
      {ops::ConstInt(s, 0), start})[1];
}

TEST_CASE("Gradients through three nested loops match finite differences",
          "[control_flow][gradients]") {
  // v <- (u <- (w <- tanh(w) * x, twice), i + 1 times) for 3 outer iterations.
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {2});
  Output start = ops::Add(root, x, ops::Const(root, Tensor::Scalar(0.7)));
  Output y = Counted(root, ops::ConstInt(root, 3), start, [&](const Scope& s, Output i, Output v) {
    return Counted(
        s, ops::Add(s, i, ops::ConstInt(s, 1)), v, [&](const Scope& m, Output, Output u) {
          return Counted(m, ops::ConstInt(m, 2), u, [&](const Scope& k, Output, Output w) {
            return ops::Mul(k, ops::Tanh(k, w), x);
          });
        });
  });
  CHECK(ComputeGradientError(root, x, {2}, y, {2}) < 1e-8);
}

TEST_CASE("A MapFn inside a loop trains: its gradient matches finite differences",
          "[control_flow][gradients]") {
  // v <- MapFn(row -> tanh(row * x), v) for 3 iterations; v [4, 2].
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {2});
  Output v0 = ops::Const(root, testing::RandomDoubleTensor({4, 2}, 21));
  Output y = Counted(root, ops::ConstInt(root, 3), v0, [&](const Scope& s, Output, Output v) {
    return ops::MapFn(
        s, [&](const Scope& m, Output row) { return ops::Tanh(m, ops::Mul(m, row, x)); }, v);
  });
  CHECK(ComputeGradientError(root, x, {2}, y, {4, 2}) < 1e-8);
}

TEST_CASE("InplaceAdd adds to one row, in a copy when someone else sees the buffer",
          "[control_flow][gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  Output y = ops::InplaceAdd(root, x, ops::ConstInt(root, 2), ops::Const(root, {9.f, 8.f}, {2}));
  CHECK(testing::RunOne(g, y).DebugString() == "Tensor<float [3,2]> [[1, 2], [3, 4], [14, 14]]");
  CHECK(testing::RunOne(g, x).DebugString() == "Tensor<float [3,2]> [[1, 2], [3, 4], [5, 6]]");
  CHECK_THROWS_WITH(
      testing::RunOne(
          g, ops::InplaceAdd(root, x, ops::ConstInt(root, -1), ops::Const(root, {9.f, 8.f}, {2}))),
      Catch::Matchers::Contains("InplaceAdd") && Catch::Matchers::Contains("row -1 of 3 rows"));
  Output xp = ops::Placeholder(root.WithOpName("xp"), DT_DOUBLE, {3, 2});
  Output vp = ops::Placeholder(root.WithOpName("vp"), DT_DOUBLE, {2});
  Output one = ops::ConstInt(root, 1);
  Output vc = ops::Const(root, Tensor::FromVector<double>({0.5, -1}, {2}));
  Output xc = ops::Const(root, testing::RandomDoubleTensor({3, 2}, 9));
  CHECK(ComputeGradientError(root, xp, {3, 2},
                             ops::Square(root, ops::InplaceAdd(root, xp, one, vc)), {3, 2}) < 1e-8);
  CHECK(ComputeGradientError(root, vp, {2}, ops::Square(root, ops::InplaceAdd(root, xc, one, vp)),
                             {3, 2}) < 1e-8);
}

TEST_CASE("A loop's gradient sums the rows it gathered in place", "[control_flow][gradients]") {
  // y = sum over i of tanh(x[i] * w) (w brought in): x's gradient through InplaceAdd, each row
  // once; and a row read twice (i and n - 1 - i) gets both gradients.
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {5, 2});
  Output w = ops::Const(root, Tensor::FromVector<double>({0.3, -0.7}, {2}));
  Vars out = ops::WhileLoop(
      root, [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 5)); },
      [&](const Scope& s, const Vars& v) {
        Output mirrored = ops::Sub(s, ops::ConstInt(s, 4), v[0]);
        Output t = ops::Add(s, ops::Tanh(s, ops::Mul(s, ops::Gather(s, x, v[0]), w)),
                            ops::Square(s, ops::Gather(s, x, mirrored)));
        return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), ops::Add(s, v[1], t)};
      },
      {ops::ConstInt(root, 0), ops::Const(root, Tensor(DT_DOUBLE, {2}))});
  CHECK(ComputeGradientError(root, x, {5, 2}, out[1], {2}) < 1e-8);
  int adds = 0;
  for (const Node* n : g.nodes()) adds += n->op() == "InplaceAdd";
  CHECK(adds == 2);
}

}  // namespace
}  // namespace pf::nested_loop_gradients_test
