// Math kernels against naive references (loops written independently of the kernels).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "placeflow/ops/math/matmul.h"
#include "placeflow/train/gradient_checker.h"
#include "tests/testing/test_util.h"

namespace pf::math_ops_test {
namespace {

using testing::MaxAbsDiff;
using testing::RandomTensor;
using testing::RunOne;

// Value of `t` at the output multi-index `idx` under NumPy broadcasting.
double At(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  const int shift = static_cast<int>(idx.size()) - t.rank();
  for (int d = 0; d < t.rank(); ++d) off = off * t.dim(d) + (t.dim(d) == 1 ? 0 : idx[d + shift]);
  return t.data<float>()[off];
}

Tensor NaiveBinary(const Tensor& a, const Tensor& b, const Shape& out_shape,
                   const std::function<double(double, double)>& f) {
  Tensor out(DT_FLOAT, out_shape);
  std::vector<int64_t> idx(out_shape.rank(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    out.data<float>()[i] = static_cast<float>(f(At(a, idx), At(b, idx)));
    for (int d = out_shape.rank() - 1; d >= 0; --d) {
      if (++idx[d] < out_shape.dim(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

TEST_CASE("Binary ops broadcast like NumPy", "[ops][math]") {
  using BuildFn = Output (*)(const Scope&, Output, Output);
  const std::vector<std::tuple<const char*, BuildFn, std::function<double(double, double)>>> cases =
      {
          {"Add", ops::Add, [](double a, double b) { return a + b; }},
          {"Sub", ops::Sub, [](double a, double b) { return a - b; }},
          {"Mul", ops::Mul, [](double a, double b) { return a * b; }},
          {"Div", ops::Div, [](double a, double b) { return a / b; }},
          {"Maximum", ops::Maximum, [](double a, double b) { return std::max(a, b); }},
          {"Minimum", ops::Minimum, [](double a, double b) { return std::min(a, b); }},
          {"Pow", ops::Pow, [](double a, double b) { return std::pow(a, b); }},
      };
  const std::vector<std::tuple<Shape, Shape, Shape>> shapes = {{{3, 4}, {3, 4}, {3, 4}},
                                                               {{3, 4}, {}, {3, 4}},
                                                               {{}, {3, 4}, {3, 4}},
                                                               {{3, 4}, {4}, {3, 4}},
                                                               {{3, 1}, {1, 4}, {3, 4}},
                                                               {{2, 3, 4}, {3, 1}, {2, 3, 4}},
                                                               {{2, 1, 4}, {1, 3, 1}, {2, 3, 4}},
                                                               {{5, 1, 1, 7}, {3, 1}, {5, 1, 3, 7}},
                                                               {{1}, {6}, {6}}};
  for (const auto& [name, build, ref] : cases) {
    for (const auto& [sa, sb, so] : shapes) {
      INFO(name << " " << sa.ToString() << " " << sb.ToString());
      Graph g;
      Scope root = Scope::Root(&g);
      // Positive operands keep Pow and Div finite.
      Tensor a = RandomTensor(sa, 1, 0.5f, 2.f), b = RandomTensor(sb, 2, 0.5f, 2.f);
      Output y = build(root, ops::Const(root, a), ops::Const(root, b));
      CHECK(y.shape() == so);
      Tensor got = RunOne(g, y);
      CHECK(MaxAbsDiff(got, NaiveBinary(a, b, so, ref)) <= 1e-5);
    }
  }
}

TEST_CASE("Binary ops on large tensors use the parallel path correctly", "[ops][math]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor a = RandomTensor({512, 1024}, 3), b = RandomTensor({1024}, 4);
  Tensor got = RunOne(g, ops::Add(root, ops::Const(root, a), ops::Const(root, b)));
  CHECK(MaxAbsDiff(got, NaiveBinary(a, b, {512, 1024}, [](double x, double y) { return x + y; })) ==
        0);
}

TEST_CASE("Integer arithmetic and comparisons", "[ops][math]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, Tensor::FromVector<int32_t>({7, -8, 9, 10}));
  Output b = ops::Const(root, Tensor::FromVector<int32_t>({2, 3, 9, 11}));
  Session sess(g);
  auto out = sess.Run({ops::Div(root, a, b), ops::Mul(root, a, b), ops::Equal(root, a, b),
                       ops::Less(root, a, b), ops::Greater(root, a, b)});
  CHECK(out[0].DebugString() == "Tensor<int32 [4]> [3, -2, 1, 0]");  // truncating, like C++ and TF
  CHECK(out[1].DebugString() == "Tensor<int32 [4]> [14, -24, 81, 110]");
  CHECK(out[2].DebugString() == "Tensor<bool [4]> [false, false, true, false]");
  CHECK(out[3].DebugString() == "Tensor<bool [4]> [false, true, false, true]");
  CHECK(out[4].DebugString() == "Tensor<bool [4]> [true, false, false, false]");
  Output zero = ops::Const(root, Tensor::FromVector<int32_t>({1, 0, 1, 1}));
  CHECK_THROWS_WITH(sess.Run({ops::Div(root, a, zero)}),
                    Catch::Matchers::Contains("Integer division by zero"));
}

TEST_CASE("Unary ops", "[ops][math]") {
  using BuildFn = Output (*)(const Scope&, Output);
  const std::vector<std::tuple<const char*, BuildFn, double (*)(double)>> cases = {
      {"Neg", ops::Neg, [](double x) { return -x; }},
      {"Square", ops::Square, [](double x) { return x * x; }},
      {"Sqrt", ops::Sqrt, [](double x) { return std::sqrt(x); }},
      {"Rsqrt", ops::Rsqrt, [](double x) { return 1 / std::sqrt(x); }},
      {"Exp", ops::Exp, [](double x) { return std::exp(x); }},
      {"Log", ops::Log, [](double x) { return std::log(x); }},
      {"Relu", ops::Relu, [](double x) { return x > 0 ? x : 0; }},
      {"Sigmoid", ops::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", ops::Tanh, [](double x) { return std::tanh(x); }},
      {"Erf", ops::Erf, [](double x) { return std::erf(x); }},
  };
  for (const auto& [name, build, ref] : cases) {
    INFO(name);
    Graph g;
    Scope root = Scope::Root(&g);
    bool positive =
        std::string(name) == "Sqrt" || std::string(name) == "Rsqrt" || std::string(name) == "Log";
    Tensor x = RandomTensor({7, 33}, 5, positive ? 0.1f : -3.f, 3.f);
    Tensor got = RunOne(g, build(root, ops::Const(root, x)));
    Tensor want(DT_FLOAT, x.shape());
    for (int64_t i = 0; i < x.num_elements(); ++i)
      want.data<float>()[i] = static_cast<float>(ref(x.data<float>()[i]));
    CHECK(MaxAbsDiff(got, want) <= 1e-5);
  }
}

// Erf in double runs std::erf exactly; its gradient, 2/sqrt(pi) e^(-x^2), against finite
// differences in double (delta 1e-6: error ~1e-10), at points across [-3, 3].
TEST_CASE("Erf in double and its gradient", "[ops][math][gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor xv(DT_DOUBLE, {6});
  const double pts[] = {-2.5, -1.0, -0.1, 0.0, 0.7, 2.9};
  std::copy(pts, pts + 6, xv.data<double>());
  Output x = ops::Placeholder(root, DT_DOUBLE, {6});
  Output y = ops::Erf(root, x);
  Session sess(g);
  std::vector<Tensor> out = sess.Run({{x, xv}}, {y});
  for (int i = 0; i < 6; ++i) CHECK(out[0].data<double>()[i] == std::erf(pts[i]));
  CHECK(ComputeGradientError(root, x, {6}, y, {6}, &xv) < 1e-8);
}

// float Sigmoid and Tanh run the Highway kernels (ops/simd/vec_kernels.h), split over the pool:
// lengths around 4096 and a multi-shard tensor, checked against the double-precision formulas to
// relative 5e-7 (plus 1e-37 absolute), with NaN and infinities preserved.
TEST_CASE("Tanh and Sigmoid (vectorised float path) match the formulas", "[ops][math][nn]") {
  const std::vector<float> special = {std::nanf(""), INFINITY, -INFINITY, 0.f,   -0.f,
                                      1e-30f,        -1e-30f,  88.f,      -87.f, -104.f,
                                      20.f,          -20.f,    9.f,       1e-3f};
  struct Case {
    const char* name;
    std::function<Output(const Scope&, Output)> build;
    double (*ref)(double);
  };
  const Case cases[] = {
      {"Tanh", ops::Tanh, [](double x) { return std::tanh(x); }},
      {"Sigmoid", ops::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }},
  };
  for (const auto& [name, build, ref] : cases) {
    for (int64_t n : {int64_t{1}, int64_t{13}, int64_t{4095}, int64_t{4096}, int64_t{4097},
                      int64_t{3 * 4096 + 5}, int64_t{300'001}}) {
      INFO(name << " n=" << n);
      Graph g;
      Scope root = Scope::Root(&g);
      Tensor x = RandomTensor({n}, 11, -30.f, 30.f);
      for (size_t i = 0; i < special.size() && static_cast<int64_t>(i) < n; ++i)
        x.data<float>()[n - 1 - i] = special[i];
      Tensor got = RunOne(g, build(root, ops::Const(root, x)));
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double v = x.data<float>()[i], want = ref(v), y = got.data<float>()[i];
        if (std::isnan(want)) {
          bad += !std::isnan(y);
        } else {
          bad += !(std::fabs(y - want) <= 5e-7 * std::fabs(want) + 1e-37);
        }
      }
      CHECK(bad == 0);
    }
  }
}

// The rational tanh over a dense sweep of floats: every 769th float of [0, 10] and its
// negation (1.4 million values; beyond 9 tanh rounds to 1), against tanh in double to relative
// 4e-7. An exhaustive run over every float measured at most 3.7e-7 (ops/simd/vec_math-inl.h).
TEST_CASE("float Tanh is within 4e-7 of tanh over a dense sweep of floats", "[ops][math][nn]") {
  std::vector<float> xs;
  for (uint32_t bits = 0;; bits += 769) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    if (v > 10.f) break;
    xs.push_back(v);
    xs.push_back(-v);
  }
  Tensor x(DT_FLOAT, {static_cast<int64_t>(xs.size())});
  std::copy(xs.begin(), xs.end(), x.data<float>());
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor got = RunOne(g, ops::Tanh(root, ops::Const(root, x)));
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = std::tanh(static_cast<double>(xs[i]));
    const double rel = want == 0 ? std::fabs(got.data<float>()[i])
                                 : std::fabs(got.data<float>()[i] - want) / std::fabs(want);
    if (rel > worst) worst = rel, worst_x = xs[i];
  }
  INFO("worst at x = " << worst_x);
  CHECK(worst <= 4e-7);
  CHECK(worst > 0);  // the sweep compares real values, not a copy
}

// L2Loss sums float blocks of 2048 with SIMD lanes, then the blocks in double: against a
// double loop, relative 1e-5 (a block's float sum errs by at most ~2048 ulp of its total,
// typically far less), and the same bits on every run whatever the pool's split.
TEST_CASE("L2Loss on large tensors matches a double sum", "[ops][math][nn]") {
  for (int64_t n : {int64_t{1}, int64_t{2047}, int64_t{2048}, int64_t{2049}, int64_t{1'000'003}}) {
    INFO("n=" << n);
    Graph g;
    Scope root = Scope::Root(&g);
    Tensor x = RandomTensor({n}, 3, -2.f, 2.f);
    Output loss = ops::L2Loss(root, ops::Const(root, x));
    double want = 0;
    for (int64_t i = 0; i < n; ++i) want += 0.5 * double(x.data<float>()[i]) * x.data<float>()[i];
    const float got = RunOne(g, loss).data<float>()[0];
    CHECK(std::fabs(got - want) <= 1e-5 * want);
    CHECK(RunOne(g, loss).data<float>()[0] == got);
  }
}

// AddN adds in 2048-element chunks over the pool's shards: every input count and lengths
// around the chunk, against a naive sum (exact: the same float additions in the same order).
TEST_CASE("AddN of 1 to 5 inputs on chunked and sharded lengths", "[ops][math]") {
  for (int k : {1, 2, 3, 5}) {
    for (int64_t n : {int64_t{7}, int64_t{2049}, int64_t{100'003}}) {
      INFO("k=" << k << " n=" << n);
      Graph g;
      Scope root = Scope::Root(&g);
      std::vector<Tensor> xs;
      std::vector<Output> in;
      for (int j = 0; j < k; ++j) {
        xs.push_back(RandomTensor({n}, 20 + j));
        in.push_back(ops::Const(root, xs.back()));
      }
      Tensor got = RunOne(g, ops::AddN(root, in));
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        float want = xs[0].data<float>()[i];
        for (int j = 1; j < k; ++j) want += xs[j].data<float>()[i];
        bad += got.data<float>()[i] != want;
      }
      CHECK(bad == 0);
    }
  }
}

Tensor NaiveMatMul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  Tensor c(DT_DOUBLE, {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = ta ? a.data<float>()[p * a.dim(1) + i] : a.data<float>()[i * a.dim(1) + p];
        double y = tb ? b.data<float>()[j * b.dim(1) + p] : b.data<float>()[p * b.dim(1) + j];
        s += x * y;
      }
      c.data<double>()[i * n + j] = s;
    }
  }
  return c;
}

TEST_CASE("MatMul: all transpose cases, small and parallel sizes", "[ops][math]") {
  for (auto [m, k, n] : {std::tuple{3, 4, 5}, {1, 7, 1}, {300, 64, 20}, {20, 64, 300}, {0, 3, 4}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        INFO(m << "x" << k << "x" << n << " ta=" << ta << " tb=" << tb);
        Graph g;
        Scope root = Scope::Root(&g);
        Tensor a = RandomTensor(ta ? Shape{k, m} : Shape{m, k}, 11);
        Tensor b = RandomTensor(tb ? Shape{n, k} : Shape{k, n}, 12);
        Tensor got = RunOne(g, ops::MatMul(root, ops::Const(root, a), ops::Const(root, b), ta, tb));
        Tensor want = NaiveMatMul(a, b, ta, tb);
        REQUIRE(got.shape() == want.shape());
        double err = 0;
        for (int64_t i = 0; i < got.num_elements(); ++i)
          err = std::max(err, std::abs(got.data<float>()[i] - want.data<double>()[i]));
        CHECK(err <= 1e-4);
      }
    }
  }
}

TEST_CASE("MatMul splits a product over rows, columns or the sum over k", "[ops][math]") {
  using D = GemmSplit::Dim;
  auto split = [](int64_t m, int64_t n, int64_t k, bool avx2) {
    const GemmSplit s = ChooseGemmSplit(m, n, k, 2, avx2);
    return std::pair{s.dim, s.shards};
  };
  CHECK(split(3, 5, 4, true).second == 1);  // too small to share
  CHECK(split(2000, 512, 600, true) == std::pair{D::kRows, int64_t{2}});
  CHECK(split(20, 300, 64, true) == std::pair{D::kCols, int64_t{2}});
  // A weight gradient's shape: row halves of 300 would take oneDNN's AVX2 no-copy kernel, the
  // whole product would not, so the sum over k is split; not on AVX-512, nor where k is short.
  CHECK(split(600, 512, 2000, true) == std::pair{D::kDepth, int64_t{2}});
  CHECK(split(600, 512, 2000, false) == std::pair{D::kRows, int64_t{2}});
  CHECK(split(600, 512, 300, true) == std::pair{D::kRows, int64_t{2}});
  CHECK(split(512, 128, 2000, true) == std::pair{D::kRows, int64_t{2}});  // no-copy anyway

  // The same kernel on a shape that splits over k when oneDNN runs below AVX-512 (CI's avx2 cap
  // run caps oneDNN through PF_MAX_CPU_ISA=avx2): against a product in double.
  for (bool ta : {false, true}) {
    INFO("ta=" << ta);
    const int64_t m = 600, n = 600, k = 520;
    Graph g;
    Scope root = Scope::Root(&g);
    Tensor a = RandomTensor(ta ? Shape{k, m} : Shape{m, k}, 21);
    Tensor b = RandomTensor(Shape{k, n}, 22);
    Tensor got = RunOne(g, ops::MatMul(root, ops::Const(root, a), ops::Const(root, b), ta, false));
    Tensor want = NaiveMatMul(a, b, ta, false);
    double err = 0;
    for (int64_t i = 0; i < got.num_elements(); ++i)
      err = std::max(err, std::abs(got.data<float>()[i] - want.data<double>()[i]));
    CHECK(err <= 1e-3);  // sums of 520 products of values in [-1, 1]: float rounding ~1e-5
  }
}

TEST_CASE("MatMul in float64 and its runtime shape check", "[ops][math]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor a = Tensor::FromVector<double>({1, 2, 3, 4}, {2, 2});
  Tensor got = RunOne(g, ops::MatMul(root, ops::Const(root, a), ops::Const(root, a)));
  CHECK(got.DebugString() == "Tensor<double [2,2]> [[7, 10], [15, 22]]");
  Output x = ops::Placeholder(root, DT_FLOAT, {-1, -1});
  Output y = ops::MatMul(root, x, ops::Const(root, Tensor(DT_FLOAT, {3, 2})));
  Session sess(g);
  CHECK_THROWS_WITH(
      sess.Run({{x, Tensor(DT_FLOAT, {3, 4})}}, {y}),
      Catch::Matchers::Contains("Matrix size-incompatible: In[0]: [3,4], In[1]: [3,2]"));
}

// Naive reduction over `axes` of a [2,3,4] tensor.
Tensor NaiveReduce(const Tensor& x, const std::vector<int>& axes, bool keep,
                   const std::string& kind) {
  std::vector<bool> red(x.rank(), axes.empty());
  for (int a : axes) red[a < 0 ? a + x.rank() : a] = true;
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    if (!red[d])
      out.AddDim(x.dim(d));
    else if (keep)
      out.AddDim(1);
  }
  std::map<int64_t, std::vector<double>> groups;
  std::vector<int64_t> idx(x.rank(), 0);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t key = 0;
    for (int d = 0; d < x.rank(); ++d) key = key * x.dim(d) + (red[d] ? 0 : idx[d]);
    groups[key].push_back(x.data<float>()[i]);
    for (int d = x.rank() - 1; d >= 0; --d) {
      if (++idx[d] < x.dim(d)) break;
      idx[d] = 0;
    }
  }
  Tensor t(DT_FLOAT, out);
  int64_t o = 0;
  for (auto& [key, vals] : groups) {
    double r = kind == "Max" ? -1e30 : kind == "Min" ? 1e30 : 0;
    for (double v : vals)
      r = kind == "Max" ? std::max(r, v) : kind == "Min" ? std::min(r, v) : r + v;
    if (kind == "Mean") r /= vals.size();
    t.data<float>()[o++] = static_cast<float>(r);
  }
  return t;
}

TEST_CASE("Reductions over any axes, with keep_dims", "[ops][math]") {
  using BuildFn = Output (*)(const Scope&, Output, const std::vector<int32_t>&, bool);
  const std::vector<std::pair<std::string, BuildFn>> kinds = {
      {"Sum", ops::Sum}, {"Mean", ops::Mean}, {"Max", ops::Max}, {"Min", ops::Min}};
  const std::vector<std::vector<int>> axes_list = {{},     {0},    {1},    {2},      {-1},
                                                   {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}};
  Tensor x = RandomTensor({2, 3, 4}, 21);
  for (const auto& [kind, build] : kinds) {
    for (const auto& axes : axes_list) {
      for (bool keep : {false, true}) {
        INFO(kind << " axes=" << axes.size() << " keep=" << keep);
        Graph g;
        Scope root = Scope::Root(&g);
        Tensor got = RunOne(g, build(root, ops::Const(root, x),
                                     std::vector<int32_t>(axes.begin(), axes.end()), keep));
        CHECK(MaxAbsDiff(got, NaiveReduce(x, axes, keep, kind)) <= 1e-5);
      }
    }
  }
  Graph g;
  Scope root = Scope::Root(&g);
  CHECK_THROWS_WITH(
      ops::Sum(root, ops::Const(root, x), {3}),
      Catch::Matchers::Contains("Invalid reduction dimension (3 for input with 3 dimension(s)"));
}

TEST_CASE("Large row and column sums match double-precision references", "[ops][math]") {
  Tensor x = RandomTensor({64, 5000}, 31);
  Graph g;
  Scope root = Scope::Root(&g);
  Session sess(g);
  auto out = sess.Run(
      {ops::Sum(root, ops::Const(root, x), {1}), ops::Sum(root, ops::Const(root, x), {0})});
  CHECK(MaxAbsDiff(out[0], NaiveReduce(x, {1}, false, "Sum")) <= 1e-3);
  CHECK(MaxAbsDiff(out[1], NaiveReduce(x, {0}, false, "Sum")) <= 1e-4);
}

TEST_CASE("ArgMax and AddN", "[ops][math]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = Tensor::FromVector<float>({1, 9, 3, 7, 2, 8}, {2, 3});
  Output c = ops::Const(root, x);
  Session sess(g);
  auto out = sess.Run({ops::ArgMax(root, c, 1), ops::ArgMax(root, c, 0, DT_INT32),
                       ops::AddN(root, {c, c, ops::Neg(root, c)})});
  CHECK(out[0].DebugString() == "Tensor<int64 [2]> [1, 2]");
  CHECK(out[1].DebugString() == "Tensor<int32 [3]> [1, 0, 1]");
  CHECK(out[2].BitwiseEqual(x));
  CHECK_THROWS_WITH(
      ops::AddN(root, {c, ops::Const(root, Tensor(DT_FLOAT, {3, 2}))}),
      Catch::Matchers::Contains("Inputs to operation AddN must have the same size and shape"));
  // The shape functions and the kernels share one check per op (reduction_ops.h): the same
  // message at build time and, for shapes known only when the graph runs, from the kernel.
  CHECK_THROWS_WITH(ops::ArgMax(root, ops::Const(root, Tensor(DT_FLOAT, {2, 0})), 1),
                    Catch::Matchers::Contains("Reduction axis 1 is empty in shape [2,0]"));
  Output p = ops::Placeholder(root, DT_FLOAT);
  Output q = ops::Placeholder(root, DT_FLOAT);
  Output sum = ops::AddN(root, {p, q});
  Output arg = ops::ArgMax(root, p, 1);
  CHECK_THROWS_WITH(
      sess.Run({{p, x}, {q, Tensor(DT_FLOAT, {3, 2})}}, {sum}),
      Catch::Matchers::Contains("Inputs to operation AddN must have the same size and shape.  "
                                "Input 0: [2,3] != input 1: [3,2]"));
  CHECK_THROWS_WITH(sess.Run({{p, Tensor(DT_FLOAT, {2, 0})}}, {arg}),
                    Catch::Matchers::Contains("Reduction axis 1 is empty in shape [2,0]"));
}

TEST_CASE("Floor rounds down", "[ops][math]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = Tensor::FromVector<float>({-1.5f, -1.f, -0.25f, 0.f, 0.75f, 2.f}, {2, 3});
  CHECK(RunOne(g, ops::Floor(root, ops::Const(root, x))).DebugString() ==
        "Tensor<float [2,3]> [[-2, -1, -1], [0, 0, 2]]");
}

}  // namespace
}  // namespace pf::math_ops_test
