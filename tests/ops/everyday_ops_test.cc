// The everyday ops of issue 33 (ops/everyday_ops.h), part 1: clipping, grouping, selection,
// Where, Abs/Sign, the Minimum/Maximum gradients, XwPlusB, OneHot with an axis and ArgMin,
// each against a naive loop or values worked out by hand, their gradients against finite
// differences (float64, error < 1e-6 unless said).
#include "placeflow/ops/everyday_ops.h"

#include <cmath>
#include <limits>

#include "tests/testing/test_util.h"

namespace pf::everyday_ops_test {
namespace {

using Catch::Matchers::Contains;
using testing::RandomDoubleTensor;
using testing::RandomTensor;
using testing::RunOne;

Tensor D(const std::vector<double>& v, const Shape& s) { return Tensor::FromVector(v, s); }

TEST_CASE("ClipByValue clips with scalar and per-element bounds; errors name the shapes",
          "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({3, 4}, 1, -2.f, 2.f);
  Tensor lo = RandomTensor({3, 4}, 2, -1.f, 0.f);
  Output c1 =
      ops::ClipByValue(root, ops::Const(root, x), ops::Const(root, -0.5f), ops::Const(root, 0.5f));
  Output c2 =
      ops::ClipByValue(root, ops::Const(root, x), ops::Const(root, lo), ops::Const(root, 1.f));
  Session sess(g);
  auto out = sess.Run({c1, c2});
  for (int64_t i = 0; i < 12; ++i) {
    const float v = x.data<float>()[i];
    CHECK(out[0].data<float>()[i] == std::min(std::max(v, -0.5f), 0.5f));
    CHECK(out[1].data<float>()[i] == std::min(std::max(v, lo.data<float>()[i]), 1.f));
  }
  // int32 and int64 kernels.
  Output ci = ops::ClipByValue(root, ops::Const(root, std::vector<int32_t>{-5, 0, 7}, {3}),
                               ops::ConstInt(root, -1), ops::ConstInt(root, 3));
  CHECK(RunOne(g, ci).ToVector<int32_t>() == std::vector<int32_t>{-1, 0, 3});
  Output cl = ops::ClipByValue(root, ops::Const(root, std::vector<int64_t>{-5, 9}, {2}),
                               ops::Const(root, Tensor::Scalar(int64_t{0})),
                               ops::Const(root, Tensor::Scalar(int64_t{4})));
  CHECK(RunOne(g, cl).ToVector<int64_t>() == std::vector<int64_t>{0, 4});
  // Bounds that broadcast to t's shape (per column): TensorFlow's Python form.
  Tensor col = RandomTensor({4}, 3, -1.f, 0.f);
  Output per_col =
      ops::ClipByValue(root, ops::Const(root, x), ops::Const(root, col), ops::Const(root, 0.5f));
  Tensor pc = RunOne(g, per_col);
  REQUIRE(pc.shape() == Shape{3, 4});
  for (int64_t i = 0; i < 12; ++i) {
    CHECK(pc.data<float>()[i] ==
          std::max(std::min(x.data<float>()[i], 0.5f), col.data<float>()[i % 4]));
  }
  CHECK_THROWS_WITH(
      ops::ClipByValue(root, ops::Const(root, x), ops::Const(root, Tensor(DT_FLOAT, {2, 3, 4})),
                       ops::Const(root, 1.f)),
      Contains("t.shape = [3,4], clip_value_min.shape = [2,3,4]"));
  // TensorFlow's order, max(min(t, hi), lo): lo wins when lo > hi; NaN passes through.
  Output crossed = ops::ClipByValue(root, ops::Const(root, std::vector<float>{-1, 5, NAN}, {3}),
                                    ops::Const(root, 2.f), ops::Const(root, 1.f));
  Tensor cr = RunOne(g, crossed);
  CHECK(cr.data<float>()[0] == 2.f);
  CHECK(cr.data<float>()[1] == 2.f);
  CHECK(std::isnan(cr.data<float>()[2]));
  CHECK_THROWS_WITH(
      ops::ClipByValue(root.WithOpName("bad_clip"), ops::Const(root, x),
                       ops::Const(root, std::vector<float>{0, 0, 0}, {3}), ops::Const(root, 1.f)),
      Contains("clip_value_min and clip_value_max must be either scalars or have "
               "the same shape as t: t.shape = [3,4], clip_value_min.shape = [3]") &&
          Contains("bad_clip"));
}

TEST_CASE("ClipByValue's gradient goes to t inside the bounds, to the bound outside",
          "[ops][everyday][grad]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_DOUBLE, {2, 3});
  Output lo = ops::Const(root, Tensor::Scalar(-0.3));
  Output hi = ops::Const(root, Tensor::Scalar(0.4));
  Tensor x0 = D({-0.9, -0.1, 0.2, 0.35, 0.8, -0.5}, {2, 3});  // away from the kinks
  CHECK(ComputeGradientError(root, x, {2, 3}, ops::ClipByValue(root, x, lo, hi), {2, 3}, &x0) <
        1e-6);
  // The bounds' gradients: d/dlo = number of elements below, d/dhi = number above.
  auto grads = Gradients(root, {ops::ClipByValue(root, x, lo, hi)}, {x, lo, hi});
  Session sess(g);
  auto out = sess.Run({{x, x0}}, {grads[0], grads[1], grads[2]});
  CHECK(out[0].ToVector<double>() == std::vector<double>{0, 1, 1, 1, 0, 0});
  CHECK(out[1].scalar<double>() == 2);  // -0.9, -0.5
  CHECK(out[2].scalar<double>() == 1);  // 0.8
}

TEST_CASE("ClipByNorm rescales to the norm per axis, keeps small and zero tensors",
          "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = D({3, 4, 0, 0, 0.3, 0.4}, {3, 2});  // row norms 5, 0, 0.5
  Output xc = ops::Const(root, x);
  Output all = ops::ClipByNorm(root, xc, ops::Const(root, Tensor::Scalar(1.0)));
  Output rows = ops::ClipByNorm(root, xc, ops::Const(root, Tensor::Scalar(1.0)), {1});
  Session sess(g);
  auto out = sess.Run({all, rows});
  const double norm = std::sqrt(25 + 0.25);
  for (int i = 0; i < 6; ++i) CHECK(out[0].data<double>()[i] == Approx(x.data<double>()[i] / norm));
  CHECK(out[1].ToVector<double>() == std::vector<double>{0.6, 0.8, 0, 0, 0.3, 0.4});
  // The gradient at a non-clipped and at a clipped point.
  Output p = ops::Placeholder(root, DT_DOUBLE, {2, 3});
  Output y = ops::ClipByNorm(root, p, ops::Const(root, Tensor::Scalar(0.7)), {1});
  Tensor p0 = RandomDoubleTensor({2, 3}, 3);
  CHECK(ComputeGradientError(root, p, {2, 3}, y, {2, 3}, &p0) < 1e-6);
  // A zero tensor: zero output and a finite (zero-norm-safe) gradient.
  Tensor z(DT_DOUBLE, {2, 3});
  for (double& v : z.flat<double>()) v = 0;
  auto dz = Gradients(root, {y}, {p});
  Tensor gz = sess.Run({{p, z}}, {dz[0]})[0];
  for (double v : gz.flat<double>()) CHECK(std::isfinite(v));
}

TEST_CASE("ClipByGlobalNorm: TensorFlow's scale, null entries, inf and NaN norms give NaN",
          "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, std::vector<float>{3, 0}, {2});
  Output b = ops::Const(root, std::vector<float>{0, 4, 0}, {3});
  auto [clipped, norm] = ops::ClipByGlobalNorm(root, {a, Output(), b}, ops::Const(root, 2.5f));
  REQUIRE(clipped.size() == 3);
  CHECK(clipped[1].node == nullptr);
  auto [kept, norm2] = ops::ClipByGlobalNorm(root, {a, b}, ops::Const(root, 10.f));
  Session sess(g);
  auto out = sess.Run({clipped[0], clipped[2], norm, kept[0], kept[1]});
  CHECK(out[2].scalar<float>() == Approx(5));
  CHECK(out[0].ToVector<float>() == std::vector<float>{1.5f, 0});
  CHECK(out[1].data<float>()[1] == Approx(2.f));
  CHECK(out[3].ToVector<float>() == std::vector<float>{3, 0});  // norm 5 < 10: unchanged
  CHECK(out[4].ToVector<float>() == std::vector<float>{0, 4, 0});
  // An inf (or NaN) anywhere: every clipped value is NaN, the norm is returned as is.
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    Output c = ops::Const(root, std::vector<float>{1, bad}, {2});
    auto [cl, n] = ops::ClipByGlobalNorm(root, {a, c}, ops::Const(root, 1.f));
    auto r = sess.Run({cl[0], cl[1], n});
    for (int i = 0; i < 2; ++i) {
      CHECK(std::isnan(r[0].data<float>()[i]));
      CHECK(std::isnan(r[1].data<float>()[i]));
    }
    CHECK(!std::isfinite(r[2].scalar<float>()));
  }
  // A global norm of zero leaves zeros (scale 1, no NaN).
  Output z = ops::Const(root, std::vector<float>{0, 0}, {2});
  auto [zc, zn] = ops::ClipByGlobalNorm(root, {z}, ops::Const(root, 1.f));
  CHECK(RunOne(g, zc[0]).ToVector<float>() == std::vector<float>{0, 0});
  CHECK_THROWS_WITH(ops::GlobalNorm(root, {Output()}), Contains("only nulls"));
}

TEST_CASE("Group runs every input before it", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v1 = GetVariable(root, "v1", {}, init::Zeros());
  Variable v2 = GetVariable(root, "v2", {}, init::Zeros());
  Operation grp = ops::Group(root, {ops::AssignAdd(root, v1.ref(), ops::Const(root, 1.f)),
                                    ops::AssignAdd(root, v2.ref(), ops::Const(root, 2.f))});
  CHECK(grp.node->op() == "NoOp");
  CHECK(grp.node->name() == "group_deps");
  CHECK(grp.node->control_inputs().size() == 2);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  sess.Run({}, {}, {grp});
  sess.Run({}, {}, {grp});
  auto out = sess.Run({v1.value(), v2.value()});
  CHECK(out[0].scalar<float>() == 2.f);
  CHECK(out[1].scalar<float>() == 4.f);
}

// Naive select: out[i] = c(i) ? t[i] : e[i] over the broadcast shape (SelectV2).
TEST_CASE("SelectV2 broadcasts condition, then and else like NumPy", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor c(DT_BOOL, {2, 1, 3});
  for (int i = 0; i < 6; ++i) c.data<bool>()[i] = (i * 7) % 3 == 0;
  Tensor t = RandomTensor({4, 1}, 4), e = RandomTensor({2, 4, 3}, 5);
  Tensor got =
      RunOne(g, ops::SelectV2(root, ops::Const(root, c), ops::Const(root, t), ops::Const(root, e)));
  REQUIRE(got.shape() == Shape{2, 4, 3});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        const float want =
            c.data<bool>()[i * 3 + k] ? t.data<float>()[j] : e.data<float>()[(i * 4 + j) * 3 + k];
        REQUIRE(got.data<float>()[(i * 4 + j) * 3 + k] == want);
      }
  CHECK_THROWS_WITH(
      ops::SelectV2(root, ops::Const(root, c), ops::Const(root, RandomTensor({5}, 1)),
                    ops::Const(root, e)),
      Contains("condition [2,1,3], then [5], and else [2,4,3] must be broadcastable"));
  // The gradient sums over the broadcast dims.
  Output tp = ops::Placeholder(root, DT_DOUBLE, {4, 1});
  Output y = ops::SelectV2(root, ops::Const(root, c), tp,
                           ops::Const(root, RandomDoubleTensor({2, 4, 3}, 6)));
  CHECK(ComputeGradientError(root, tp, {4, 1}, y, {2, 4, 3}) < 1e-6);
  Output ep = ops::Placeholder(root, DT_DOUBLE, {2, 4, 3});
  Output y2 = ops::SelectV2(root, ops::Const(root, c), ops::Const(root, Tensor::Scalar(1.0)), ep);
  CHECK(ComputeGradientError(root, ep, {2, 4, 3}, y2, {2, 4, 3}) < 1e-6);
}

TEST_CASE("Select: same shapes, a scalar, or a vector picking rows", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor t = RandomTensor({3, 2}, 7), e = RandomTensor({3, 2}, 8);
  Output tc = ops::Const(root, t), ec = ops::Const(root, e);
  Output rows =
      ops::Select(root, ops::Const(root, std::vector<bool>{true, false, true}, {3}), tc, ec);
  Output scalar = ops::Select(root, ops::Const(root, Tensor::Scalar(false)), tc, ec);
  Tensor c(DT_BOOL, {3, 2});
  for (int i = 0; i < 6; ++i) c.data<bool>()[i] = i % 2 == 1;
  Output full = ops::Select(root, ops::Const(root, c), tc, ec);
  Session sess(g);
  auto out = sess.Run({rows, scalar, full});
  for (int i = 0; i < 6; ++i) {
    CHECK(out[0].data<float>()[i] == (i / 2 != 1 ? t : e).data<float>()[i]);
    CHECK(out[1].data<float>()[i] == e.data<float>()[i]);
    CHECK(out[2].data<float>()[i] == (i % 2 == 1 ? t : e).data<float>()[i]);
  }
  CHECK_THROWS_WITH(
      ops::Select(root, ops::Const(root, std::vector<bool>{true, false}, {2}), tc, ec),
      Contains("Number of batches of 'then' must match size of 'cond', but saw: 3 vs. 2"));
  CHECK_THROWS_WITH(
      ops::Select(root, ops::Const(root, c), tc, ops::Const(root, Tensor(DT_FLOAT, {2}))),
      Contains("'then' and 'else' must have the same size.  but received: [3,2] vs. [2]"));
  Output p = ops::Placeholder(root, DT_DOUBLE, {3, 2});
  Output y = ops::Select(root, ops::Const(root, c), p, ops::Square(root, p));
  CHECK(ComputeGradientError(root, p, {3, 2}, y, {3, 2}) < 1e-6);
}

TEST_CASE("Where lists the coordinates of true and non-zero elements in row-major order",
          "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({3, 4, 2}, 9);
  Output xc = ops::Const(root, x);
  Output w = ops::Where(root, ops::Greater(root, xc, ops::Const(root, 0.2f)));
  Output wf = ops::Where(root, ops::Const(root, std::vector<float>{0, 2, 0, -1}, {4}));
  // A fed input of unknown shape: the row count comes from the value at run time.
  Output p = ops::Placeholder(root, DT_BOOL);
  Output wp = ops::Where(root, p);
  CHECK(wp.shape() == Shape{-1, -1});
  Session sess(g);
  auto out = sess.Run({w, wf});
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 2; ++k)
        if (x.data<float>()[(i * 4 + j) * 2 + k] > 0.2f) want.insert(want.end(), {i, j, k});
  CHECK(out[0].dtype() == DT_INT64);
  CHECK(out[0].shape() == Shape{static_cast<int64_t>(want.size() / 3), 3});
  CHECK(out[0].ToVector<int64_t>() == want);
  CHECK(out[1].ToVector<int64_t>() == std::vector<int64_t>{1, 3});
  Tensor none(DT_BOOL, {2, 2});
  for (int i = 0; i < 4; ++i) none.data<bool>()[i] = i == 2;
  Tensor got = sess.Run({{p, none}}, {wp})[0];
  CHECK(got.shape() == Shape{1, 2});
  CHECK(got.ToVector<int64_t>() == std::vector<int64_t>{1, 0});
  for (int i = 0; i < 4; ++i) none.data<bool>()[i] = false;
  CHECK(sess.Run({{p, none}}, {wp})[0].shape() == Shape{0, 2});
}

TEST_CASE("Abs and Sign in every number type, with their gradients", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const float nan = std::nanf("");
  Output f = ops::Const(root, std::vector<float>{-2.5f, 0.f, 3.f, nan}, {4});
  Output i = ops::Const(root, std::vector<int32_t>{-7, 0, 4}, {3});
  Output l = ops::Const(root, std::vector<int64_t>{-(int64_t{1} << 40), 5}, {2});
  Session sess(g);
  auto out = sess.Run({ops::Abs(root, f), ops::Sign(root, f), ops::Abs(root, i), ops::Sign(root, i),
                       ops::Abs(root, l), ops::Sign(root, l)});
  CHECK(out[0].data<float>()[0] == 2.5f);
  CHECK(out[0].data<float>()[2] == 3.f);
  CHECK(std::isnan(out[0].data<float>()[3]));
  CHECK(out[1].data<float>()[0] == -1.f);
  CHECK(out[1].data<float>()[1] == 0.f);
  CHECK(out[1].data<float>()[2] == 1.f);
  CHECK(std::isnan(out[1].data<float>()[3]));
  CHECK(out[2].ToVector<int32_t>() == std::vector<int32_t>{7, 0, 4});
  CHECK(out[3].ToVector<int32_t>() == std::vector<int32_t>{-1, 0, 1});
  CHECK(out[4].ToVector<int64_t>() == std::vector<int64_t>{int64_t{1} << 40, 5});
  CHECK(out[5].ToVector<int64_t>() == std::vector<int64_t>{-1, 1});
  Output p = ops::Placeholder(root, DT_DOUBLE, {2, 3});
  Tensor p0 = D({-0.9, -0.1, 0.2, 0.35, 0.8, -0.5}, {2, 3});
  CHECK(ComputeGradientError(root, p, {2, 3}, ops::Abs(root, p), {2, 3}, &p0) < 1e-6);
  CHECK(ComputeGradientError(root, p, {2, 3}, ops::Sign(root, p), {2, 3}, &p0) < 1e-6);
}

TEST_CASE("Maximum and Minimum gradients go to the selected input, ties to x (TensorFlow)",
          "[ops][everyday][grad]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_DOUBLE, {4});
  Output y = ops::Placeholder(root, DT_DOUBLE, {4});
  Tensor x0 = D({1, 2, 3, 4}, {4}), y0 = D({0, 2, 5, 4}, {4});
  auto gmax = Gradients(root, {ops::Maximum(root, x, y)}, {x, y});
  auto gmin = Gradients(root, {ops::Minimum(root, x, y)}, {x, y});
  Session sess(g);
  auto out = sess.Run({{x, x0}, {y, y0}}, {gmax[0], gmax[1], gmin[0], gmin[1]});
  // TF: Maximum's x gets g where x >= y; Minimum's x where x <= y.
  CHECK(out[0].ToVector<double>() == std::vector<double>{1, 1, 0, 1});
  CHECK(out[1].ToVector<double>() == std::vector<double>{0, 0, 1, 0});
  CHECK(out[2].ToVector<double>() == std::vector<double>{0, 1, 1, 1});
  CHECK(out[3].ToVector<double>() == std::vector<double>{1, 0, 0, 0});
  // Away from ties, against finite differences (y broadcast from a scalar).
  Output xp = ops::Placeholder(root, DT_DOUBLE, {2, 3});
  Output c = ops::Const(root, Tensor::Scalar(0.05));
  Tensor xv = D({-0.9, -0.1, 0.2, 0.35, 0.8, -0.5}, {2, 3});
  CHECK(ComputeGradientError(root, xp, {2, 3}, ops::Maximum(root, xp, c), {2, 3}, &xv) < 1e-6);
  CHECK(ComputeGradientError(root, xp, {2, 3}, ops::Minimum(root, c, xp), {2, 3}, &xv) < 1e-6);
}

TEST_CASE("XwPlusB is MatMul plus BiasAdd", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({3, 4}, 10), w = RandomTensor({4, 2}, 11), b = RandomTensor({2}, 12);
  Output y = ops::XwPlusB(root, ops::Const(root, x), ops::Const(root, w), ops::Const(root, b));
  CHECK(y.node->name() == "xw_plus_b");
  Tensor got = RunOne(g, y);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double want = b.data<float>()[j];
      for (int k = 0; k < 4; ++k) want += x.data<float>()[i * 4 + k] * w.data<float>()[k * 2 + j];
      CHECK(got.data<float>()[i * 2 + j] == Approx(want).margin(1e-5));
    }
}

TEST_CASE("OneHot with an axis, a dtype and on/off values", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output idx = ops::Const(root, std::vector<int32_t>{0, 2, -1, 1, 3, 2}, {2, 3});
  for (int axis : {-1, 0, 1, 2}) {
    Output y = ops::OneHot(root, idx, 3,
                           {.on_value = 5, .off_value = -1, .axis = axis, .dtype = DT_INT64});
    Tensor got = RunOne(g, y);
    const int a = axis < 0 ? 2 : axis;
    std::vector<int64_t> dims = {2, 3};
    dims.insert(dims.begin() + a, 3);
    REQUIRE(got.shape() == Shape(dims));
    CHECK(got.dtype() == DT_INT64);
    const int32_t in[6] = {0, 2, -1, 1, 3, 2};
    for (int64_t i0 = 0; i0 < dims[0]; ++i0)
      for (int64_t i1 = 0; i1 < dims[1]; ++i1)
        for (int64_t i2 = 0; i2 < dims[2]; ++i2) {
          int64_t pos[3] = {i0, i1, i2};
          const int64_t depth_i = pos[a];
          int64_t rest[2], r = 0;
          for (int d = 0; d < 3; ++d)
            if (d != a) rest[r++] = pos[d];
          const int64_t want = in[rest[0] * 3 + rest[1]] == depth_i ? 5 : -1;
          REQUIRE(got.data<int64_t>()[(i0 * dims[1] + i1) * dims[2] + i2] == want);
        }
  }
  CHECK_THROWS_WITH(ops::OneHot(root, idx, 3, {.axis = 3}),
                    Contains("Expected axis to be -1 or between [0, 2].  But received: 3"));
  CHECK_THROWS_WITH(ops::OneHot(root, idx, -2, {}), Contains("depth must be non-negative"));
}

TEST_CASE("ArgMin: the first smallest along an axis, int32 or int64", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({3, 5, 4}, 13);
  x.data<float>()[7] = x.data<float>()[3] = -5.f;  // a tie along axis 1 at [0, *, 3]
  Output xc = ops::Const(root, x);
  for (int axis : {0, 1, 2, -1}) {
    Tensor got = RunOne(g, ops::ArgMin(root, xc, axis));
    CHECK(got.dtype() == DT_INT64);
    const int a = axis < 0 ? 2 : axis;
    const int64_t dims[3] = {3, 5, 4};
    int64_t stride = 1;
    for (int d = 2; d > a; --d) stride *= dims[d];
    for (int64_t o = 0; o < got.num_elements(); ++o) {
      const int64_t outer = o / stride, inner = o % stride;
      int64_t best = 0;
      for (int64_t r = 1; r < dims[a]; ++r) {
        const float* base = x.data<float>() + outer * dims[a] * stride + inner;
        if (base[r * stride] < base[best * stride]) best = r;
      }
      REQUIRE(got.data<int64_t>()[o] == best);
    }
  }
  CHECK(RunOne(g, ops::ArgMin(root, xc, 1, DT_INT32)).data<int32_t>()[3] == 0);
  CHECK_THROWS_WITH(ops::ArgMin(root, xc, 3),
                    Contains("axis 3 is out of range for a tensor of rank 3"));
}

}  // namespace
}  // namespace pf::everyday_ops_test
