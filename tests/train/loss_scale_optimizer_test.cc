// LossScaleOptimizer: skipped steps on Inf/NaN gradients, the scale's growth and shrinking, and
// updates equal to the wrapped optimizer's on the same (unscaled) gradients.
#include <cmath>
#include <limits>

#include "tests/testing/test_util.h"

namespace pf::loss_scale_optimizer_test {
namespace {

using Catch::Matchers::Contains;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// loss = sum(w * x) for a fed x: the gradient of w is x itself.
struct LinearModel {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2});
  Variable w = GetVariable(root, "w", {2}, init::Constant(1.0));
  Output loss = ops::Sum(root, ops::Mul(root, w.value(), x));
  Variable step = train::GetOrCreateGlobalStep(root);
};

TEST_CASE("LossScaleOptimizer skips a step with an Inf or NaN gradient and grows the scale",
          "[train][optimizers][loss_scale]") {
  LinearModel m;
  train::GradientDescent sgd(0.5);
  train::LossScaleOptimizer opt(sgd, {.initial_scale = 8, .growth_steps = 3, .multiplier = 2});
  Operation train_op = opt.Minimize(m.root, m.loss, &m.step);
  Session sess(m.g);
  sess.Run({}, {}, {GlobalVariablesInitializer(m.root)});
  auto step = [&](float x0, float x1) {
    sess.Run({{m.x, Tensor::FromVector<float>({x0, x1})}}, {}, {train_op});
    auto v = sess.Run({m.w.value(), opt.loss_scale().value(), opt.good_steps().value(),
                       opt.skipped_steps().value(), m.step.value()});
    return std::make_tuple(v[0].data<float>()[0], v[0].data<float>()[1], v[1].scalar<float>(),
                           v[2].scalar<int64_t>(), v[3].scalar<int64_t>(), v[4].scalar<int64_t>());
  };
  // w - 0.5 * x: the gradient reaches SGD unscaled.
  CHECK(step(1, 2) == std::make_tuple(0.5f, 0.f, 8.f, int64_t{1}, int64_t{0}, int64_t{1}));
  // Skipped: w, the global step and the good steps stay; the scale halves.
  CHECK(step(kInf, 1) == std::make_tuple(0.5f, 0.f, 4.f, int64_t{0}, int64_t{1}, int64_t{1}));
  CHECK(step(kNaN, 0) == std::make_tuple(0.5f, 0.f, 2.f, int64_t{0}, int64_t{2}, int64_t{1}));
  CHECK(step(1, 1) == std::make_tuple(0.f, -0.5f, 2.f, int64_t{1}, int64_t{2}, int64_t{2}));
  CHECK(step(1, 1) == std::make_tuple(-0.5f, -1.f, 2.f, int64_t{2}, int64_t{2}, int64_t{3}));
  // The third finite step in a row doubles the scale and starts counting again.
  CHECK(step(1, 1) == std::make_tuple(-1.f, -1.5f, 4.f, int64_t{0}, int64_t{2}, int64_t{4}));
}

TEST_CASE("LossScaleOptimizer's scale never falls below 1", "[train][optimizers][loss_scale]") {
  LinearModel m;
  train::GradientDescent sgd(0.5);
  train::LossScaleOptimizer opt(sgd, {.initial_scale = 2});
  Operation train_op = opt.Minimize(m.root, m.loss);
  Session sess(m.g);
  sess.Run({}, {}, {GlobalVariablesInitializer(m.root)});
  for (int i = 0; i < 3; ++i)
    sess.Run({{m.x, Tensor::FromVector<float>({kInf, 0})}}, {}, {train_op});
  auto v = sess.Run({opt.loss_scale().value(), opt.skipped_steps().value(), m.w.value()});
  CHECK(v[0].scalar<float>() == 1.f);
  CHECK(v[1].scalar<int64_t>() == 3);
  CHECK(v[2].data<float>()[0] == 1.f);
}

TEST_CASE("LossScaleOptimizer with Adam: a skipped step leaves the slots as they were",
          "[train][optimizers][loss_scale]") {
  // The same finite steps with Adam alone and through the loss scale (with non-finite steps
  // between them) give bitwise the same variable and slots: the scale is a power of two, so
  // scaling and unscaling the gradient is exact.
  const std::vector<std::vector<float>> finite = {{1, -2}, {0.25f, 3}, {-1, 0.5f}};
  auto run = [&](bool scaled) {
    LinearModel m;
    train::Adam adam(0.1);
    train::LossScaleOptimizer lso(adam);
    Operation train_op =
        scaled ? lso.Minimize(m.root, m.loss, &m.step) : adam.Minimize(m.root, m.loss, &m.step);
    Session sess(m.g);
    sess.Run({}, {}, {GlobalVariablesInitializer(m.root)});
    for (const auto& x : finite) {
      sess.Run({{m.x, Tensor::FromVector<float>(x)}}, {}, {train_op});
      if (scaled) sess.Run({{m.x, Tensor::FromVector<float>({kNaN, kInf})}}, {}, {train_op});
    }
    return sess.Run({m.w.value(), FindVariable(&m.g, "w/Adam").value(),
                     FindVariable(&m.g, "w/Adam_1").value(),
                     FindVariable(&m.g, "beta1_power").value(), m.step.value()});
  };
  std::vector<Tensor> plain = run(false), scaled = run(true);
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("fetch " << i);
    CHECK(scaled[i].BitwiseEqual(plain[i]));
  }
  CHECK(plain[4].scalar<int64_t>() == 3);
}

TEST_CASE("LossScaleOptimizer refuses a scale below 1, no growth interval or multiplier <= 1",
          "[train][optimizers][loss_scale]") {
  train::GradientDescent sgd(0.1);
  CHECK_THROWS_WITH(train::LossScaleOptimizer(sgd, {.initial_scale = 0.5}),
                    Contains("LossScaleOptimizer needs initial_scale >= 1"));
  CHECK_THROWS_WITH(train::LossScaleOptimizer(sgd, {.growth_steps = 0}), Contains("growth_steps"));
  CHECK_THROWS_WITH(train::LossScaleOptimizer(sgd, {.multiplier = 1}), Contains("multiplier > 1"));
}

}  // namespace
}  // namespace pf::loss_scale_optimizer_test
