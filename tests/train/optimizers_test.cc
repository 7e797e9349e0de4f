// Losses, optimizers, schedules and moving averages against hand-computed values.
#include <spdlog/sinks/ostream_sink.h>

#include <cmath>
#include <functional>
#include <memory>
#include <sstream>

#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::optimizers_test {
namespace {

using Catch::Matchers::Contains;

Tensor Rand(const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  return testing::RandomDoubleTensor(s, seed, lo, hi);
}

double GradErr(const Shape& shape, const std::function<Output(const Scope&, Output)>& build) {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_DOUBLE, shape);
  Output y = build(root, x);
  Tensor x0 = Rand(shape, 5, -2, 2);
  return ComputeGradientError(root, x, shape, y, y.shape(), &x0);
}

TEST_CASE("Softmax cross-entropy losses: values, gradients, stability", "[train][losses]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor logits = Tensor::FromVector<float>({1, 2, 3, 1e4f, -1e4f, 0}, {2, 3});
  Tensor labels = Tensor::FromVector<float>({0, 0, 1, 0, 1, 0}, {2, 3});
  auto [loss, backprop] =
      ops::SoftmaxCrossEntropyWithLogits(root, ops::Const(root, logits), ops::Const(root, labels));
  auto [sloss, sback] = ops::SparseSoftmaxCrossEntropyWithLogits(
      root, ops::Const(root, logits), ops::Const(root, Tensor::FromVector<int32_t>({2, 1})));
  Session sess(g);
  auto out = sess.Run({loss, backprop, sloss, sback});
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3;
  CHECK(out[0].data<float>()[0] == Approx(l0).epsilon(1e-6));
  CHECK(out[0].data<float>()[1] == Approx(2e4).epsilon(1e-6));  // finite at logits of +-1e4
  CHECK(out[2].BitwiseEqual(out[0]));
  CHECK(out[3].BitwiseEqual(out[1]));
  for (float v : out[1].flat<float>()) CHECK(std::isfinite(v));
  CHECK(out[1].data<float>()[2] ==
        Approx(std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1).epsilon(1e-6));
  CHECK_THROWS_WITH(
      sess.Run({ops::SparseSoftmaxCrossEntropyWithLogits(
                    root, ops::Const(root, logits),
                    ops::Const(root, Tensor::FromVector<int32_t>({2, 3})))
                    .first}),
      Contains("Received a label value of 3 which is outside the valid range of [0, 3)."));
  // Gradients against finite differences.
  Tensor onehot = Tensor::FromVector<double>({0, 1, 0, 0.3, 0.3, 0.4}, {2, 3});
  CHECK(GradErr({2, 3}, [&](const Scope& s, Output x) {
          return ops::SoftmaxCrossEntropyWithLogits(s, x, ops::Const(s, onehot)).first;
        }) < 1e-6);
  CHECK(GradErr({2, 3}, [&](const Scope& s, Output x) {
          return ops::SparseSoftmaxCrossEntropyWithLogits(
                     s, x, ops::Const(s, Tensor::FromVector<int64_t>({1, 0})))
              .first;
        }) < 1e-6);
}

TEST_CASE("Sigmoid cross-entropy, MSE and L2 loss", "[train][losses]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = Tensor::FromVector<float>({-1e4f, 0.f, 2.f, 1e4f});
  Tensor z = Tensor::FromVector<float>({1, 0.5f, 0, 0});
  Output sx = ops::SigmoidCrossEntropyWithLogits(root, ops::Const(root, x), ops::Const(root, z));
  Tensor p = Tensor::FromVector<float>({1, 2}, {2, 1});
  Tensor t = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  Output mse = ops::MeanSquaredError(root, ops::Const(root, p), ops::Const(root, t));
  Output l2 = ops::L2Loss(root, ops::Const(root, t));
  Session sess(g);
  auto out = sess.Run({sx, mse, l2});
  CHECK(out[0].data<float>()[0] == Approx(1e4));
  CHECK(out[0].data<float>()[1] == Approx(std::log(2.0)));
  CHECK(out[0].data<float>()[2] == Approx(2 + std::log1p(std::exp(-2.0))));
  CHECK(out[0].data<float>()[3] == Approx(1e4));
  // ((1-0)^2 + (1-1)^2 + (1-2)^2 + (2-3)^2 + (2-4)^2 + (2-5)^2) / 6 = 16 / 6
  CHECK(out[1].scalar<float>() == Approx(16.0 / 6));
  CHECK(out[2].scalar<float>() == Approx(55.0 / 2));
  Tensor zd = Rand({3, 4}, 9, 0, 1);
  CHECK(GradErr({3, 4}, [&](const Scope& s, Output v) {
          return ops::SigmoidCrossEntropyWithLogits(s, v, ops::Const(s, zd));
        }) < 1e-6);
  CHECK(GradErr({3, 1}, [&](const Scope& s, Output v) {
          return ops::MeanSquaredError(s, v, ops::Const(s, Rand({3, 4}, 2)));
        }) < 1e-6);
  CHECK(GradErr({3, 4}, [&](const Scope& s, Output v) {
          return ops::MeanSquaredError(s, ops::Const(s, Rand({3, 1}, 2)), v);
        }) < 1e-6);
  CHECK(GradErr({3, 4}, [&](const Scope& s, Output v) {
          return ops::MeanSquaredError(s, v, ops::Const(s, Rand({3, 4}, 3)));
        }) < 1e-6);
  CHECK(GradErr({3, 1}, [&](const Scope& s, Output v) {
          return ops::MeanSquaredError(s, ops::Const(s, Rand({3, 4}, 2)), v);
        }) < 1e-6);
  CHECK(GradErr({2, 1, 4}, [&](const Scope& s, Output v) {
          return ops::MeanSquaredError(s, v, ops::Const(s, Rand({3, 1}, 2)));
        }) < 1e-6);
  CHECK(GradErr({3, 4}, [](const Scope& s, Output v) { return ops::L2Loss(s, v); }) < 1e-6);
}

using WarningCapture = testing::LogCapture;  // warnings, and info lines around them

TEST_CASE("Optimizers skip variables whose every gradient path is stopped, with a warning",
          "[train][optimizers]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable w = GetVariable(root, "w", {2}, init::Constant(1));
  Variable frozen = GetVariable(root, "frozen", {2}, init::Constant(3));
  Output loss = ops::Sum(root, ops::Mul(root, w.value(), ops::StopGradient(root, frozen.value())));
  train::GradientDescent opt(0.5);
  auto gv = opt.ComputeGradients(root, loss, {w, frozen});
  REQUIRE(gv.size() == 2);
  CHECK(gv[0].first.node != nullptr);
  CHECK(gv[1].first.node == nullptr);  // TensorFlow's None, not zeros
  Operation step;
  {
    WarningCapture log;
    step = opt.ApplyGradients(root, gv);
    CHECK(log.Text() ==
          "Gradients do not exist for variables [frozen] when minimizing the loss.\n");
  }
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  sess.Run({}, {}, {step});
  CHECK(sess.Run({w.value()})[0].DebugString() == "Tensor<float [2]> [-0.5, -0.5]");
  CHECK(sess.Run({frozen.value()})[0].DebugString() == "Tensor<float [2]> [3, 3]");
  // Only when no variable has a gradient is it an error.
  Output stopped = ops::Sum(root, ops::StopGradient(root, w.value()));
  CHECK_THROWS_WITH(opt.Minimize(root, stopped, nullptr, {w, frozen}),
                    Contains("No gradients provided for any variable"));
}

// One optimizer step on w = [1, 2] with loss = sum(w * c), so the gradient is c = [0.5, -1].
std::vector<float> OneStep(train::Optimizer& opt, int steps = 1,
                           std::vector<std::string>* slot_names = nullptr) {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable w = GetVariable(root.WithVariableScope("layer"), "w", {2}, init::Constant(0));
  Operation set = ops::Assign(root, w.ref(), ops::Const(root, Tensor::FromVector<float>({1, 2})));
  Output loss = ops::Sum(
      root, ops::Mul(root, w.value(), ops::Const(root, Tensor::FromVector<float>({0.5f, -1}))));
  Variable step = train::GetOrCreateGlobalStep(root);
  Operation train_op = opt.Minimize(root, loss, &step);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  sess.Run({}, {}, {set});
  for (int i = 0; i < steps; ++i) sess.Run({}, {}, {train_op});
  CHECK(sess.Run({step.value()})[0].scalar<int64_t>() == steps);
  if (slot_names) {
    for (const Variable& v : GlobalVariables(&g)) slot_names->push_back(v.name());
  }
  auto t = sess.Run({w.value()})[0];
  return {t.data<float>()[0], t.data<float>()[1]};
}

TEST_CASE("Optimizers: one step against hand-computed values; slots named and colocated",
          "[train][optimizers]") {
  const double g0 = 0.5, g1 = -1;
  {
    train::GradientDescent opt(0.1);
    auto w = OneStep(opt);
    CHECK(w[0] == Approx(1 - 0.1 * g0));
    CHECK(w[1] == Approx(2 - 0.1 * g1));
  }
  {
    train::Momentum opt(0.1, 0.9);
    auto w = OneStep(opt, 2);  // accum: g, then 0.9 g + g
    CHECK(w[0] == Approx(1 - 0.1 * g0 - 0.1 * 1.9 * g0));
    train::Momentum nesterov(0.1, 0.9, true);
    auto wn = OneStep(nesterov);  // var -= lr * (g + 0.9 * g)
    CHECK(wn[0] == Approx(1 - 0.1 * 1.9 * g0));
  }
  {
    train::Adam opt(0.1);
    std::vector<std::string> names;
    auto w = OneStep(opt, 1, &names);
    // Step 1: m = 0.1 g, v = 0.001 g^2, lr_t = 0.1 sqrt(1-0.999)/(1-0.9), update = lr_t m /
    // (sqrt(v)+eps)
    const double lr_t = 0.1 * std::sqrt(1 - 0.999) / (1 - 0.9);
    CHECK(w[0] == Approx(1 - lr_t * 0.1 * g0 / (std::sqrt(0.001 * g0 * g0) + 1e-8)));
    CHECK(w[1] == Approx(2 - lr_t * 0.1 * g1 / (std::sqrt(0.001 * g1 * g1) + 1e-8)));
    CHECK(std::find(names.begin(), names.end(), "layer/w/Adam") != names.end());
    CHECK(std::find(names.begin(), names.end(), "layer/w/Adam_1") != names.end());
    CHECK(std::find(names.begin(), names.end(), "beta1_power") != names.end());
  }
  {
    train::RMSProp opt(0.1, 0.9, 0.0, 1e-10);
    auto w = OneStep(opt);  // ms = 1 + (g^2 - 1) * 0.1; var -= lr g / sqrt(ms)
    CHECK(w[0] == Approx(1 - 0.1 * g0 / std::sqrt(1 + (g0 * g0 - 1) * 0.1)));
  }
  {
    train::AdaGrad opt(0.1, 0.1);
    auto w = OneStep(opt);  // accum = 0.1 + g^2
    CHECK(w[1] == Approx(2 - 0.1 * g1 / std::sqrt(0.1 + g1 * g1)));
  }
}

TEST_CASE("A second ApplyGradients on one slot optimizer reuses its slots", "[train][optimizers]") {
  using Make = std::function<std::unique_ptr<train::Optimizer>()>;
  const std::vector<std::pair<std::string, Make>> optimizers = {
      {"Momentum", [] { return std::make_unique<train::Momentum>(0.1, 0.9); }},
      {"Adam", [] { return std::make_unique<train::Adam>(0.1); }},
      {"RMSProp", [] { return std::make_unique<train::RMSProp>(0.1, 0.9, 0.5); }},
      {"AdaGrad", [] { return std::make_unique<train::AdaGrad>(0.1); }},
  };
  for (const auto& [name, make_binding] : optimizers) {
    const Make& make = make_binding;  // clang 14 (sanitizer builds) cannot capture a binding
    INFO(name);
    // Two steps through two train ops (second ApplyGradients) against two steps of one op.
    auto two_steps = [&](bool second_op) {
      Graph g;
      Scope root = Scope::Root(&g);
      Variable w = GetVariable(
          root, "w", {2},
          [](const Scope& s, const Shape&, DType) {
            return ops::Const(s, Tensor::FromVector<double>({1, 2}));
          },
          DT_DOUBLE);
      Output loss = ops::Sum(
          root, ops::Mul(root, w.value(), ops::Const(root, Tensor::FromVector<double>({0.5, -1}))),
          {});
      std::unique_ptr<train::Optimizer> opt = make();
      Operation first = opt->Minimize(root, loss);
      const size_t vars = GlobalVariables(&g).size();
      Operation second = second_op ? opt->Minimize(root, loss) : first;
      CHECK(GlobalVariables(&g).size() == vars);  // no new slots
      Session sess(g);
      sess.Run({}, {}, {GlobalVariablesInitializer(root)});
      sess.Run({}, {}, {first});
      sess.Run({}, {}, {second});
      return sess.Run({w.value()})[0].ToVector<double>();
    };
    const std::vector<double> reference = two_steps(false), reused = two_steps(true);
    CHECK(reused == reference);
    CHECK(reused[0] != 1.0);
  }
}

TEST_CASE("Each update is one fused op per variable, colocated with its variable",
          "[train][optimizers]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable w = GetVariable(root.WithVariableScope("a").WithDevice("/cpu:0"), "w", {3});
  Variable b = GetVariable(root.WithVariableScope("a").WithDevice("/cpu:0"), "b", {3});
  Output loss = ops::Sum(root, ops::Square(root, ops::Add(root, w.value(), b.value())));
  train::Adam opt(0.01);
  opt.Minimize(root, loss);
  int applies = 0;
  for (Node* n : g.nodes()) {
    if (n->op() == "ApplyAdam") {
      ++applies;
      CHECK(n->requested_device() == "/device:CPU:0");
    }
  }
  CHECK(applies == 2);
  Variable m = FindVariable(&g, "a/w/Adam");
  REQUIRE(m.valid());
  CHECK(m.ref().node->requested_device() == "/device:CPU:0");
  CHECK_FALSE(m.trainable());
}

TEST_CASE("Learning-rate schedules, gradient clipping and moving averages", "[train]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable step = train::GetOrCreateGlobalStep(root);
  Output decayed = train::ExponentialDecay(root, 0.8, step, 10, 0.5, false);
  Output stair = train::ExponentialDecay(root, 0.8, step, 10, 0.5, true);
  Output piece = train::PiecewiseConstant(root, step, {5, 10}, {1.0, 0.5, 0.1});
  Output set_step =
      ops::Assign(root, step.ref(), ops::Placeholder(root.WithOpName("s"), DT_INT64, {}));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto at = [&](int64_t s) {
    sess.Run({{set_step.node->input(1), Tensor::Scalar<int64_t>(s)}}, {}, {set_step});
    return sess.Run({decayed, stair, piece});
  };
  auto v15 = at(15);
  CHECK(v15[0].scalar<float>() == Approx(0.8 * std::pow(0.5, 1.5)));
  CHECK(v15[1].scalar<float>() == Approx(0.8 * 0.5));
  CHECK(v15[2].scalar<float>() == Approx(0.1));
  CHECK(at(5)[2].scalar<float>() == Approx(1.0));
  CHECK(at(6)[2].scalar<float>() == Approx(0.5));

  Output g1 = ops::Const(root, Tensor::FromVector<float>({3, 4}));
  Output g2 = ops::Const(root, Tensor::FromVector<float>({12}));
  auto [clipped, norm] = train::ClipByGlobalNorm(root, {g1, Output(), g2}, 6.5);
  CHECK(clipped[1].node == nullptr);
  auto c = sess.Run({clipped[0], clipped[2], norm});
  CHECK(c[2].scalar<float>() == Approx(13));
  CHECK(c[0].data<float>()[0] == Approx(1.5));
  CHECK(c[1].data<float>()[0] == Approx(6));
}

TEST_CASE("ExponentialMovingAverage starts at the initial value and tracks updates", "[train]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "v", {2}, init::Constant(10));
  train::ExponentialMovingAverage ema(0.9);
  Operation update = ema.Apply(root, {v});
  Variable shadow = ema.Average(v);
  REQUIRE(shadow.valid());
  CHECK(shadow.name() == "v/ExponentialMovingAverage");
  Output set = ops::Assign(root, v.ref(), ops::Const(root, Tensor::FromVector<float>({0, 20})));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK(sess.Run({shadow.value()})[0].DebugString() == "Tensor<float [2]> [10, 10]");
  sess.Run({}, {}, {set});
  sess.Run({}, {}, {update});
  auto s = sess.Run({shadow.value()})[0];
  CHECK(s.data<float>()[0] == Approx(9));
  CHECK(s.data<float>()[1] == Approx(11));
}

// ApplyMovingAverage is TF's Sub, Mul and AssignSub in one pass: the same float operations in
// the same order, so the same bits, over steps with the num_updates warm-up decay.
TEST_CASE("ExponentialMovingAverage's fused update equals TF's three-op update bit for bit",
          "[train]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable step = train::GetOrCreateGlobalStep(root);
  Variable v = GetVariable(root, "v", {1000}, init::RandomUniform(-1, 1, 3));
  Variable manual = GetVariable(root, "manual", {1000}, init::Zeros());
  train::ExponentialMovingAverage ema(0.99, &step);
  Operation update = ema.Apply(root, {v});
  // TF's formulation, with the decay EMA itself computes.
  const Node* fused = g.FindNode("ExponentialMovingAverage/update_v");
  REQUIRE(fused != nullptr);
  CHECK(fused->op() == "ApplyMovingAverage");
  Output decay = fused->input(1);
  Output delta = ops::Mul(root, ops::Sub(root, ops::Const(root, 1.f), decay),
                          ops::Sub(root, manual.value(), v.value()));
  Operation manual_update = ops::AssignSub(root, manual.ref(), delta);
  Output noise = ops::RandomUniform(root, {1000}, DT_FLOAT, 5);
  Operation move = ops::AssignAdd(root, v.ref(), noise);
  Operation tick = ops::AssignAdd(root, step.ref(), ops::Const(root, Tensor::Scalar<int64_t>(1)));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  sess.Run({}, {}, {ops::Assign(root, manual.ref(), v.value())});
  for (int i = 0; i < 20; ++i) {
    sess.Run({}, {}, {move});
    sess.Run({}, {}, {update, manual_update});
    sess.Run({}, {}, {tick});
  }
  auto r = sess.Run({ema.Average(v).value(), manual.value()});
  int64_t differ = 0;
  for (int i = 0; i < 1000; ++i) differ += r[0].data<float>()[i] != r[1].data<float>()[i];
  CHECK(differ == 0);
}

}  // namespace
}  // namespace pf::optimizers_test
