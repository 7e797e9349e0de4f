// Convolution ops against a naive NHWC reference written here (loops over every output element
// and filter tap, in double), finite-difference gradient checks in float64, and error cases.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tests/testing/test_util.h"

namespace pf::conv_ops_test {
namespace {

using testing::FromDoubles;
using testing::RandomDoubleTensor;
using testing::RandomTensor;

struct ConvCase {
  int64_t n, h, w, c;  // input, NHWC
  int64_t kh, kw, k;   // filter rows, cols, out channels (depthwise: multiplier)
  int32_t sh, sw, dh, dw;
  std::string padding;
  std::vector<int32_t> pads;  // EXPLICIT: top, bottom, left, right
  bool nchw = false;
  bool depthwise = false;

  std::string Name() const {
    return fmt::format("{} in [{},{},{},{}] filter {}x{}x{} strides {},{} dilations {},{} {}{}",
                       depthwise ? "depthwise" : "conv", n, h, w, c, kh, kw, k, sh, sw, dh, dw,
                       padding, nchw ? " NCHW" : "");
  }
  int64_t OutC() const { return depthwise ? c * k : k; }
  // TensorFlow's output size and leading padding for one spatial dim.
  void Window(int64_t in, int64_t kk, int32_t s, int32_t d, int pad_b, int pad_a, int64_t* out,
              int64_t* before) const {
    const int64_t ek = (kk - 1) * d + 1;
    if (padding == "VALID") {
      *out = (in - ek) / s + 1;
      *before = 0;
    } else if (padding == "SAME") {
      *out = (in + s - 1) / s;
      *before = std::max<int64_t>((*out - 1) * s + ek - in, 0) / 2;
    } else {
      *out = (in + pad_b + pad_a - ek) / s + 1;
      *before = pad_b;
    }
  }
  int64_t oh() const {
    int64_t o, b;
    Window(h, kh, sh, dh, PadAt(0), PadAt(1), &o, &b);
    return o;
  }
  int64_t ow() const {
    int64_t o, b;
    Window(w, kw, sw, dw, PadAt(2), PadAt(3), &o, &b);
    return o;
  }
  int PadAt(int i) const { return pads.empty() ? 0 : pads[i]; }

  std::vector<int32_t> Strides() const {
    return nchw ? std::vector<int32_t>{1, 1, sh, sw} : std::vector<int32_t>{1, sh, sw, 1};
  }
  ops::ConvAttrs Attrs() const {
    ops::ConvAttrs a;
    a.data_format = nchw ? "NCHW" : "NHWC";
    a.dilations = nchw ? std::vector<int32_t>{1, 1, dh, dw} : std::vector<int32_t>{1, dh, dw, 1};
    if (padding == "EXPLICIT") {
      a.explicit_paddings =
          nchw ? std::vector<int32_t>{0, 0, 0, 0, pads[0], pads[1], pads[2], pads[3]}
               : std::vector<int32_t>{0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0};
    }
    return a;
  }
};

// Calls fn(input index, filter index, output index) for every (output element, tap) pair that
// reads a real (not padded) input element. All indices NHWC / [kh, kw, c, k].
template <typename Fn>
void ReferenceTaps(const ConvCase& t, Fn fn) {
  int64_t oh, ow, pt, pl;
  t.Window(t.h, t.kh, t.sh, t.dh, t.PadAt(0), t.PadAt(1), &oh, &pt);
  t.Window(t.w, t.kw, t.sw, t.dw, t.PadAt(2), t.PadAt(3), &ow, &pl);
  const int64_t oc = t.OutC();
  for (int64_t b = 0; b < t.n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t o = 0; o < oc; ++o)
          for (int64_t i = 0; i < t.kh; ++i)
            for (int64_t j = 0; j < t.kw; ++j) {
              const int64_t iy = y * t.sh + i * t.dh - pt, ix = x * t.sw + j * t.dw - pl;
              if (iy < 0 || iy >= t.h || ix < 0 || ix >= t.w) continue;
              const int64_t out_idx = ((b * oh + y) * ow + x) * oc + o;
              if (t.depthwise) {
                const int64_t ci = o / t.k, m = o % t.k;
                fn(((b * t.h + iy) * t.w + ix) * t.c + ci, ((i * t.kw + j) * t.c + ci) * t.k + m,
                   out_idx);
              } else {
                for (int64_t ci = 0; ci < t.c; ++ci) {
                  fn(((b * t.h + iy) * t.w + ix) * t.c + ci, ((i * t.kw + j) * t.c + ci) * t.k + o,
                     out_idx);
                }
              }
            }
}

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == DT_DOUBLE ? t.data<double>()[i] : t.data<float>()[i];
}

// NHWC <-> NCHW, by loops.
Tensor ToLayout(const Tensor& nhwc, bool nchw) {
  if (!nchw) return nhwc;
  const int64_t n = nhwc.dim(0), h = nhwc.dim(1), w = nhwc.dim(2), c = nhwc.dim(3);
  Tensor out(nhwc.dtype(), {n, c, h, w});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k) {
          const int64_t src = ((b * h + y) * w + x) * c + k, dst = ((b * c + k) * h + y) * w + x;
          if (nhwc.dtype() == DT_DOUBLE)
            out.data<double>()[dst] = nhwc.data<double>()[src];
          else
            out.data<float>()[dst] = nhwc.data<float>()[src];
        }
  return out;
}

// |got - want| <= tol * max(1, max |want|) elementwise.
void ExpectClose(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  double scale = 1, worst = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) scale = std::max(scale, std::abs(Get(want, i)));
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    worst = std::max(worst, std::abs(Get(got, i) - Get(want, i)));
  }
  INFO("max abs diff " << worst << ", scale " << scale);
  CHECK(worst <= tol * scale);
}

Tensor Rand(DType dt, const Shape& s, uint32_t seed) {
  return dt == DT_DOUBLE ? RandomDoubleTensor(s, seed) : RandomTensor(s, seed);
}

// Runs the three ops of the case's family in `dt` and compares each with the reference.
void CheckCase(const ConvCase& t, DType dt, double tol) {
  INFO(t.Name() << " " << DTypeName(dt));
  const Shape in_shape{t.n, t.h, t.w, t.c}, f_shape{t.kh, t.kw, t.c, t.k};
  const Shape out_shape{t.n, t.oh(), t.ow(), t.OutC()};
  const Tensor x = Rand(dt, in_shape, 1), f = Rand(dt, f_shape, 2), dy = Rand(dt, out_shape, 3);
  std::vector<double> y_ref(out_shape.num_elements()), dx_ref(in_shape.num_elements()),
      df_ref(f_shape.num_elements());
  ReferenceTaps(t, [&](int64_t i, int64_t k, int64_t o) {
    y_ref[o] += Get(x, i) * Get(f, k);
    dx_ref[i] += Get(f, k) * Get(dy, o);
    df_ref[k] += Get(x, i) * Get(dy, o);
  });
  auto ints = [](const Shape& s) {
    std::vector<int32_t> v;
    for (int64_t d : s.dims()) v.push_back(static_cast<int32_t>(d));
    return v;
  };
  const std::vector<int32_t> input_sizes =
      t.nchw ? std::vector<int32_t>{int32_t(t.n), int32_t(t.c), int32_t(t.h), int32_t(t.w)}
             : ints(in_shape);
  Graph g;
  Scope root = Scope::Root(&g);
  Output xc = ops::Const(root, ToLayout(x, t.nchw)), fc = ops::Const(root, f),
         dyc = ops::Const(root, ToLayout(dy, t.nchw));
  Output isz = ops::ConstInt(root, input_sizes), fsz = ops::ConstInt(root, ints(f_shape));
  Output y, dx, df;
  if (t.depthwise) {
    y = ops::DepthwiseConv2dNative(root, xc, fc, t.Strides(), t.padding, t.Attrs());
    dx = ops::DepthwiseConv2dNativeBackpropInput(root, isz, fc, dyc, t.Strides(), t.padding,
                                                 t.Attrs());
    df = ops::DepthwiseConv2dNativeBackpropFilter(root, xc, fsz, dyc, t.Strides(), t.padding,
                                                  t.Attrs());
  } else {
    y = ops::Conv2D(root, xc, fc, t.Strides(), t.padding, t.Attrs());
    dx = ops::Conv2DBackpropInput(root, isz, fc, dyc, t.Strides(), t.padding, t.Attrs());
    df = ops::Conv2DBackpropFilter(root, xc, fsz, dyc, t.Strides(), t.padding, t.Attrs());
  }
  Session sess(g);
  std::vector<Tensor> got = sess.Run({}, {y, dx, df});
  {
    INFO("forward");
    ExpectClose(got[0], ToLayout(FromDoubles(dt, out_shape, y_ref), t.nchw), tol);
  }
  {
    INFO("backprop input");
    ExpectClose(got[1], ToLayout(FromDoubles(dt, in_shape, dx_ref), t.nchw), tol);
  }
  {
    INFO("backprop filter");
    ExpectClose(got[2], FromDoubles(dt, f_shape, df_ref), tol);
  }
}

std::vector<ConvCase> Conv2DCases() {
  return {
      {1, 5, 5, 3, 3, 3, 4, 1, 1, 1, 1, "VALID"},
      {3, 7, 6, 2, 3, 2, 5, 2, 2, 1, 1, "SAME"},
      {2, 8, 9, 3, 3, 3, 4, 1, 2, 2, 2, "SAME"},
      {3, 6, 7, 4, 2, 3, 3, 2, 2, 1, 1, "EXPLICIT", {1, 2, 0, 3}},
      {2, 7, 7, 3, 3, 3, 5, 2, 2, 1, 1, "SAME", {}, true},
      {1, 9, 8, 2, 3, 3, 3, 1, 1, 2, 2, "VALID", {}, true},
      {3, 6, 5, 2, 2, 2, 3, 1, 2, 1, 1, "EXPLICIT", {2, 0, 1, 1}, true},
      {3, 11, 13, 5, 5, 5, 7, 3, 3, 1, 1, "VALID"},  // trailing rows no window reads
      {2, 5, 6, 3, 1, 1, 4, 2, 2, 1, 1, "SAME"},
      {1, 4, 4, 2, 5, 5, 3, 1, 1, 1, 1, "SAME"},  // filter larger than the input
      // Large enough to be split across the pool in uneven shards (partial filter gradients).
      {5, 28, 28, 8, 3, 3, 16, 1, 1, 1, 1, "SAME"},
  };
}

std::vector<ConvCase> DepthwiseCases() {
  return {
      {1, 5, 5, 3, 3, 3, 2, 1, 1, 1, 1, "VALID", {}, false, true},
      {3, 7, 6, 2, 3, 2, 1, 2, 2, 1, 1, "SAME", {}, false, true},
      {2, 9, 8, 3, 3, 3, 2, 1, 1, 2, 2, "SAME", {}, false, true},
      {3, 6, 7, 4, 2, 3, 3, 2, 2, 1, 1, "EXPLICIT", {1, 2, 0, 3}, false, true},
      {2, 7, 7, 3, 3, 3, 2, 2, 2, 1, 1, "SAME", {}, true, true},
      {1, 9, 8, 2, 3, 3, 1, 1, 1, 2, 2, "VALID", {}, true, true},
      {5, 28, 28, 8, 3, 3, 2, 1, 1, 1, 1, "SAME", {}, false, true},
      // Multiplier 1, stride 1, centred padding: the input gradient runs as a forward
      // convolution with the filter turned by 180 degrees (ops/nn/conv_onednn.cc).
      {3, 9, 7, 6, 3, 3, 1, 1, 1, 1, 1, "SAME", {}, false, true},
      {2, 8, 9, 5, 5, 3, 1, 1, 1, 1, 1, "SAME", {}, true, true},
      {2, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, "EXPLICIT", {1, 1, 1, 1}, false, true},
      {2, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, "EXPLICIT", {2, 0, 1, 1}, false, true},  // not centred
  };
}

TEST_CASE("Conv2D and its backprops match a naive reference", "[ops][nn][conv]") {
  for (const ConvCase& t : Conv2DCases()) {
    CheckCase(t, DT_FLOAT, 1e-4);
    CheckCase(t, DT_DOUBLE, 1e-10);
  }
}

TEST_CASE("DepthwiseConv2dNative and its backprops match a naive reference", "[ops][nn][conv]") {
  for (const ConvCase& t : DepthwiseCases()) {
    CheckCase(t, DT_FLOAT, 1e-4);
    CheckCase(t, DT_DOUBLE, 1e-10);
  }
}

TEST_CASE("Conv2D shapes follow TensorFlow, input_sizes read when constant", "[ops][nn][conv]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, 28, 28, 32});
  Output f = ops::Placeholder(root, DT_FLOAT, {3, 3, 32, 64});
  CHECK(ops::Conv2D(root, x, f, {1, 1, 1, 1}, "SAME").shape() == Shape{-1, 28, 28, 64});
  CHECK(ops::Conv2D(root, x, f, {1, 2, 2, 1}, "SAME").shape() == Shape{-1, 14, 14, 64});
  CHECK(ops::Conv2D(root, x, f, {1, 2, 2, 1}, "VALID").shape() == Shape{-1, 13, 13, 64});
  CHECK(ops::Conv2D(root, x, f, {1, 1, 1, 1}, "VALID", {"NHWC", {1, 3, 3, 1}, {}}).shape() ==
        Shape{-1, 22, 22, 64});
  Output xn = ops::Placeholder(root, DT_FLOAT, {8, 32, 15, 15});
  CHECK(ops::Conv2D(root, xn, f, {1, 1, 2, 2}, "SAME", {"NCHW", {1, 1, 1, 1}, {}}).shape() ==
        Shape{8, 64, 8, 8});
  Output dy = ops::Placeholder(root, DT_FLOAT, {-1, 14, 14, 64});
  CHECK(ops::Conv2DBackpropInput(root, ops::ConstInt(root, {4, 28, 28, 32}), f, dy, {1, 2, 2, 1},
                                 "SAME")
            .shape() == Shape{4, 28, 28, 32});
  CHECK(ops::Conv2DBackpropInput(root, ops::Placeholder(root, DT_INT32, {4}), f, dy, {1, 2, 2, 1},
                                 "SAME")
            .shape() == Shape{-1, -1, -1, 32});  // depth from the filter
  CHECK(ops::Conv2DBackpropFilter(root, x, ops::ConstInt(root, {3, 3, 32, 64}), dy, {1, 2, 2, 1},
                                  "SAME")
            .shape() == Shape{3, 3, 32, 64});
  Output fd = ops::Placeholder(root, DT_FLOAT, {3, 3, 32, 2});
  CHECK(ops::DepthwiseConv2dNative(root, x, fd, {1, 2, 2, 1}, "SAME").shape() ==
        Shape{-1, 14, 14, 64});
  // tf.nn.conv2d_transpose: [N, 7, 7, 64] -> [N, 14, 14, 32] with filter [3, 3, 32, 64].
  Output v = ops::Placeholder(root, DT_FLOAT, {2, 7, 7, 64});
  CHECK(ops::Conv2DTranspose(root, v, f, {2, 14, 14, 32}, {1, 2, 2, 1}, "SAME").shape() ==
        Shape{2, 14, 14, 32});
}

TEST_CASE("Conv2DTranspose is the adjoint of Conv2D", "[ops][nn][conv]") {
  // <Conv2D(x, f), v> == <x, Conv2DTranspose(v, f)> for every x, v.
  Graph g;
  Scope root = Scope::Root(&g);
  const Tensor x = RandomTensor({2, 9, 9, 3}, 5), f = RandomTensor({3, 3, 3, 4}, 6),
               v = RandomTensor({2, 5, 5, 4}, 7);
  Output fc = ops::Const(root, f);
  Output y = ops::Conv2D(root, ops::Const(root, x), fc, {1, 2, 2, 1}, "SAME");
  Output xt =
      ops::Conv2DTranspose(root, ops::Const(root, v), fc, {2, 9, 9, 3}, {1, 2, 2, 1}, "SAME");
  Session sess(g);
  auto out = sess.Run({}, {y, xt});
  double a = 0, b = 0;
  for (int64_t i = 0; i < v.num_elements(); ++i) a += Get(out[0], i) * Get(v, i);
  for (int64_t i = 0; i < x.num_elements(); ++i) b += Get(x, i) * Get(out[1], i);
  CHECK(std::abs(a - b) <= 1e-4 * std::max(1.0, std::abs(a)));
}

// ---- finite-difference gradient checks (float64) ----

constexpr double kGradTol = 1e-6;

double GradErr(const Shape& x_shape, const std::function<Output(const Scope&, Output)>& build) {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, x_shape);
  Output y = build(root, x);
  REQUIRE(y.shape().IsFullyDefined());
  const Tensor x0 = RandomDoubleTensor(x_shape, 11);
  return ComputeGradientError(root, x, x_shape, y, y.shape(), &x0);
}

Output C(const Scope& s, const Shape& shape, uint32_t seed) {
  return ops::Const(s, RandomDoubleTensor(shape, seed));
}

TEST_CASE("Gradient check: Conv2D and its backprops (second order)", "[ops][nn][conv][check]") {
  const std::vector<ConvCase> cases = {
      {2, 5, 6, 2, 3, 3, 3, 2, 2, 1, 1, "SAME"},
      {1, 7, 6, 2, 3, 2, 2, 1, 1, 2, 2, "VALID"},
      {2, 5, 5, 3, 2, 2, 2, 2, 2, 1, 1, "EXPLICIT", {1, 0, 2, 1}, true},
  };
  for (const ConvCase& t : cases) {
    INFO(t.Name());
    const Shape x_shape = ToLayout(Tensor(DT_DOUBLE, {t.n, t.h, t.w, t.c}), t.nchw).shape();
    const Shape f_shape{t.kh, t.kw, t.c, t.k};
    const Shape y_shape =
        ToLayout(Tensor(DT_DOUBLE, {t.n, t.oh(), t.ow(), t.OutC()}), t.nchw).shape();
    auto dims = [](const Shape& s) {
      std::vector<int32_t> v(s.dims().begin(), s.dims().end());
      return v;
    };
    const auto st = t.Strides();
    const auto at = t.Attrs();
    const std::string& pad = t.padding;
    CHECK(GradErr(x_shape, [&](const Scope& s, Output x) {
            return ops::Conv2D(s, x, C(s, f_shape, 1), st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(f_shape, [&](const Scope& s, Output f) {
            return ops::Conv2D(s, C(s, x_shape, 2), f, st, pad, at);
          }) < kGradTol);
    // Conv2DBackpropInput wrt its filter and out_backprop.
    CHECK(GradErr(f_shape, [&](const Scope& s, Output f) {
            return ops::Conv2DBackpropInput(s, ops::ConstInt(s, dims(x_shape)), f, C(s, y_shape, 3),
                                            st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(y_shape, [&](const Scope& s, Output dy) {
            return ops::Conv2DBackpropInput(s, ops::ConstInt(s, dims(x_shape)), C(s, f_shape, 4),
                                            dy, st, pad, at);
          }) < kGradTol);
    // Conv2DBackpropFilter wrt its input and out_backprop.
    CHECK(GradErr(x_shape, [&](const Scope& s, Output x) {
            return ops::Conv2DBackpropFilter(s, x, ops::ConstInt(s, dims(f_shape)),
                                             C(s, y_shape, 5), st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(y_shape, [&](const Scope& s, Output dy) {
            return ops::Conv2DBackpropFilter(s, C(s, x_shape, 6), ops::ConstInt(s, dims(f_shape)),
                                             dy, st, pad, at);
          }) < kGradTol);
    // Through a nonlinearity, so the second-order path meets a non-constant upstream gradient.
    CHECK(GradErr(x_shape, [&](const Scope& s, Output x) {
            Output y = ops::Conv2D(s, x, C(s, f_shape, 7), st, pad, at);
            return ops::Tanh(s, y);
          }) < kGradTol);
  }
}

TEST_CASE("Gradient check: depthwise convolution and its backprops", "[ops][nn][conv][check]") {
  const std::vector<ConvCase> cases = {
      {2, 5, 6, 3, 3, 3, 2, 2, 2, 1, 1, "SAME", {}, false, true},
      {1, 7, 6, 2, 2, 2, 1, 1, 1, 2, 2, "VALID", {}, true, true},
  };
  for (const ConvCase& t : cases) {
    INFO(t.Name());
    const Shape x_shape = ToLayout(Tensor(DT_DOUBLE, {t.n, t.h, t.w, t.c}), t.nchw).shape();
    const Shape f_shape{t.kh, t.kw, t.c, t.k};
    const Shape y_shape =
        ToLayout(Tensor(DT_DOUBLE, {t.n, t.oh(), t.ow(), t.OutC()}), t.nchw).shape();
    auto dims = [](const Shape& s) {
      std::vector<int32_t> v(s.dims().begin(), s.dims().end());
      return v;
    };
    const auto st = t.Strides();
    const auto at = t.Attrs();
    const std::string& pad = t.padding;
    CHECK(GradErr(x_shape, [&](const Scope& s, Output x) {
            return ops::DepthwiseConv2dNative(s, x, C(s, f_shape, 1), st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(f_shape, [&](const Scope& s, Output f) {
            return ops::DepthwiseConv2dNative(s, C(s, x_shape, 2), f, st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(f_shape, [&](const Scope& s, Output f) {
            return ops::DepthwiseConv2dNativeBackpropInput(s, ops::ConstInt(s, dims(x_shape)), f,
                                                           C(s, y_shape, 3), st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(y_shape, [&](const Scope& s, Output dy) {
            return ops::DepthwiseConv2dNativeBackpropInput(s, ops::ConstInt(s, dims(x_shape)),
                                                           C(s, f_shape, 4), dy, st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(x_shape, [&](const Scope& s, Output x) {
            return ops::DepthwiseConv2dNativeBackpropFilter(s, x, ops::ConstInt(s, dims(f_shape)),
                                                            C(s, y_shape, 5), st, pad, at);
          }) < kGradTol);
    CHECK(GradErr(y_shape, [&](const Scope& s, Output dy) {
            return ops::DepthwiseConv2dNativeBackpropFilter(
                s, C(s, x_shape, 6), ops::ConstInt(s, dims(f_shape)), dy, st, pad, at);
          }) < kGradTol);
  }
}

TEST_CASE("Gradient check: Conv2DTranspose", "[ops][nn][conv][check]") {
  // [2, 3, 3, 4] -> [2, 6, 5, 2] through a [3, 3, 2, 4] filter, stride 2.
  CHECK(GradErr({2, 3, 3, 4}, [](const Scope& s, Output v) {
          return ops::Conv2DTranspose(s, v, C(s, {3, 3, 2, 4}, 1), {2, 6, 5, 2}, {1, 2, 2, 1},
                                      "SAME");
        }) < kGradTol);
  CHECK(GradErr({3, 3, 2, 4}, [](const Scope& s, Output f) {
          return ops::Conv2DTranspose(s, C(s, {2, 3, 3, 4}, 2), f, {2, 6, 5, 2}, {1, 2, 2, 1},
                                      "SAME");
        }) < kGradTol);
}

// ---- errors ----

TEST_CASE("Convolution errors name the problem and the shapes", "[ops][nn][conv][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {1, 5, 5, 3});
  Output f = ops::Placeholder(root, DT_FLOAT, {3, 3, 3, 8});
  using Catch::Contains;
  CHECK_THROWS_WITH(
      ops::Conv2D(root, ops::Placeholder(root, DT_FLOAT, {5, 5, 3}), f, {1, 1, 1, 1}, "SAME"),
      Contains("Conv2D: input must be 4-dimensional, got shape [5,5,3]"));
  CHECK_THROWS_WITH(
      ops::Conv2D(root, x, ops::Placeholder(root, DT_FLOAT, {3, 3, 8}), {1, 1, 1, 1}, "SAME"),
      Contains("filter must be 4-dimensional, got shape [3,3,8]"));
  CHECK_THROWS_WITH(
      ops::Conv2D(root, x, ops::Placeholder(root, DT_FLOAT, {3, 3, 4, 8}), {1, 1, 1, 1}, "SAME"),
      Contains("input and filter must have the same depth: 3 vs 4 (input [1,5,5,3], filter "
               "[3,3,4,8])"));
  CHECK_THROWS_WITH(ops::Conv2D(root, x, f, {1, 1, 1, 1}, "FOO"),
                    Contains("padding must be SAME, VALID or EXPLICIT, got 'FOO'"));
  CHECK_THROWS_WITH(ops::Conv2D(root, x, f, {2, 1, 1, 1}, "SAME"),
                    Contains("does not yet support strides in the batch and depth dimensions"));
  CHECK_THROWS_WITH(ops::Conv2D(root, x, f, {1, 1, 1}, "SAME"),
                    Contains("strides field must specify 4 dimensions, got 3"));
  CHECK_THROWS_WITH(
      ops::Conv2D(root, x, f, {1, 1, 1, 1}, "EXPLICIT", {"NHWC", {1, 1, 1, 1}, {0, 0, 1, 1}}),
      Contains("explicit_paddings attribute must contain 8 values, but got: 4"));
  CHECK_THROWS_WITH(ops::Conv2D(root, x, f, {1, 1, 1, 1}, "SAME",
                                {"NHWC", {1, 1, 1, 1}, {0, 0, 1, 1, 1, 1, 0, 0}}),
                    Contains("explicit_paddings attribute must be empty"));
  CHECK_THROWS_WITH(ops::Conv2D(root, x, f, {1, 1, 1, 1}, "SAME", {"NHWC", {1, 1, 1, 2}, {}}),
                    Contains("does not yet support dilations in the batch and depth dimensions"));
  CHECK_THROWS_WITH(ops::Conv2D(root, x, f, {1, 1, 1, 1}, "SAME", {"HWCN", {1, 1, 1, 1}, {}}),
                    Contains("invalid data_format 'HWCN'"));
  CHECK_THROWS_WITH(
      ops::Conv2D(root, ops::Placeholder(root, DT_FLOAT, {1, 2, 2, 3}),
                  ops::Placeholder(root, DT_FLOAT, {5, 5, 3, 8}), {1, 1, 1, 1}, "VALID"),
      Contains("computed output size would be negative: -2 [input_size: 2, "
               "effective_filter_size: 5, stride: 1]"));
  CHECK_THROWS_WITH(
      ops::DepthwiseConv2dNative(root, x, ops::Placeholder(root, DT_FLOAT, {3, 3, 3, 2}),
                                 {1, 1, 2, 1}, "SAME"),
      Contains("DepthwiseConv2dNative: current implementation only supports equal length strides"));
  CHECK_THROWS_WITH(ops::Conv2DBackpropInput(root, ops::ConstInt(root, {1, 5, 5, 3}), f,
                                             ops::Placeholder(root, DT_FLOAT, {1, 4, 4, 8}),
                                             {1, 1, 1, 1}, "SAME"),
                    Contains("Conv2DBackpropInput: out_backprop [1,4,4,8] does not match the "
                             "computed output shape [1,5,5,8] of input [1,5,5,3] and filter "
                             "[3,3,3,8]"));
  CHECK_THROWS_WITH(ops::Conv2DBackpropFilter(root, x, ops::ConstInt(root, {3, 3, 3}),
                                              ops::Placeholder(root, DT_FLOAT, {1, 5, 5, 8}),
                                              {1, 1, 1, 1}, "SAME"),
                    Contains("filter_sizes must be a vector of 4 values, got shape [3]"));
}

TEST_CASE("Convolution kernels check run-time shapes too", "[ops][nn][conv][errors]") {
  // input_sizes known only when the step runs: the run fails with the same message.
  Graph g;
  Scope root = Scope::Root(&g);
  Output sizes = ops::Placeholder(root, DT_INT32, {4});
  Output y = ops::Conv2DBackpropInput(root, sizes, ops::Const(root, RandomTensor({3, 3, 3, 8}, 1)),
                                      ops::Const(root, RandomTensor({1, 5, 5, 8}, 2)), {1, 1, 1, 1},
                                      "SAME");
  Session sess(g);
  CHECK(sess.Run({{sizes, Tensor::FromVector<int32_t>({1, 5, 5, 3})}}, {y})[0].shape() ==
        Shape{1, 5, 5, 3});
  CHECK_THROWS_WITH(sess.Run({{sizes, Tensor::FromVector<int32_t>({1, 6, 6, 3})}}, {y}),
                    Catch::Contains("out_backprop [1,5,5,8] does not match the computed output "
                                    "shape [1,6,6,8]"));
  CHECK_THROWS_WITH(sess.Run({{sizes, Tensor::FromVector<int32_t>({1, 5, 5, 4})}}, {y}),
                    Catch::Contains("input and filter must have the same depth: 4 vs 3"));
}

// Hidden: timings on realistic shapes, for choosing the threading scheme (PF_CONV_OMP=1 runs one
// oneDNN primitive on OpenMP threads instead of batch shards on the pool). Prints, asserts
// nothing: `pf_tests "[conv-bench]"`.
TEST_CASE("Convolution timings", "[.][conv-bench]") {
  struct Bench {
    const char* what;
    Shape x, f;
  };
  for (const Bench& b :
       {Bench{"128x28x28x32 * 3x3x32x64", {128, 28, 28, 32}, {3, 3, 32, 64}},
        Bench{"LeNet conv1 128x28x28x1 * 5x5x1x32", {128, 28, 28, 1}, {5, 5, 1, 32}},
        Bench{"LeNet conv2 128x14x14x32 * 5x5x32x64", {128, 14, 14, 32}, {5, 5, 32, 64}}}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Const(root, RandomTensor(b.x, 1)), f = ops::Const(root, RandomTensor(b.f, 2));
    Output y = ops::Conv2D(root, x, f, {1, 1, 1, 1}, "SAME");
    Output dy = ops::Const(root, RandomTensor(y.shape(), 3));
    auto ints = [](const Shape& s) {
      return std::vector<int32_t>(s.dims().begin(), s.dims().end());
    };
    Output dx =
        ops::Conv2DBackpropInput(root, ops::ConstInt(root, ints(b.x)), f, dy, {1, 1, 1, 1}, "SAME");
    Output df = ops::Conv2DBackpropFilter(root, x, ops::ConstInt(root, ints(b.f)), dy, {1, 1, 1, 1},
                                          "SAME");
    const double flops = 2.0 * y.shape().num_elements() * b.f.dim(0) * b.f.dim(1) * b.f.dim(2);
    Session sess(g);
    for (auto [name, out] : {std::pair<const char*, Output>{"forward", y},
                             {"backward-data", dx},
                             {"backward-filter", df}}) {
      for (int i = 0; i < 3; ++i) sess.Run({}, {out});
      constexpr int kRuns = 20;
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kRuns; ++i) sess.Run({}, {out});
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count() /
          kRuns;
      std::printf("%-40s %-16s %8.3f ms %8.1f GFLOP/s (threads %d, omp %s)\n", b.what, name, ms,
                  flops / ms * 1e-6, ThreadPool::Default()->num_threads(),
                  std::getenv("PF_CONV_OMP") ? std::getenv("PF_CONV_OMP") : "0");
    }
  }
}

}  // namespace
}  // namespace pf::conv_ops_test
