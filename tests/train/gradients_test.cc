// The gradient builder, and every differentiable op against finite differences (float64).
#include <functional>

#include "tests/testing/test_util.h"

namespace pf::gradients_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("Known value: d(y0 + y2)/dx at x=3 is 17502", "[gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {});
  Output y0 = ops::Square(root, x);
  Output y1 = ops::Square(root, y0);
  Output y2 = ops::Square(root, y1);
  auto dx = Gradients(root, {y0, y2}, {x});
  Session sess(g);
  CHECK(sess.Run({{x, Tensor::Scalar<float>(3)}}, {dx[0]})[0].scalar<float>() == 17502.f);
}

TEST_CASE("Several paths are summed; names and colocation follow TensorFlow", "[gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2});
  Output a = ops::Mul(root.WithOpName("a").WithDevice("/cpu:0"), x, x);  // x^2
  Output b = ops::Neg(root.WithOpName("b"), x);
  Output y = ops::Add(root.WithOpName("y"), a, b);  // x^2 - x
  auto dx = Gradients(root, {y}, {x});
  Session sess(g);
  CHECK(sess.Run({{x, Tensor::FromVector<float>({1, 5})}}, {dx[0]})[0].DebugString() ==
        "Tensor<float [2]> [1, 9]");
  Node* mul_grad = nullptr;
  for (Node* n : g.nodes()) {
    if (n->name().rfind("gradients/a_grad/", 0) == 0 && n->op() == "Mul") mul_grad = n;
  }
  REQUIRE(mul_grad != nullptr);
  CHECK(mul_grad->requested_device() == "/device:CPU:0");
  CHECK(std::find(mul_grad->colocation_group().begin(), mul_grad->colocation_group().end(), "a") !=
        mul_grad->colocation_group().end());
  CHECK(dx[0].node->op() == "AddN");  // two paths into x: through a (twice) and through b
  // Colocation can be turned off.
  auto dx2 = Gradients(root, {y}, {x}, {}, GradientOptions{.colocate_gradients_with_ops = false});
  CHECK(dx2[0].node->name().rfind("gradients_1/", 0) == 0);
}

TEST_CASE("StopGradient and non-float paths carry no gradient; errors are TensorFlow's",
          "[gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {3});
  Output y = ops::Add(root, ops::Square(root, x), ops::StopGradient(root, ops::Exp(root, x)));
  auto dx = Gradients(root, {y}, {x});
  Session sess(g);
  CHECK(sess.Run({{x, Tensor::FromVector<float>({1, 2, 3})}}, {dx[0]})[0].DebugString() ==
        "Tensor<float [3]> [2, 4, 6]");
  // Every path stopped: TensorFlow's None, a null Output (not a zeros node).
  Output only_stopped = ops::StopGradient(root, ops::Exp(root, x));
  const int before = g.num_nodes();
  auto none = Gradients(root, {only_stopped}, {x});
  REQUIRE(none.size() == 1);
  CHECK(none[0].node == nullptr);
  // Mixed with a y that does carry a gradient, x still gets one; a second x whose only path
  // is an integer cast gets none.
  Output k = ops::Placeholder(root.WithOpName("k"), DT_FLOAT, {3});
  Output through_int = ops::Cast(root, ops::Cast(root, k, DT_INT32), DT_FLOAT);
  auto mixed = Gradients(root, {only_stopped, ops::Add(root, y, through_int)}, {x, k});
  CHECK(mixed[0].node != nullptr);
  CHECK(mixed[1].node == nullptr);
  CHECK(sess.Run({{x, Tensor::FromVector<float>({1, 2, 3})}, {k, Tensor(DT_FLOAT, {3})}},
                 {mixed[0]})[0]
            .DebugString() == "Tensor<float [3]> [2, 4, 6]");
  CHECK(g.num_nodes() > before);
  Output z = ops::Placeholder(root.WithOpName("z"), DT_FLOAT, {3});
  CHECK_THROWS_WITH(Gradients(root, {y}, {z}),
                    Contains("Cannot compute the partial derivative for node 'z' as it's "
                             "unreachable from the output node(s)."));
  static OpRegistrar reg(OpDef("TestNoGrad")
                             .Input("x", "T")
                             .Output("y", "T")
                             .TypeAttr("T", {DT_FLOAT})
                             .SetShapeFn(UnchangedShape));
  Output ng = NodeBuilder(root, "TestNoGrad").Input(x).Finalize();
  CHECK_THROWS_WITH(Gradients(root, {ng}, {x}), Contains("No gradient defined for op: TestNoGrad"));
}

TEST_CASE("ComputeGradientError throws pf::Error for a bad request", "[gradients][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output xi = ops::Placeholder(root, DT_INT32, {2});
  CHECK_THROWS_WITH(ComputeGradientError(root, xi, {2}, xi, {2}),
                    Contains("x must be float or double"));
  Output x = ops::Placeholder(root, DT_DOUBLE, {2});
  Output y = ops::Square(root, x);
  Tensor wrong(DT_DOUBLE, {3});
  CHECK_THROWS_WITH(ComputeGradientError(root, x, {2}, y, {2}, &wrong),
                    Contains("x_value does not match x"));
  CHECK(ComputeGradientError(root, x, {2}, y, {2}) < 1e-6);
  // A null symbolic gradient (StopGradient) is a zero Jacobian: the error is the numeric one.
  Tensor at = Tensor::FromVector<double>({1, 2});
  CHECK(ComputeGradientError(root, x, {2}, ops::StopGradient(root, y), {2}, &at) ==
        Approx(4).epsilon(1e-6));
}

// ---- finite-difference checks ----
constexpr double kTol = 1e-6;  // float64 with delta 1e-6

Tensor Rand(const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  return testing::RandomDoubleTensor(s, seed, lo, hi);
}

// Builds y from a double placeholder x of `x_shape` and checks dy/dx.
double Check(const Shape& x_shape, const std::function<Output(const Scope&, Output)>& build,
             double lo = -1, double hi = 1, double delta = 0) {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, x_shape);
  Output y = build(root, x);
  REQUIRE(y.shape().IsFullyDefined());
  Tensor x0 = Rand(x_shape, 3, lo, hi);
  return ComputeGradientError(root, x, x_shape, y, y.shape(), &x0, delta);
}

Output C(const Scope& s, const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  return ops::Const(s, Rand(shape, seed, lo, hi));
}

TEST_CASE("Gradient check: unary ops", "[gradients][check]") {
  using Fn = Output (*)(const Scope&, Output);
  for (auto [name, fn, lo] : {std::tuple<const char*, Fn, double>{"Neg", ops::Neg, -1},
                              {"Square", ops::Square, -1},
                              {"Sqrt", ops::Sqrt, 0.5},
                              {"Rsqrt", ops::Rsqrt, 0.5},
                              {"Exp", ops::Exp, -1},
                              {"Log", ops::Log, 0.5},
                              {"Relu", ops::Relu, -1},
                              {"Sigmoid", ops::Sigmoid, -1},
                              {"Tanh", ops::Tanh, -1},
                              {"Softmax", ops::Softmax, -1},
                              {"LogSoftmax", ops::LogSoftmax, -1},
                              {"Identity", ops::Identity, -1}}) {
    INFO(name);
    CHECK(Check(
              {3, 4}, [fn = fn](const Scope& s, Output x) { return fn(s, x); }, lo, 2) < kTol);
  }
}

TEST_CASE("Gradient check: binary ops with broadcasting, each input", "[gradients][check]") {
  using Fn = Output (*)(const Scope&, Output, Output);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 4}, {}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {3, 1}}};
  for (auto [name, fn] : {std::pair<const char*, Fn>{"Add", ops::Add},
                          {"Sub", ops::Sub},
                          {"Mul", ops::Mul},
                          {"Div", ops::Div},
                          {"Maximum", ops::Maximum},
                          {"Minimum", ops::Minimum},
                          {"Pow", ops::Pow}}) {
    for (const auto& shape_pair : shapes) {
      // Not a structured binding: clang 14 (sanitizer builds) cannot capture one.
      const Shape &sa = shape_pair.first, &sb = shape_pair.second;
      const Fn op = fn;
      INFO(name << " " << sa.ToString() << " " << sb.ToString());
      // Positive operands keep Div and Pow smooth.
      CHECK(Check(
                sa, [&](const Scope& s, Output x) { return op(s, x, C(s, sb, 9, 0.5, 2)); }, 0.5,
                2) < kTol);
      CHECK(Check(
                sb, [&](const Scope& s, Output x) { return op(s, C(s, sa, 9, 0.5, 2), x); }, 0.5,
                2) < kTol);
    }
  }
}

TEST_CASE("Gradient check: MatMul, all transpose cases", "[gradients][check]") {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      INFO("ta=" << ta << " tb=" << tb);
      Shape sa = ta ? Shape{4, 3} : Shape{3, 4}, sb = tb ? Shape{5, 4} : Shape{4, 5};
      CHECK(Check(sa, [&](const Scope& s, Output x) {
              return ops::MatMul(s, x, C(s, sb, 2), ta, tb);
            }) < kTol);
      CHECK(Check(sb, [&](const Scope& s, Output x) {
              return ops::MatMul(s, C(s, sa, 2), x, ta, tb);
            }) < kTol);
    }
  }
}

TEST_CASE("Gradient check: reductions", "[gradients][check]") {
  using Fn = Output (*)(const Scope&, Output, const std::vector<int32_t>&, bool);
  for (auto [name, fn] : {std::pair<const char*, Fn>{"Sum", ops::Sum},
                          {"Mean", ops::Mean},
                          {"Max", ops::Max},
                          {"Min", ops::Min}}) {
    for (const std::vector<int32_t>& axes : {std::vector<int32_t>{}, {0}, {1}, {-1}, {0, 2}}) {
      for (bool keep : {false, true}) {
        INFO(name << " axes=" << axes.size() << " keep=" << keep);
        const Fn op = fn;  // clang 14 (sanitizer builds) cannot capture a binding
        CHECK(Check({2, 3, 4}, [&](const Scope& s, Output x) { return op(s, x, axes, keep); }) <
              kTol);
      }
    }
  }
}

TEST_CASE("Gradient check: array and nn ops", "[gradients][check]") {
  CHECK(Check({3, 4}, [](const Scope& s, Output x) {
          return ops::AddN(s, {x, ops::Square(s, x), x});
        }) < kTol);
  CHECK(Check({3, 4}, [](const Scope& s, Output x) { return ops::BiasAdd(s, x, C(s, {4}, 1)); }) <
        kTol);
  CHECK(Check({4}, [](const Scope& s, Output x) {
          return ops::BiasAdd(s, C(s, {3, 4}, 1), x);
        }) < kTol);
  CHECK(Check({3, 4}, [](const Scope& s, Output x) {
          return ops::Reshape(s, x, std::vector<int32_t>{2, 6});
        }) < kTol);
  CHECK(Check({3, 4}, [](const Scope& s, Output x) { return ops::ExpandDims(s, x, 1); }) < kTol);
  CHECK(Check({3, 1, 4}, [](const Scope& s, Output x) { return ops::Squeeze(s, x); }) < kTol);
  CHECK(Check({2, 3, 4}, [](const Scope& s, Output x) {
          return ops::Transpose(s, x, {2, 0, 1});
        }) < kTol);
  CHECK(Check({2, 3}, [](const Scope& s, Output x) {
          return ops::Concat(s, {C(s, {2, 2}, 4), x, ops::Square(s, x)}, 1);
        }) < kTol);
  CHECK(Check({4, 3}, [](const Scope& s, Output x) {
          auto parts = ops::Split(s, x, 0, 2);
          return ops::Sub(s, ops::Square(s, parts[0]), parts[1]);
        }) < kTol);
  // Only one output of Split used: the other gets zeros.
  CHECK(Check({4, 3}, [](const Scope& s, Output x) { return ops::Split(s, x, 1, 3)[2]; }) < kTol);
  CHECK(Check({4, 5}, [](const Scope& s, Output x) {
          return ops::Slice(s, x, {1, 2}, {2, -1});
        }) < kTol);
  CHECK(Check({5, 3}, [](const Scope& s, Output x) {
          return ops::Gather(s, x, ops::Const(s, Tensor::FromVector<int32_t>({4, 0, 4, 2})));
        }) < kTol);
  // Through float32 and back: linear, so a large step keeps float rounding out of the difference.
  CHECK(Check(
            {3, 2},
            [](const Scope& s, Output x) {
              return ops::Cast(s, ops::Cast(s, x, DT_FLOAT), DT_DOUBLE);
            },
            -1, 1, 1e-2) < 1e-4);
}

TEST_CASE("The gradient seed is colocated with its y", "[gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root.WithDevice("/cpu:0").WithOpName("x"), 3.f);
  Output y = ops::Square(root.WithDevice("/cpu:1").WithOpName("y"), x);
  std::vector<Output> dx = Gradients(root, {y}, {x});
  Node* seed = g.FindNode("gradients/y_grad_y");
  REQUIRE(seed != nullptr);
  SessionOptions o;
  o.device_count["CPU"] = 2;
  Session sess(g, o);
  CHECK(sess.Run({dx[0]})[0].scalar<float>() == 6.f);
  CHECK(sess.DevicePlacement().at(seed->name()) == "/job:localhost/replica:0/task:0/device:CPU:1");
}

}  // namespace
}  // namespace pf::gradients_test
