// tf.case, tf.map_fn, tf.scan, tf.foldl and tf.foldr (issue 35): ops::Case, MapFn, Scan, Foldl
// and Foldr, built on Cond and WhileLoop. TensorFlow's scenarios (functional_ops_test.py,
// control_flow_ops_test.py), checked against plain C++ loops; gradients against finite
// differences.
#include "tests/testing/test_util.h"

namespace pf::functional_ops_test {
namespace {

using Catch::Matchers::Contains;
using Vars = std::vector<Output>;

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}
Tensor FloatVec(const std::vector<float>& v) {
  return Tensor::FromVector<float>(v, {static_cast<int64_t>(v.size())});
}

Output AddFn(const Scope& s, Output a, Output e) { return ops::Add(s, a, e); }

TEST_CASE("MapFn squares each element, as a plain loop does", "[control_flow]") {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  for (int p : {1, 10}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output elems = ops::Const(root, FloatVec(x));
    ops::MapFnOptions o;
    o.parallel_iterations = p;
    Output y = ops::MapFn(
        root, [](const Scope& s, Output e) { return ops::Square(s, e); }, elems, o);
    CHECK(y.shape() == Shape{6});
    CHECK(y.name() == "map/result:0");
    std::vector<float> want;
    for (float v : x) want.push_back(v * v);
    CHECK(Floats(testing::RunOne(g, y)) == want);
  }
}

TEST_CASE("MapFn over rows: results of any shape, a value from outside, another dtype",
          "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const Tensor xv = testing::RandomTensor({4, 3}, 1);
  const Tensor wv = testing::RandomTensor({3, 2}, 2);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 3});
  Output w = ops::Const(root, wv);
  // Each row [3] times w [3, 2]: a [2] result per row; the number of rows is known at run time.
  Output y = ops::MapFn(
      root,
      [&](const Scope& s, Output row) {
        return ops::Reshape(s, ops::MatMul(s, ops::Reshape(s, row, {1, 3}), w), {2});
      },
      x);
  CHECK(y.shape() == Shape{-1, 2});
  ops::MapFnOptions as_int;
  as_int.dtype = DT_INT32;
  Output positives = ops::MapFn(
      root,
      [](const Scope& s, Output row) {
        return ops::Sum(s, ops::Cast(s, ops::Greater(s, row, ops::Const(s, 0.f)), DT_INT32));
      },
      x, as_int);
  CHECK(positives.shape() == Shape{-1});
  Session sess(g);
  auto r = sess.Run({{x, xv}}, {y, positives});
  REQUIRE(r[0].shape() == Shape{4, 2});
  for (int i = 0; i < 4; ++i) {
    int count = 0;
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += xv.data<float>()[i * 3 + k] * wv.data<float>()[k * 2 + j];
      CHECK(r[0].data<float>()[i * 2 + j] == Approx(acc).margin(1e-6));
    }
    for (int k = 0; k < 3; ++k) count += xv.data<float>()[i * 3 + k] > 0;
    CHECK(r[1].data<int32_t>()[i] == count);
  }
  // Empty elems: an empty result with fn's static element shape (TensorFlow's too).
  auto e = sess.Run({{x, Tensor(DT_FLOAT, {0, 3})}}, {y, positives});
  CHECK(e[0].shape() == Shape{0, 2});
  CHECK(e[1].shape() == Shape{0});
}

TEST_CASE("MapFn: results whose static shape is unknown, and one that changes across elements",
          "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, -1});
  Output y = ops::MapFn(
      root, [](const Scope& s, Output row) { return ops::Mul(s, row, ops::Const(s, 2.f)); }, x);
  CHECK(y.shape() == Shape{-1, -1});
  Session sess(g);
  const Tensor xv = testing::Iota({3, 4});
  const Tensor r = sess.Run({{x, xv}}, {y})[0];
  REQUIRE(r.shape() == Shape{3, 4});
  for (int i = 0; i < 12; ++i) CHECK(r.data<float>()[i] == 2.f * i);
  // No element: the unknown dims of the element shape are 0 (TensorFlow fails here).
  CHECK(sess.Run({{x, Tensor(DT_FLOAT, {0, 5})}}, {y})[0].shape() == Shape{0, 0});

  // fn returns [0, e) for each element e: [2] twice, then [3] (a TensorArray would refuse it).
  Graph g2;
  Scope r2 = Scope::Root(&g2);
  Output n = ops::Placeholder(r2.WithOpName("n"), DT_INT32, {3});
  Output ranges = ops::MapFn(
      r2,
      [](const Scope& s, Output e) {
        return ops::Range(s, ops::ConstInt(s, 0), e, ops::ConstInt(s, 1));
      },
      n);
  Session sess2(g2);
  auto same = sess2.Run({{n, Tensor::FromVector<int32_t>({2, 2, 2}, {3})}}, {ranges});
  CHECK(same[0].DebugString() == "Tensor<int32 [3,2]> [[0, 1], [0, 1], [0, 1]]");
  std::vector<Tensor> out;
  Status s = sess2.TryRun({{n, Tensor::FromVector<int32_t>({2, 2, 3}, {3})}}, {ranges}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("MapFn 'map': fn's results must all have one shape") &&
                              Contains("map/while/check_shape"));
}

TEST_CASE("Scan: cumulative sums forwards and reversed, with and without an initializer",
          "[control_flow]") {
  const std::vector<float> x = {3, -1, 4, 1, -5, 9};
  auto reference = [&](bool reverse, std::optional<float> init) {
    std::vector<float> out(x.size());
    const int n = static_cast<int>(x.size());
    float a = init.value_or(0.f);
    for (int k = 0; k < n; ++k) {
      const int i = reverse ? n - 1 - k : k;
      a = (k == 0 && !init) ? x[i] : a + x[i];
      out[i] = a;
    }
    return out;
  };
  for (bool reverse : {false, true}) {
    for (std::optional<float> init : {std::optional<float>(), std::optional<float>(10.f)}) {
      CAPTURE(reverse, init.has_value());
      Graph g;
      Scope root = Scope::Root(&g);
      Output elems = ops::Const(root, FloatVec(x));
      std::optional<Output> a0;
      if (init) a0 = ops::Const(root, *init);
      ops::ScanOptions o;
      o.reverse = reverse;
      Output y = ops::Scan(root, AddFn, elems, a0, o);
      CHECK(y.shape() == Shape{6});
      CHECK(Floats(testing::RunOne(g, y)) == reference(reverse, init));
    }
  }
}

TEST_CASE("Scan: a vector accumulator over rows, an int32 counter, empty elems", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 2});
  Output running = ops::Scan(root, AddFn, x, ops::Const(root, std::vector<float>{0, 0}, {2}));
  CHECK(running.shape() == Shape{-1, 2});
  // The accumulator's dtype is the initializer's: count the elements.
  Output counts = ops::Scan(
      root, [](const Scope& s, Output a, Output) { return ops::Add(s, a, ops::ConstInt(s, 1)); }, x,
      ops::ConstInt(root, 0));
  Session sess(g);
  const Tensor xv = testing::RandomTensor({5, 2}, 3);
  auto r = sess.Run({{x, xv}}, {running, counts});
  REQUIRE(r[0].shape() == Shape{5, 2});
  double s0 = 0, s1 = 0;
  for (int i = 0; i < 5; ++i) {
    s0 += xv.data<float>()[2 * i];
    s1 += xv.data<float>()[2 * i + 1];
    CHECK(r[0].data<float>()[2 * i] == Approx(s0).margin(1e-6));
    CHECK(r[0].data<float>()[2 * i + 1] == Approx(s1).margin(1e-6));
    CHECK(r[1].data<int32_t>()[i] == i + 1);
  }
  auto e = sess.Run({{x, Tensor(DT_FLOAT, {0, 2})}}, {running, counts});
  CHECK(e[0].shape() == Shape{0, 2});
  CHECK(e[1].shape() == Shape{0});
  // An accumulator whose shape is known only at run time: its results go in flat rows.
  Graph g2;
  Scope r2 = Scope::Root(&g2);
  Output y = ops::Placeholder(r2.WithOpName("y"), DT_FLOAT, {3, -1});
  Output start = ops::Placeholder(r2.WithOpName("start"), DT_FLOAT, {-1});
  Output sums = ops::Scan(r2, AddFn, y, start);
  Session s2(g2);
  const Tensor got = s2.Run({{y, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2})},
                             {start, Tensor::FromVector<float>({0, 10}, {2})}},
                            {sums})[0];
  CHECK(got.DebugString() == "Tensor<float [3,2]> [[1, 12], [4, 16], [9, 22]]");
  ops::ScanOptions reversed;
  reversed.reverse = true;
  Output back = ops::Scan(r2, AddFn, y, start, reversed);
  Output no_init = ops::Scan(r2, AddFn, y);  // the first row is the first accumulator
  // fn makes the accumulator one longer each step: its row no longer fits (TensorFlow's
  // TensorArray refuses it too).
  Output grows = ops::Scan(
      r2,
      [](const Scope& s, Output a, Output) {
        return ops::Concat(s, {a, a}, 0);
      },
      y, start);
  Session s3(g2);
  const FeedDict feeds = {{y, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2})},
                          {start, Tensor::FromVector<float>({0, 10}, {2})}};
  auto r3 = s3.Run(feeds, {back, no_init});
  CHECK(r3[0].DebugString() == "Tensor<float [3,2]> [[9, 22], [8, 20], [5, 16]]");
  CHECK(r3[1].DebugString() == "Tensor<float [3,2]> [[1, 2], [4, 6], [9, 12]]");
  std::vector<Tensor> none;
  const Status st = s3.TryRun(feeds, {grows}, {}, &none);
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK_THAT(st.message(), Contains("a row of [3,2] is [2], the value is [4]"));
}

TEST_CASE("Foldl and Foldr: sums, products and an order that shows", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1});
  auto mul = [](const Scope& s, Output a, Output e) { return ops::Mul(s, a, e); };
  // a * 10 + e: the digits in the order the fold visits them.
  auto digits = [](const Scope& s, Output a, Output e) {
    return ops::Add(s, ops::Mul(s, a, ops::Const(s, 10.f)), e);
  };
  Output sum = ops::Foldl(root, AddFn, x);
  Output prod = ops::Foldl(root, mul, x, ops::Const(root, 1.f));
  Output left = ops::Foldl(root, digits, x, ops::Const(root, 5.f));
  Output right = ops::Foldr(root, digits, x, ops::Const(root, 5.f));
  Output right_no_init = ops::Foldr(root, digits, x);
  CHECK(sum.shape() == Shape{});
  CHECK(right.node->name().rfind("foldr", 0) == 0);
  Session sess(g);
  auto r = sess.Run({{x, FloatVec({1, 2, 3, 4})}}, {sum, prod, left, right, right_no_init});
  CHECK(r[0].scalar<float>() == 10.f);
  CHECK(r[1].scalar<float>() == 24.f);
  CHECK(r[2].scalar<float>() == 51234.f);
  CHECK(r[3].scalar<float>() == 54321.f);
  CHECK(r[4].scalar<float>() == 4321.f);
  // Empty elems: the initializer; without one, a run-time error (no first element).
  auto e = sess.Run({{x, FloatVec({})}}, {prod, right});
  CHECK(e[0].scalar<float>() == 1.f);
  CHECK(e[1].scalar<float>() == 5.f);
  std::vector<Tensor> out;
  Status s = sess.TryRun({{x, FloatVec({})}}, {sum}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("foldl/first"));
  // A longer fold.
  std::vector<float> ones(2000, 1.f);
  CHECK(sess.Run({{x, FloatVec(ones)}}, {sum})[0].scalar<float>() == 2000.f);
}

TEST_CASE("Nested: a MapFn whose fn maps and folds each row", "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const Tensor xv = testing::RandomTensor({4, 3}, 12);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 3});
  // Per row: the sum of the squares of its elements, by an inner MapFn and an inner Foldl.
  Output y = ops::MapFn(
      root,
      [](const Scope& s, Output row) {
        Output squares = ops::MapFn(
            s, [](const Scope& s2, Output e) { return ops::Square(s2, e); }, row);
        return ops::Foldl(s, AddFn, squares, ops::Const(s, 0.f));
      },
      x);
  CHECK(y.shape() == Shape{-1});
  const Tensor r = testing::RunOne(g, y, {{x, xv}});
  REQUIRE(r.shape() == Shape{4});
  for (int i = 0; i < 4; ++i) {
    double want = 0;
    for (int k = 0; k < 3; ++k)
      want += double(xv.data<float>()[i * 3 + k]) * xv.data<float>()[i * 3 + k];
    CHECK(r.data<float>()[i] == Approx(want).margin(1e-6));
  }
  // Its gradient goes through both loops (a loop's gradient inside the other's): d/dx of the
  // rows' sums of squares is 2x.
  Output dx = Gradients(root, {y}, {x})[0];
  const Tensor d = testing::RunOne(g, dx, {{x, xv}});
  REQUIRE(d.shape() == Shape{4, 3});
  for (int k = 0; k < 12; ++k)
    CHECK(d.data<float>()[k] == Approx(2 * xv.data<float>()[k]).margin(1e-6));
}

// The stacking's cost, measured: pf_tests "[map_fn-bench]" (not run by default).
TEST_CASE("MapFn timings: forward and gradient over n rows of 100", "[.][map_fn-bench]") {
  for (int n : {500, 501, 1000, 1001, 2000, 2001}) {
    Graph g;
    Scope root = Scope::Root(&g);
    // Shapes known when the graph is built (rows made before the loop), or only at run time
    // (flat rows made in the first iteration).
    const bool known = n % 2 == 0;
    Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT,
                                known ? pf::Shape{n, 100} : pf::Shape::Unknown());
    Output y = ops::MapFn(
        root, [](const Scope& s, Output e) { return ops::Tanh(s, e); }, x);
    Output dx = Gradients(root, {ops::Sum(root, y)}, {x})[0];
    Session sess(g);
    const Tensor xv = testing::RandomTensor({n, 100}, 1);
    sess.Run({{x, xv}}, {y});
    sess.Run({{x, xv}}, {dx});
    auto t0 = std::chrono::steady_clock::now();
    sess.Run({{x, xv}}, {y});
    auto t1 = std::chrono::steady_clock::now();
    const Tensor d = sess.Run({{x, xv}}, {dx})[0];
    auto t2 = std::chrono::steady_clock::now();
    for (int64_t k = 0; k < d.num_elements(); k += 997) {
      const double t = std::tanh(xv.data<float>()[k]);
      CHECK(d.data<float>()[k] == Approx(1 - t * t).margin(1e-5));
    }
    const double f = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double b = std::chrono::duration<double, std::milli>(t2 - t1).count();
    std::printf("n=%d (shape %s) forward %.1f ms, forward+backward %.1f ms\n", n,
                known ? "known" : "run time", f, b);
  }
}

// The branch a value x takes: x < 0 -> 1, x < 10 -> 2, x < 100 -> 3 (the first true wins),
// else the default 4.
int Branch(float x) { return x < 0 ? 1 : x < 10 ? 2 : x < 100 ? 3 : 4; }

TEST_CASE("Case runs the first branch whose predicate is true, else the default",
          "[control_flow]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {});
  Output p1 = ops::Less(root.WithOpName("neg"), x, ops::Const(root, 0.f));
  Output p2 = ops::Less(root.WithOpName("small"), x, ops::Const(root, 10.f));
  Output p3 = ops::Less(root.WithOpName("medium"), x, ops::Const(root, 100.f));
  auto branch = [&](float v) {
    return [&, v](const Scope& s) { return Vars{ops::Add(s, x, ops::Const(s, 1000.f * v))}; };
  };
  Vars y = ops::Case(root, {{p1, branch(1)}, {p2, branch(2)}, {p3, branch(3)}}, branch(4));
  REQUIRE(y.size() == 1);
  CHECK(y[0].shape() == Shape{});
  // Without a default the last pair's fn is the default, checked: no predicate true is an error.
  Vars z = ops::Case(root, {{p1, branch(1)}, {p2, branch(2)}});
  Session sess(g);
  for (float v : {-5.f, 0.f, 9.5f, 10.f, 99.f, 100.f, 1e4f}) {
    CAPTURE(v);
    const auto r = sess.Run({{x, Tensor::Scalar<float>(v)}}, {y[0]});
    CHECK(r[0].scalar<float>() == v + 1000.f * Branch(v));
    if (v < 10) {
      CHECK(sess.Run({{x, Tensor::Scalar<float>(v)}}, {z[0]})[0].scalar<float>() ==
            v + 1000.f * Branch(v));
    }
  }
  std::vector<Tensor> out;
  Status s = sess.TryRun({{x, Tensor::Scalar<float>(50)}}, {z[0]}, {}, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("none of the conditions (neg:0, small:0) evaluated as True"));
}

TEST_CASE("Case with exclusive: more than one true predicate is an error naming them",
          "[control_flow][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Placeholder(root.WithOpName("a"), DT_BOOL, {});
  Output b = ops::Placeholder(root.WithOpName("b"), DT_BOOL, {});
  auto value = [](float v) { return [v](const Scope& s) { return Vars{ops::Const(s, v)}; }; };
  Vars y = ops::Case(root, {{a, value(1)}, {b, value(2)}}, value(3), /*exclusive=*/true);
  Session sess(g);
  auto run = [&](bool av, bool bv, std::vector<Tensor>* out) {
    return sess.TryRun({{a, Tensor::Scalar<bool>(av)}, {b, Tensor::Scalar<bool>(bv)}}, {y[0]}, {},
                       out);
  };
  std::vector<Tensor> out;
  struct Run {
    bool a, b;
    float want;
  };
  for (const Run& c : {Run{true, false, 1.f}, Run{false, true, 2.f}, Run{false, false, 3.f}}) {
    REQUIRE(run(c.a, c.b, &out).ok());
    CHECK(out[0].scalar<float>() == c.want);
  }
  Status s = run(true, true, &out);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(),
             Contains("exclusive=true but more than one of the conditions (a:0, b:0)") &&
                 Contains("case/assert_at_most_one_true"));
}

TEST_CASE("Functional builders' errors name the builder", "[control_flow][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output scalar = ops::Const(root, 1.f);
  Output v = ops::Const(root, std::vector<float>{1, 2, 3}, {3});
  auto square = [](const Scope& s, Output e) { return ops::Square(s, e); };
  CHECK_THROWS_WITH(ops::MapFn(root, square, scalar),
                    Contains("MapFn 'map': elems ('Const:0') must have rank 1 or more"));
  CHECK_THROWS_WITH(ops::Scan(root, AddFn, scalar), Contains("Scan 'scan': elems"));
  CHECK_THROWS_WITH(ops::Foldl(root, AddFn, scalar), Contains("Foldl 'foldl': elems"));
  CHECK_THROWS_WITH(ops::Foldr(root, AddFn, scalar), Contains("Foldr 'foldr': elems"));
  // fn returning another dtype than the result's or the accumulator's, or another shape.
  auto to_int = [](const Scope& s, Output e) { return ops::Cast(s, e, DT_INT32); };
  CHECK_THROWS_WITH(ops::MapFn(root, to_int, v), Contains("MapFn 'map_1': fn returns int32") &&
                                                     Contains("the result's dtype is float") &&
                                                     Contains("MapFnOptions::dtype"));
  auto acc_to_int = [](const Scope& s, Output a, Output e) {
    return ops::Cast(s, ops::Add(s, a, e), DT_INT32);
  };
  CHECK_THROWS_WITH(
      ops::Foldl(root, acc_to_int, v, ops::Const(root, 0.f)),
      Contains("Foldl 'foldl_1': fn returns int32") && Contains("the accumulator is float"));
  auto grow = [](const Scope& s, Output a, Output e) {
    return ops::Concat(s, {a, ops::Reshape(s, e, {1})}, 0);
  };
  CHECK_THROWS_WITH(
      ops::Scan(root, grow, v, ops::Const(root, std::vector<float>{0}, {1})),
      Contains("Scan 'scan_1': fn returns shape [2]") && Contains("the accumulator has shape [1]"));
  // Case: a predicate that is not a bool scalar, nothing to choose from.
  auto one = [](const Scope& s) { return Vars{ops::Const(s, 1.f)}; };
  CHECK_THROWS_WITH(ops::Case(root, {{scalar, one}}, one),
                    Contains("Case 'case': predicate 0 ('Const:0') must be a bool scalar"));
  CHECK_THROWS_WITH(ops::Case(root, {}), Contains("needs at least one (predicate, fn) pair"));
}

TEST_CASE("Gradients through MapFn, Scan, Foldl and Foldr match finite differences",
          "[control_flow][gradients]") {
  const Tensor wv = testing::RandomDoubleTensor({3}, 8);
  auto tanh_times = [&](const Scope& s, Output e) { return ops::Mul(s, e, ops::Tanh(s, e)); };
  // a' = tanh(a * w + e): a recurrent cell over the rows.
  auto cell = [&](const Scope& s, Output a, Output e) {
    return ops::Tanh(s, ops::Add(s, ops::Mul(s, a, ops::Const(s, wv)), e));
  };
  for (int which = 0; which < 5; ++which) {
    for (int p : {1, 10}) {
      CAPTURE(which, p);
      Graph g;
      Scope root = Scope::Root(&g);
      // The number of rows is known at run time only (the checker feeds [4, 3]).
      Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {-1, 3});
      Output h0 = ops::Const(root, testing::RandomDoubleTensor({3}, 9));
      Output y;
      Shape y_shape{4, 3};
      switch (which) {
        case 0: {
          ops::MapFnOptions o;
          o.parallel_iterations = p;
          y = ops::MapFn(root, tanh_times, x, o);
          break;
        }
        case 1:
        case 2: {
          ops::ScanOptions o;
          o.parallel_iterations = p;
          o.reverse = which == 2;
          y = ops::Scan(root, cell, x, h0, o);
          break;
        }
        default: {
          ops::FoldOptions o;
          o.parallel_iterations = p;
          y = which == 3 ? ops::Foldl(root, cell, x, h0, o) : ops::Foldr(root, cell, x, {}, o);
          y_shape = Shape{3};
        }
      }
      CHECK(ComputeGradientError(root, x, {4, 3}, y, y_shape) < 1e-8);
    }
  }
}

TEST_CASE("Gradients through MapFn and Scan whose shapes are known only at run time",
          "[control_flow][gradients]") {
  auto cell = [&](const Scope& s, Output a, Output e) {
    return ops::Tanh(s,
                     ops::Add(s, ops::Mul(s, a, ops::Cast(s, ops::Const(s, 0.7f), DT_DOUBLE)), e));
  };
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, pf::Shape::Unknown());
    // The initial accumulator's shape is unknown too: x's first row.
    Output h0 = ops::Gather(root, x, ops::ConstInt(root, 0));
    ops::ScanOptions o;
    o.reverse = which == 2;
    Output y =
        which == 0
            ? ops::MapFn(
                  root, [](const Scope& s, Output e) { return ops::Mul(s, e, ops::Tanh(s, e)); }, x)
            : ops::Scan(root, cell, x, h0, o);
    REQUIRE_FALSE(y.shape().IsFullyDefined());
    int updates = 0;
    for (const Node* n : g.nodes()) updates += n->op() == "InplaceUpdate";
    CHECK(updates >= 1);  // rows written in place, not appended
    CHECK(ComputeGradientError(root, x, {4, 3}, y, {4, 3}) < 1e-8);
  }
}

TEST_CASE("Gradients with respect to a Foldl's initializer and a MapFn's outside value",
          "[control_flow][gradients]") {
  {
    Graph g;
    Scope root = Scope::Root(&g);
    Output h0 = ops::Placeholder(root.WithOpName("h0"), DT_DOUBLE, {2});
    Output elems = ops::Const(root, testing::RandomDoubleTensor({5, 2}, 10));
    Output y = ops::Foldl(
        root,
        [](const Scope& s, Output a, Output e) {
          return ops::Tanh(s, ops::Add(s, ops::Mul(s, a, e), e));
        },
        elems, h0);
    CHECK(ComputeGradientError(root, h0, {2}, y, {2}) < 1e-8);
  }
  {
    Graph g;
    Scope root = Scope::Root(&g);
    Output w = ops::Placeholder(root.WithOpName("w"), DT_DOUBLE, {3, 2});
    Output elems = ops::Const(root, testing::RandomDoubleTensor({4, 3}, 11));
    Output y = ops::MapFn(
        root,
        [&](const Scope& s, Output row) {
          return ops::Tanh(s,
                           ops::Reshape(s, ops::MatMul(s, ops::Reshape(s, row, {1, 3}), w), {2}));
        },
        elems);
    CHECK(ComputeGradientError(root, w, {3, 2}, y, {4, 2}) < 1e-8);
  }
}

TEST_CASE("Gradients through Case match finite differences", "[control_flow][gradients]") {
  for (float v : {-1.f, 5.f, 50.f}) {
    CAPTURE(v);
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {3});
    Output sel = ops::Const(root, v);
    Vars y = ops::Case(
        root,
        {{ops::Less(root, sel, ops::Const(root, 0.f)),
          [&](const Scope& s) { return Vars{ops::Exp(s, x)}; }},
         {ops::Greater(root, sel, ops::Const(root, 10.f)),
          [&](const Scope& s) { return Vars{ops::Mul(s, x, x)}; }}},
        [&](const Scope& s) { return Vars{ops::Tanh(s, x)}; }, /*exclusive=*/true);
    CHECK(ComputeGradientError(root, x, {3}, y[0], {3}) < 1e-8);
  }
}

TEST_CASE("The gradient of a MapFn whose fn holds a Case matches finite differences",
          "[control_flow][gradients][map_fn]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {6});
  // Per element: e^3 when e > 0.3, tanh(e) * 2 when e < -0.3, e / 2 otherwise.
  Output y = ops::MapFn(
      root,
      [](const Scope& s, Output e) {
        auto c = [&](double v) { return ops::Const(s, Tensor::Scalar<double>(v)); };
        return ops::Case(
            s,
            {{ops::Greater(s, e, c(0.3)),
              [&](const Scope& b) {
                return std::vector<Output>{ops::Mul(b, e, ops::Square(b, e))};
              }},
             {ops::Less(s, e, c(-0.3)),
              [&](const Scope& b) {
                return std::vector<Output>{ops::Mul(b, ops::Tanh(b, e), c(2))};
              }}},
            [&](const Scope& b) { return std::vector<Output>{ops::Mul(b, e, c(0.5))}; })[0];
      },
      x);
  const Tensor xv = Tensor::FromVector<double>({0.9, -0.8, 0.1, -0.1, 0.5, -0.6}, {6});
  CHECK(ComputeGradientError(root, x, {6}, y, {6}, &xv) < 1e-8);
}

}  // namespace
}  // namespace pf::functional_ops_test
