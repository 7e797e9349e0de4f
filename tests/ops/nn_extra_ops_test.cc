// Relu6, LeakyRelu, Softplus (and their gradient ops), Pad / PadGrad and Dropout against naive
// references written here, finite-difference gradient checks in double, and their errors.
#include <cmath>
#include <functional>

#include "tests/testing/test_util.h"

namespace pf::nn_extra_ops_test {
namespace {

using Catch::Matchers::Contains;
using testing::MaxAbsDiff;
using testing::RandomDoubleTensor;
using testing::RandomTensor;
using testing::RunOne;

using Ref = std::function<double(double)>;

// f applied to every element, in t's dtype.
Tensor Map(const Tensor& t, const Ref& f) {
  Tensor out(t.dtype(), t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (t.dtype() == DT_DOUBLE) {
      out.data<double>()[i] = f(t.data<double>()[i]);
    } else {
      out.data<float>()[i] = static_cast<float>(f(t.data<float>()[i]));
    }
  }
  return out;
}

double Relu6Ref(double x) { return std::min(std::max(x, 0.0), 6.0); }
double SoftplusRef(double x) {
  return static_cast<double>(std::log1p(std::exp(static_cast<long double>(x))));
}

// ---- activations ----

TEST_CASE("Relu6, LeakyRelu, Softplus match naive references", "[ops][nn][nnextra]") {
  struct Act {
    const char* name;
    std::function<Output(const Scope&, Output)> build;
    Ref ref;
  };
  const std::vector<Act> acts = {
      {"Relu6", [](const Scope& s, Output x) { return ops::Relu6(s, x); }, Relu6Ref},
      {"LeakyRelu default alpha", [](const Scope& s, Output x) { return ops::LeakyRelu(s, x); },
       [](double x) { return x > 0 ? x : static_cast<double>(0.2f) * x; }},
      {"LeakyRelu alpha 0.01", [](const Scope& s, Output x) { return ops::LeakyRelu(s, x, 0.01f); },
       [](double x) { return x > 0 ? x : static_cast<double>(0.01f) * x; }},
      {"Softplus", [](const Scope& s, Output x) { return ops::Softplus(s, x); }, SoftplusRef},
  };
  for (const Act& a : acts) {
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 5}, Shape{2, 3, 17}}) {
      INFO(a.name << " " << shape.ToString());
      Graph g;
      Scope root = Scope::Root(&g);
      Tensor xf = RandomTensor(shape, 5, -9.f, 9.f);
      Tensor xd = RandomDoubleTensor(shape, 6, -9, 9);
      Output yf = a.build(root, ops::Const(root, xf));
      Output yd = a.build(root, ops::Const(root, xd));
      CHECK(yf.shape() == shape);
      Session sess(g);
      auto out = sess.Run({yf, yd});
      CHECK(MaxAbsDiff(out[0], Map(xf, a.ref)) <= 1e-6 * 9);
      CHECK(MaxAbsDiff(out[1], Map(xd, a.ref)) <= 1e-14 * 9);
    }
  }
}

TEST_CASE("Softplus is finite and exact at large magnitudes", "[ops][nn][nnextra]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const std::vector<float> xs = {-1000.f, -100.f, -30.f, -1e-3f, 0.f, 1e-3f, 30.f, 100.f, 1000.f};
  Tensor x = Tensor::FromVector<float>(xs, {9});
  Tensor y = RunOne(g, ops::Softplus(root, ops::Const(root, x)));
  for (int i = 0; i < 9; ++i) {
    INFO("x = " << xs[i]);
    const double want = SoftplusRef(xs[i]);
    const double got = y.data<float>()[i];
    CHECK(std::isfinite(got));
    CHECK(std::abs(got - want) <= 1e-6 * std::max(1.0, std::abs(want)));
  }
  CHECK(y.data<float>()[8] == 1000.f);  // x + log1p(e^-1000): no overflow to inf
  CHECK(y.data<float>()[1] > 0.f);      // e^-100 is a float denormal, not 0 - underflowed
}

TEST_CASE("Relu6Grad, LeakyReluGrad, SoftplusGrad take the features", "[ops][nn][nnextra]") {
  Graph g;
  Scope root = Scope::Root(&g);
  // Features on the kinks (0, 6) and around them: the kinks get the zero subgradient, as in TF.
  const std::vector<double> xs = {-2, -1e-9, 0, 1e-9, 3, 6 - 1e-9, 6, 6 + 1e-9, 9};
  Tensor x = Tensor::FromVector<double>(xs, {9});
  Tensor gr = RandomDoubleTensor({9}, 11, 0.5, 1.5);
  Output xc = ops::Const(root, x), gc = ops::Const(root, gr);
  Output dx6 = Gradients(root, {ops::Sum(root, ops::Mul(root, ops::Relu6(root, xc), gc))}, {xc})[0];
  Output dxl = Gradients(root, {ops::Sum(root, ops::Mul(root, ops::LeakyRelu(root, xc, 0.3f), gc))},
                         {xc})[0];
  Output dxs =
      Gradients(root, {ops::Sum(root, ops::Mul(root, ops::Softplus(root, xc), gc))}, {xc})[0];
  CHECK(dx6.node->op() == "Relu6Grad");
  CHECK(dxl.node->op() == "LeakyReluGrad");
  CHECK(dxs.node->op() == "SoftplusGrad");
  CHECK(dxl.node->attr<float>("alpha") == 0.3f);
  Session sess(g);
  auto out = sess.Run({dx6, dxl, dxs});
  for (int i = 0; i < 9; ++i) {
    INFO("x = " << xs[i]);
    const double gi = gr.data<double>()[i];
    CHECK(out[0].data<double>()[i] == (xs[i] > 0 && xs[i] < 6 ? gi : 0.0));
    CHECK(out[1].data<double>()[i] == (xs[i] > 0 ? gi : gi * static_cast<double>(0.3f)));
    CHECK(out[2].data<double>()[i] == Approx(gi / (1 + std::exp(-xs[i]))).epsilon(1e-14));
  }
}

constexpr double kTol = 1e-6;  // float64, delta 1e-6

double Check(const Shape& x_shape, const std::function<Output(const Scope&, Output)>& build,
             double lo, double hi, uint32_t seed = 3) {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, x_shape);
  Output y = build(root, x);
  REQUIRE(y.shape().IsFullyDefined());
  Tensor x0 = RandomDoubleTensor(x_shape, seed, lo, hi);
  return ComputeGradientError(root, x, x_shape, y, y.shape(), &x0);
}

// The gradient op `op`(gradients, features), with LeakyReluGrad's alpha 0.1.
Output GradOp(const Scope& s, const char* op, Output gradients, Output features) {
  NodeBuilder b(s, op);
  b.Input(gradients).Input(features);
  if (std::string(op) == "LeakyReluGrad") b.Attr("alpha", 0.1f);
  return Output(b.Finalize(), 0);
}

TEST_CASE("Gradient check: Relu6, LeakyRelu, Softplus and their gradient ops",
          "[ops][nn][nnextra][gradients]") {
  using Fn = std::function<Output(const Scope&, Output)>;
  const std::vector<std::tuple<const char*, const char*, Fn>> acts = {
      {"Relu6", "Relu6Grad", [](const Scope& s, Output x) { return ops::Relu6(s, x); }},
      {"LeakyRelu", "LeakyReluGrad",
       [](const Scope& s, Output x) { return ops::LeakyRelu(s, x, 0.1f); }},
      {"Softplus", "SoftplusGrad", [](const Scope& s, Output x) { return ops::Softplus(s, x); }},
  };
  for (const auto& [name, grad_op, act] : acts) {
    INFO(name);
    // First order, over both sides of every kink ([-2, 8] straddles 0 and 6).
    CHECK(Check({4, 5}, act, -2, 8) < kTol);
    // Second order: the gradient op's own gradient, with respect to the features and to the
    // incoming gradient.
    const char* op = grad_op;
    Fn wrt_features = [op](const Scope& s, Output x) {
      return GradOp(s, op, ops::Const(s, RandomDoubleTensor({4, 5}, 21, 0.5, 1.5)), x);
    };
    CHECK(Check({4, 5}, wrt_features, -2, 8) < kTol);
    Fn wrt_gradients = [op](const Scope& s, Output gr) {
      return GradOp(s, op, gr, ops::Const(s, RandomDoubleTensor({4, 5}, 22, -2, 8)));
    };
    CHECK(Check({4, 5}, wrt_gradients, -1, 1) < kTol);
  }
  // Softplus far from 0, where a naive log(1 + e^x) would lose its derivative.
  CHECK(Check(
            {6}, [](const Scope& s, Output x) { return ops::Softplus(s, x); }, -30, 30) < kTol);
}

TEST_CASE("Activation gradient ops reject mismatched shapes", "[ops][nn][nnextra][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, RandomTensor({2, 3}, 1)),
         b = ops::Const(root, RandomTensor({3, 2}, 2));
  for (const char* op : {"Relu6Grad", "LeakyReluGrad", "SoftplusGrad"}) {
    INFO(op);
    CHECK_THROWS_WITH(
        NodeBuilder(root, op).Input(a).Input(b).Finalize(),
        Contains(std::string(op) + ": gradients and features must have the same shape, got [2,3] "
                                   "and [3,2]"));
  }
}

// ---- Pad ----

// Naive Pad of a float tensor: every output multi-index, looked up in the input.
Tensor NaivePad(const Tensor& x, const std::vector<std::pair<int32_t, int32_t>>& p) {
  Shape out_shape;
  for (int d = 0; d < x.rank(); ++d) out_shape.AddDim(x.dim(d) + p[d].first + p[d].second);
  Tensor out(DT_FLOAT, out_shape);
  std::vector<int64_t> idx(x.rank(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t src = 0;
    bool inside = true;
    for (int d = 0; d < x.rank(); ++d) {
      const int64_t j = idx[d] - p[d].first;
      inside = inside && j >= 0 && j < x.dim(d);
      src = src * x.dim(d) + j;
    }
    out.data<float>()[i] = inside ? x.data<float>()[src] : 0.f;
    for (int d = x.rank() - 1; d >= 0; --d) {
      if (++idx[d] < out_shape.dim(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

TEST_CASE("Pad matches a naive reference", "[ops][array][nnextra]") {
  using P = std::vector<std::pair<int32_t, int32_t>>;
  const std::vector<std::pair<Shape, P>> cases = {
      {{}, {}},
      {{5}, {{2, 3}}},
      {{5}, {{0, 0}}},
      {{3, 4}, {{1, 0}, {0, 2}}},
      {{3, 4}, {{0, 0}, {3, 3}}},
      {{2, 3, 5}, {{1, 1}, {2, 0}, {0, 1}}},
      {{2, 5, 5, 3}, {{0, 0}, {1, 2}, {2, 1}, {0, 0}}},  // NHWC spatial padding
      {{2, 3, 5, 5}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}}},  // NCHW
      {{2, 0, 3}, {{1, 0}, {1, 1}, {0, 2}}},             // an empty input
      {{1, 1, 1, 1, 1, 2}, {{1, 0}, {0, 1}, {0, 0}, {1, 1}, {0, 0}, {2, 1}}},
  };
  for (const auto& [shape, p] : cases) {
    INFO(shape.ToString());
    Graph g;
    Scope root = Scope::Root(&g);
    Tensor x = RandomTensor(shape, 9);
    Tensor want = NaivePad(x, p);
    Output y = ops::Pad(root, ops::Const(root, x), p);
    CHECK(y.shape() == want.shape());  // from the constant paddings, at build time
    // Paddings fed at run time: the shape function runs again with their value.
    Output pads = ops::Placeholder(root, DT_INT64, Shape{-1, 2});
    Output y2 = ops::Pad(root, ops::Const(root, x), pads);
    CHECK(y2.shape().rank() == shape.rank());
    std::vector<int64_t> flat;
    for (auto [b, a] : p) flat.insert(flat.end(), {b, a});
    Session sess(g);
    auto out = sess.Run(
        {{pads, Tensor::FromVector<int64_t>(flat, {static_cast<int64_t>(p.size()), 2})}}, {y, y2});
    CHECK(out[0].BitwiseEqual(want));
    CHECK(out[1].BitwiseEqual(want));
  }
}

TEST_CASE("Pad moves int32 and double elements", "[ops][array][nnextra]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor xi = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor xd = Tensor::FromVector<double>({1.5, -2.5}, {2});
  Session sess(g);
  auto out = sess.Run({ops::Pad(root, ops::Const(root, xi), {{1, 0}, {0, 1}}),
                       ops::Pad(root, ops::Const(root, xd), {{1, 2}})});
  CHECK(out[0].BitwiseEqual(
      Tensor::FromVector<int32_t>({0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0}, {3, 4})));
  CHECK(out[1].BitwiseEqual(Tensor::FromVector<double>({0, 1.5, -2.5, 0, 0}, {5})));
}

TEST_CASE("Pad's gradient is PadGrad, the centre of the gradient", "[ops][array][nnextra]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, 3});
  Output y = ops::Pad(root, x, {{1, 2}, {0, 1}});
  CHECK(y.shape() == Shape{-1, 4});
  Output w = ops::Placeholder(root, DT_FLOAT, {-1, 4});
  Output dx = Gradients(root, {ops::Sum(root, ops::Mul(root, y, w))}, {x})[0];
  CHECK(dx.node->op() == "PadGrad");
  CHECK(dx.shape() == Shape{-1, 3});
  Tensor wv = RandomTensor({5, 4}, 3);
  Tensor got = Session(g).Run({{x, RandomTensor({2, 3}, 4)}, {w, wv}}, {dx})[0];
  REQUIRE(got.shape() == Shape{2, 3});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      CHECK(got.data<float>()[i * 3 + j] == wv.data<float>()[(i + 1) * 4 + j]);
}

TEST_CASE("Gradient check: Pad and PadGrad", "[ops][array][nnextra][gradients]") {
  CHECK(Check(
            {2, 3, 4},
            [](const Scope& s, Output x) {
              return ops::Pad(s, x, {{1, 0}, {2, 1}, {0, 3}});
            },
            -1, 1) < kTol);
  // PadGrad's own gradient is Pad: second order through Pad's gradient.
  CHECK(Check(
            {5, 6},
            [](const Scope& s, Output gr) {
              return NodeBuilder(s, "PadGrad")
                  .Input(gr)
                  .Input(ops::Const(s, Tensor::FromVector<int32_t>({1, 2, 0, 3}, {2, 2})))
                  .Finalize();
            },
            -1, 1) < kTol);
}

TEST_CASE("Pad rejects bad paddings", "[ops][array][nnextra][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, RandomTensor({4, 5}, 1));
  CHECK_THROWS_WITH(ops::Pad(root, x, ops::Const(root, Tensor::FromVector<int32_t>({1, 1}, {2}))),
                    Contains("paddings must be a matrix with 2 columns: [2]"));
  CHECK_THROWS_WITH(
      ops::Pad(root, x, ops::Const(root, Tensor::FromVector<int32_t>({1, 1, 1}, {1, 3}))),
      Contains("paddings must be a matrix with 2 columns: [1,3]"));
  CHECK_THROWS_WITH(ops::Pad(root, x, {{1, 1}, {0, 0}, {2, 2}}),
                    Contains("The first dimension of paddings must be the rank of inputs: "
                             "paddings [3,2], inputs [4,5]"));
  CHECK_THROWS_WITH(ops::Pad(root, x, {{1, 1}, {-1, 2}}),
                    Contains("Paddings must be non-negative: -1 2"));
  // Negative paddings that only the kernel sees.
  Output pads = ops::Placeholder(root, DT_INT32, {2, 2});
  Output y = ops::Pad(root, x, pads);
  CHECK(y.shape() == Shape{-1, -1});
  Session sess(g);
  CHECK_THROWS_WITH(sess.Run({{pads, Tensor::FromVector<int32_t>({0, 0, 3, -4}, {2, 2})}}, {y}),
                    Contains("Paddings must be non-negative: 3 -4"));
  CHECK_THROWS_WITH(NodeBuilder(root, "PadGrad")
                        .Input(x)
                        .Input(ops::Const(root, Tensor::FromVector<int32_t>({1, 1, 3, 3}, {2, 2})))
                        .Finalize(),
                    Contains("PadGrad: gradient [4,5] is smaller than the paddings (3, 3) of "
                             "dimension 1"));
}

// ---- Dropout ----

TEST_CASE("Dropout keeps exactly where RandomUniform with the same seed is >= rate",
          "[ops][nn][nnextra][random]") {
  for (DType dt : {DT_FLOAT, DT_DOUBLE}) {
    for (float rate : {0.1f, 0.5f, 0.9f}) {
      INFO(DTypeName(dt) << " rate " << rate);
      Graph g;
      Scope root = Scope::Root(&g);
      const Shape shape{37, 51};
      Tensor xf = RandomTensor(shape, 4, 0.5f, 1.5f);  // nonzero, so output zeros mean dropped
      Output x = ops::Cast(root, ops::Const(root, xf), dt);
      Output y = ops::Dropout(root, x, rate, 42);
      Output mask(y.node, 1);
      Output u = ops::RandomUniform(root, shape, DT_FLOAT, 42);
      CHECK(y.shape() == shape);
      CHECK(mask.shape() == shape);
      CHECK(mask.dtype() == dt);
      Session sess(g);
      // Two calls: the second draw (call 1) must still agree with RandomUniform's second call.
      for (int call = 0; call < 2; ++call) {
        INFO("call " << call);
        auto out = sess.Run({x, y, mask, u});
        const double scale = 1.0 / (1.0 - static_cast<double>(rate));
        int64_t mismatches = 0, bad_values = 0;
        for (int64_t i = 0; i < shape.num_elements(); ++i) {
          const bool kept = out[3].data<float>()[i] >= rate;
          const double m = dt == DT_DOUBLE ? out[2].data<double>()[i] : out[2].data<float>()[i];
          const double xi = dt == DT_DOUBLE ? out[0].data<double>()[i] : out[0].data<float>()[i];
          const double yi = dt == DT_DOUBLE ? out[1].data<double>()[i] : out[1].data<float>()[i];
          if ((m != 0) != kept) ++mismatches;
          if (std::abs(m - (kept ? scale : 0.0)) > 1e-6 * scale ||
              std::abs(yi - xi * m) > 1e-6 * scale)
            ++bad_values;
        }
        CHECK(mismatches == 0);
        CHECK(bad_values == 0);
      }
    }
  }
}

TEST_CASE("Dropout keeps a binomial fraction and scales by 1/(1-rate)",
          "[ops][nn][nnextra][random]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const int64_t n = 200000;
  const float rate = 0.3f;
  Output x = ops::Const(root, Tensor::FromVector<float>(std::vector<float>(n, 2.f), {n}));
  Output y = ops::Dropout(root, x, rate, 7);
  Output other = ops::Dropout(root, x, rate, 8);
  Session sess(g);
  auto out = sess.Run({y, Output(y.node, 1), other});
  int64_t kept = 0, differ = 0;
  const float scale = 1.f / (1.f - rate);
  for (int64_t i = 0; i < n; ++i) {
    const float v = out[0].data<float>()[i];
    if (v != 0.f) {
      ++kept;
      REQUIRE(v == Approx(2.f * scale).epsilon(1e-6));
      REQUIRE(out[1].data<float>()[i] == Approx(scale).epsilon(1e-6));
    } else {
      REQUIRE(out[1].data<float>()[i] == 0.f);
    }
    if ((v != 0.f) != (out[2].data<float>()[i] != 0.f)) ++differ;
  }
  // Binomial(n, 0.7): mean 140000, standard deviation ~205; 6 sigma.
  const double mean = n * (1.0 - rate), sd = std::sqrt(n * rate * (1.0 - rate));
  CHECK(std::abs(kept - mean) < 6 * sd);
  // Another seed draws another mask: independent masks differ in 2 * 0.3 * 0.7 of the places.
  CHECK(std::abs(differ - n * 2 * rate * (1 - rate)) < 6 * std::sqrt(n * 0.42 * 0.58));
  // The sum is unbiased: E[y] = x.
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += out[0].data<float>()[i];
  CHECK(std::abs(sum / n - 2.0) < 6 * 2.0 * scale * sd / n);
}

TEST_CASE("Dropout with rate 0 is the identity; the same seeds draw the same mask",
          "[ops][nn][nnextra][random]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor xv = RandomTensor({9, 10}, 2);
  Output x = ops::Const(root, xv);
  Output y0 = ops::Dropout(root, x, 0.f, 3);
  Output y = ops::Dropout(root, x, 0.5f, 3);
  std::vector<Tensor> first = Session(g).Run({y0, y});
  std::vector<Tensor> second = Session(g).Run({y0, y});  // a new session: call 0 again
  CHECK(first[0].BitwiseEqual(xv));
  CHECK(first[1].BitwiseEqual(second[1]));
}

TEST_CASE("Dropout's gradient is the incoming gradient times the mask",
          "[ops][nn][nnextra][gradients]") {
  // The draw changes on every call, so a finite-difference check (several runs) cannot apply:
  // the gradient is checked exactly, in the same run as the mask it must use.
  for (DType dt : {DT_FLOAT, DT_DOUBLE}) {
    INFO(DTypeName(dt));
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Cast(root, ops::Const(root, RandomTensor({13, 7}, 5)), dt);
    Output w = ops::Cast(root, ops::Const(root, RandomTensor({13, 7}, 6, 0.5f, 1.5f)), dt);
    Output y = ops::Dropout(root, x, 0.4f, 99);
    Output dx = Gradients(root, {ops::Sum(root, ops::Mul(root, y, w))}, {x})[0];
    Session sess(g);
    for (int call = 0; call < 2; ++call) {
      auto out = sess.Run({dx, Output(y.node, 1), w});
      Tensor want = out[2].Clone();
      for (int64_t i = 0; i < want.num_elements(); ++i) {
        if (dt == DT_DOUBLE) {
          want.data<double>()[i] *= out[1].data<double>()[i];
        } else {
          want.data<float>()[i] *= out[1].data<float>()[i];
        }
      }
      CHECK(out[0].BitwiseEqual(want));
    }
  }
}

TEST_CASE("Dropout rejects a rate that is negative or at least 1 at build time",
          "[ops][nn][nnextra][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, RandomTensor({3}, 1));
  CHECK_THROWS_WITH(ops::Dropout(root, x, 1.f),
                    Contains("rate must be a scalar tensor or a float in the range [0, 1), got 1"));
  CHECK_THROWS_WITH(
      ops::Dropout(root, x, -0.5f),
      Contains("rate must be a scalar tensor or a float in the range [0, 1), got -0.5"));
  CHECK_THROWS_WITH(ops::Dropout(root, ops::Const(root, Tensor::Scalar<int32_t>(1)), 0.5f),
                    Contains("not in the list of allowed values"));
}

}  // namespace
}  // namespace pf::nn_extra_ops_test
