// The half and bfloat16 kernels of mixed precision's ops (ops/half_via_float.cc) against float32:
// each op runs on float inputs rounded to the 16-bit type, and
//  - its output is the float kernel's output on the same rounded inputs, rounded once (bitwise
//    where the 16-bit kernel computes in float32; within one ulp for oneDNN's native bfloat16
//    matmul, which sums in another order);
//  - its output and the gradients of sum(output * w) with respect to its inputs are within
//    8 eps max(1, max|y|) of the float32 op on the unrounded inputs (eps = 2^-11 for half,
//    2^-8 for bfloat16: the inputs' rounding, summed over at most ~100 products of values in
//    [-1, 1], and the output's; the gradients round once more per op of the backward graph).
#include <cmath>
#include <functional>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/half_via_float.h"
#include "tests/testing/test_util.h"

namespace pf::half_kernels_test {
namespace {

using In = std::vector<Output>;
struct HalfCase {
  std::string name;
  std::vector<Shape> inputs;  // float inputs in [-1, 1]
  std::function<Output(const Scope&, const In&)> build;
};

std::vector<HalfCase> Cases() {
  const ops::ConvAttrs nchw{"NCHW", {1, 1, 1, 1}, {}};
  std::vector<HalfCase> c = {
      {"MatMul",
       {{8, 64}, {64, 16}},
       [](const Scope& s, const In& x) { return ops::MatMul(s, x[0], x[1]); }},
      {"MatMul transpose_b",
       {{8, 64}, {16, 64}},
       [](const Scope& s, const In& x) { return ops::MatMul(s, x[0], x[1], false, true); }},
      {"BiasAdd, Relu",
       {{8, 16}, {16}},
       [](const Scope& s, const In& x) { return ops::Relu(s, ops::BiasAdd(s, x[0], x[1])); }},
      {"Relu6",
       {{7, 33}},
       [](const Scope& s, const In& x) {
         return ops::Relu6(s, ops::Mul(s, x[0], ScalarOf(s, 8, x[0].dtype())));
       }},
      {"Sigmoid", {{7, 33}}, [](const Scope& s, const In& x) { return ops::Sigmoid(s, x[0]); }},
      {"Tanh", {{7, 33}}, [](const Scope& s, const In& x) { return ops::Tanh(s, x[0]); }},
      {"Softmax", {{7, 33}}, [](const Scope& s, const In& x) { return ops::Softmax(s, x[0]); }},
      {"LogSoftmax",
       {{7, 33}},
       [](const Scope& s, const In& x) { return ops::LogSoftmax(s, x[0]); }},
      {"Conv2D SAME stride 2",
       {{3, 9, 8, 5}, {3, 3, 5, 6}},
       [](const Scope& s, const In& x) {
         return ops::Conv2D(s, x[0], x[1], {1, 2, 2, 1}, "SAME");
       }},
      {"Conv2D NCHW",
       {{2, 5, 7, 6}, {3, 3, 5, 4}},
       [nchw](const Scope& s, const In& x) {
         return ops::Conv2D(s, x[0], x[1], {1, 1, 1, 1}, "VALID", nchw);
       }},
      {"DepthwiseConv2dNative",
       {{2, 7, 7, 4}, {3, 3, 4, 2}},
       [](const Scope& s, const In& x) {
         return ops::DepthwiseConv2dNative(s, x[0], x[1], {1, 1, 1, 1}, "SAME");
       }},
      {"MaxPool",
       {{2, 8, 8, 3}},
       [](const Scope& s, const In& x) {
         return ops::MaxPool(s, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
       }},
      {"AvgPool",
       {{2, 7, 7, 3}},
       [](const Scope& s, const In& x) {
         return ops::AvgPool(s, x[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
       }},
      {"FusedBatchNorm (float statistics)",
       {{4, 5, 5, 8}},
       [](const Scope& s, const In& x) {
         Output scale = ops::Const(s, Tensor::FromVector(std::vector<float>(8, 1.5f)));
         Output offset = ops::Const(s, Tensor::FromVector(std::vector<float>(8, 0.25f)));
         Output empty = ops::Const(s, Tensor(DT_FLOAT, Shape{0}));
         return ops::FusedBatchNorm(s, x[0], scale, offset, empty, empty).y;
       }},
      {"SoftmaxCrossEntropyWithLogits",
       {{6, 10}, {6, 10}},
       [](const Scope& s, const In& x) {
         return ops::SoftmaxCrossEntropyWithLogits(s, x[0], ops::Softmax(s, x[1])).first;
       }},
      {"SparseSoftmaxCrossEntropyWithLogits",
       {{6, 10}},
       [](const Scope& s, const In& x) {
         Output labels = ops::Const(s, Tensor::FromVector(std::vector<int32_t>{0, 3, 9, 2, 2, 7}));
         return ops::SparseSoftmaxCrossEntropyWithLogits(s, x[0], labels).first;
       }},
      {"AddN of 3",
       {{5, 40}, {5, 40}, {5, 40}},
       [](const Scope& s, const In& x) { return ops::AddN(s, x); }},
  };
  return c;
}

double Eps(DType t) { return std::ldexp(1.0, t == DT_HALF ? -11 : -8); }

double MaxAbs(const Tensor& t) {
  double m = 0;
  for (float v : t.flat<float>()) m = std::max(m, static_cast<double>(std::abs(v)));
  return m;
}

// Within one ulp of `t` (2 eps |once|), or bitwise.
void CheckRoundedOnce(const Tensor& got, const Tensor& once, DType t, bool bitwise) {
  if (bitwise) {
    CHECK(got.BitwiseEqual(once));
    return;
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double g = got.data<float>()[i], o = once.data<float>()[i];
    INFO("element " << i << ": " << g << " against " << o);
    CHECK(std::abs(g - o) <= 2 * Eps(t) * std::abs(o));
  }
}

void CheckClose(const Tensor& got, const Tensor& want, DType t) {
  const double tol = 8 * Eps(t) * std::max(1.0, MaxAbs(want));
  INFO("tolerance " << tol);
  CHECK(testing::MaxAbsDiff(got, want) <= tol);
}

// The case in float32, in `t` (casts around it), and the float op on rounded inputs rounded
// once; the gradients of sum(y * w) in float32 and in `t`.
void RunCase(const HalfCase& c, DType t, uint32_t seed) {
  Graph g;
  Scope root = Scope::Root(&g);
  In xs, xs16, xs_rounded;
  FeedDict feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Output x = ops::Placeholder(root, DT_FLOAT, c.inputs[i]);
    feeds.push_back({x, testing::RandomTensor(c.inputs[i], seed + static_cast<uint32_t>(i))});
    xs.push_back(x);
    xs16.push_back(ops::Cast(root, x, t));
    xs_rounded.push_back(ops::Cast(root, xs16.back(), DT_FLOAT));
  }
  Output y = c.build(root.WithOpName("f32"), xs);
  Output y16 = c.build(root.WithOpName("f16"), xs16);
  Output once = ops::Cast(root, ops::Cast(root, c.build(root, xs_rounded), t), DT_FLOAT);
  Output w = ops::Placeholder(root, DT_FLOAT, y.shape());
  Tensor w_value = testing::RandomTensor(y.shape(), seed + 99);
  feeds.push_back({w, w_value});
  std::vector<Output> dx = Gradients(root, {y}, xs, {w});
  std::vector<Output> dx16 = Gradients(root, {y16}, xs16, {ops::Cast(root, w, t)});
  std::vector<Output> fetches = {y, ops::Cast(root, y16, DT_FLOAT), once};
  for (size_t i = 0; i < xs.size(); ++i) {
    // No gradient (a cross-entropy's labels): none in either type.
    REQUIRE((dx[i].node == nullptr) == (dx16[i].node == nullptr));
    if (dx[i].node == nullptr) continue;
    fetches.push_back(dx[i]);
    fetches.push_back(ops::Cast(root, dx16[i], DT_FLOAT));
  }
  Session sess(g);
  std::vector<Tensor> r = sess.Run(feeds, fetches);
  const bool native = t == DT_BFLOAT16 && DnnlNativeBf16() && c.name.rfind("MatMul", 0) == 0;
  CheckRoundedOnce(r[1], r[2], t, !native);
  CheckClose(r[1], r[0], t);
  for (size_t i = 3; i + 1 < r.size(); i += 2) {
    INFO("gradient " << (i - 3) / 2);
    CheckClose(r[i + 1], r[i], t);
  }
}

TEST_CASE("Half and bfloat16 kernels match float32 on rounded inputs, forward and backward") {
  uint32_t seed = 1;
  for (const HalfCase& c : Cases()) {
    for (DType t : {DT_HALF, DT_BFLOAT16}) {
      INFO(c.name << " in " << DTypeName(t));
      RunCase(c, t, seed);
    }
    seed += 10;
  }
}

TEST_CASE("A 16-bit kernel's trace says how it computed") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Cast(
      root, ops::Const(root, Tensor::FromVector(std::vector<float>{1, 2, 3, 4}, Shape{2, 2})),
      DT_BFLOAT16);
  Output p = ops::MatMul(root.WithOpName("product"), a, a);
  Session sess(g);
  RunOptions options;
  options.trace = true;
  RunMetadata meta;
  std::vector<Tensor> r = sess.Run(options, {}, {ops::Cast(root, p, DT_FLOAT)}, {}, &meta);
  CHECK(r[0].flat<float>()[0] == 7.f);  // [[1,2],[3,4]]^2 = [[7,10],[15,22]]
  CHECK(r[0].flat<float>()[3] == 22.f);
  bool found = false;
  for (const NodeExecStats& n : meta.step_stats) {
    if (n.node == "product") {
      found = true;
      CHECK_THAT(n.label, Catch::Matchers::Contains(DnnlNativeBf16() ? "oneDNN bfloat16 matmul"
                                                                     : "float32 compute"));
    }
  }
  CHECK(found);
}

// The bfloat16 graph's outputs as float32, built by `build` from float32 inputs, with oneDNN's
// native bfloat16 kernels or (native false) the float32 path.
std::vector<Tensor> RunBf16(bool native,
                            const std::function<std::vector<Output>(const Scope&)>& build) {
  if (!native) setenv("PF_ONEDNN_BF16", "0", 1);
  Graph g;
  Scope root = Scope::Root(&g);
  std::vector<Output> fetches;
  for (Output y : build(root)) fetches.push_back(ops::Cast(root, y, DT_FLOAT));
  std::vector<Tensor> out = Session(g).Run(fetches);
  unsetenv("PF_ONEDNN_BF16");
  return out;
}

Output Bf16Const(const Scope& s, const Shape& shape, uint32_t seed) {
  return ops::Cast(s, ops::Const(s, testing::RandomTensor(shape, seed)), DT_BFLOAT16);
}

TEST_CASE("bfloat16 matmuls and convolutions: oneDNN's native kernels against the float32 path") {
  if (!DnnlNativeBf16()) {
    WARN("this CPU has no native bfloat16 math in oneDNN: only the float32 path ran");
    return;
  }
  auto build = [](const Scope& s) {
    Output a = Bf16Const(s, {67, 300}, 5), b = Bf16Const(s, {300, 45}, 6);
    Output mm = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, a, b), Bf16Const(s, {45}, 7)));
    Output x = Bf16Const(s, {4, 12, 12, 8}, 8), f = Bf16Const(s, {3, 3, 8, 16}, 9);
    Output y = ops::Conv2D(s, x, f, {1, 1, 1, 1}, "SAME");
    std::vector<Output> d = Gradients(s, {y}, {x, f}, {Bf16Const(s, {4, 12, 12, 16}, 10)});
    Output dw =
        ops::DepthwiseConv2dNative(s, x, Bf16Const(s, {3, 3, 8, 2}, 11), {1, 2, 2, 1}, "SAME");
    return std::vector<Output>{mm, y, d[0], d[1], dw};
  };
  std::vector<Tensor> native = RunBf16(true, build), via_float = RunBf16(false, build);
  // Both sum exact products in float32, in their own orders, and round to bfloat16 (the filter
  // gradient's per-shard partials once more): within 4 eps of each output's largest value.
  for (size_t t = 0; t < native.size(); ++t) {
    INFO("output " << t);
    CHECK(testing::MaxAbsDiff(native[t], via_float[t]) <=
          4 * Eps(DT_BFLOAT16) * MaxAbs(via_float[t]));
  }
}

TEST_CASE("A node with 16-bit inputs and float32 statistics of another dtype has no kernel") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Cast(root, ops::Placeholder(root, DT_FLOAT, Shape{1, 2, 2, 3}), DT_HALF);
  Output v = ops::Const(root, Tensor::FromVector(std::vector<double>{1, 1, 1}));
  Output e = ops::Const(root, Tensor(DT_DOUBLE, Shape{0}));
  Output y = ops::FusedBatchNorm(root.WithOpName("bn"), x, v, v, e, e).y;
  Session sess(g);
  CHECK_THROWS_WITH(sess.Run({{x.node->input(0), Tensor(DT_FLOAT, Shape{1, 2, 2, 3})}}, {y}),
                    Catch::Matchers::Contains("No OpKernel was registered") &&
                        Catch::Matchers::Contains("U=double"));
}

}  // namespace
}  // namespace pf::half_kernels_test
