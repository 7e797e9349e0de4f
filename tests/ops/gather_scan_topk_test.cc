// The everyday ops of issue 33 (ops/everyday_ops.h), part 2: GatherV2 with an axis, Tile,
// Range, Cumsum, TopK and InTopK against naive loops, their gradients against finite
// differences (float64, error < 1e-6), the errors TensorFlow gives, and soft placement of
// these CPU-only ops from a GPU request.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "placeflow/ops/everyday_ops.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/test_util.h"

namespace pf::gather_scan_topk_test {
namespace {

using Catch::Matchers::Contains;
using testing::RandomDoubleTensor;
using testing::RandomTensor;
using testing::RunOne;

// Row-major offset of `idx` in `dims`.
int64_t Offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  int64_t o = 0;
  for (size_t d = 0; d < dims.size(); ++d) o = o * dims[d] + idx[d];
  return o;
}
// The multi-index of offset `o` in `dims`.
std::vector<int64_t> Index(const std::vector<int64_t>& dims, int64_t o) {
  std::vector<int64_t> idx(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    idx[d] = o % dims[d];
    o /= dims[d];
  }
  return idx;
}

TEST_CASE("GatherV2 along every axis matches index arithmetic", "[ops][everyday]") {
  const std::vector<int64_t> pd = {3, 4, 5};
  Tensor params = RandomTensor({3, 4, 5}, 1);
  Tensor indices = Tensor::FromVector<int64_t>({2, 0, 2, 1}, {2, 2});
  for (int axis : {0, 1, 2, -1}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Tensor got =
        RunOne(g, ops::GatherV2(root, ops::Const(root, params), ops::Const(root, indices), axis));
    const int a = axis < 0 ? 2 : axis;
    std::vector<int64_t> od(pd.begin(), pd.begin() + a);
    od.insert(od.end(), {2, 2});
    od.insert(od.end(), pd.begin() + a + 1, pd.end());
    REQUIRE(got.shape() == Shape(std::span<const int64_t>(od)));
    for (int64_t o = 0; o < got.num_elements(); ++o) {
      std::vector<int64_t> oi = Index(od, o);
      std::vector<int64_t> pi(oi.begin(), oi.begin() + a);
      pi.push_back(indices.data<int64_t>()[oi[a] * 2 + oi[a + 1]]);
      pi.insert(pi.end(), oi.begin() + a + 2, oi.end());
      REQUIRE(got.data<float>()[o] == params.data<float>()[Offset(pd, pi)]);
    }
  }
}

TEST_CASE("GatherV2 errors and gradients (repeated indices add up)", "[ops][everyday][grad]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output params = ops::Const(root, RandomTensor({3, 4}, 2));
  CHECK_THROWS_WITH(
      ops::GatherV2(root.WithOpName("g_axis"), params, ops::ConstInt(root, 1), 2),
      Contains("Expected axis in the range [-2, 2), but got 2") && Contains("g_axis"));
  Output bad = ops::GatherV2(root, params, ops::ConstInt(root, std::vector<int32_t>{1, 4}), 1);
  CHECK_THROWS_WITH(RunOne(g, bad), Contains("indices[1] = 4 is not in [0, 4)"));
  for (int axis : {0, 1}) {
    Output p = ops::Placeholder(root, DT_DOUBLE, {3, 4});
    Output idx = ops::ConstInt(root, std::vector<int32_t>{2, 0, 2});
    Output y = ops::GatherV2(root, p, idx, axis);
    CHECK(ComputeGradientError(root, p, {3, 4}, y, y.shape()) < 1e-6);
  }
  CHECK_THROWS_WITH(NodeBuilder(root, "GatherV2")
                        .Input(params)
                        .Input(ops::ConstInt(root, 1))
                        .Input(ops::ConstInt(root, 0))
                        .Attr("batch_dims", int64_t{1})
                        .Finalize(),
                    Contains("batch_dims != 0 is not supported (got 1)"));
  // An axis fed at run time.
  Output ap = ops::Placeholder(root, DT_INT32, {});
  Output ga = ops::GatherV2(root, params, ops::ConstInt(root, std::vector<int32_t>{0, 0}), ap);
  CHECK(ga.shape() == Shape{-1, -1});
  CHECK(RunOne(g, ga, {{ap, Tensor::Scalar(int32_t{1})}}).shape() == Shape{3, 2});
  CHECK(RunOne(g, ga, {{ap, Tensor::Scalar(int32_t{-2})}}).shape() == Shape{2, 4});
  CHECK_THROWS_WITH(RunOne(g, ga, {{ap, Tensor::Scalar(int32_t{5})}}),
                    Contains("Expected axis in the range [-2, 2), but got 5"));
  // The gradient of a repeated row is the sum of its copies' gradients.
  Output p = ops::Placeholder(root, DT_DOUBLE, {3, 2});
  Output y = ops::GatherV2(root, p, ops::ConstInt(root, std::vector<int32_t>{1, 1, 2}), 0);
  Tensor dp = RunOne(g, Gradients(root, {y}, {p})[0], {{p, RandomDoubleTensor({3, 2}, 3)}});
  CHECK(dp.ToVector<double>() == std::vector<double>{0, 0, 2, 2, 1, 1});
}

TEST_CASE("Tile repeats each dimension; its gradient sums the copies", "[ops][everyday][grad]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({2, 3}, 4);
  Tensor got = RunOne(g, ops::Tile(root, ops::Const(root, x), std::vector<int32_t>{3, 2}));
  REQUIRE(got.shape() == Shape{6, 6});
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 6; ++j)
      REQUIRE(got.data<float>()[i * 6 + j] == x.data<float>()[(i % 2) * 3 + j % 3]);
  CHECK(RunOne(g, ops::Tile(root, ops::Const(root, x), std::vector<int32_t>{0, 1})).shape() ==
        Shape{0, 3});
  CHECK_THROWS_WITH(ops::Tile(root, ops::Const(root, x), std::vector<int32_t>{2}),
                    Contains("Expected multiples argument to be a vector of length 2 but got "
                             "length 1"));
  CHECK_THROWS_WITH(ops::Tile(root, ops::Const(root, x), std::vector<int32_t>{1, -1}),
                    Contains("Expected multiples[1] >= 0, but got -1"));
  Output p = ops::Placeholder(root, DT_DOUBLE, {2, 1, 3});
  Output y = ops::Tile(root, p, std::vector<int32_t>{2, 3, 1});
  CHECK(ComputeGradientError(root, p, {2, 1, 3}, y, {4, 3, 3}) < 1e-6);
  Tensor ones = RunOne(g, Gradients(root, {y}, {p})[0], {{p, RandomDoubleTensor({2, 1, 3}, 5)}});
  for (double v : ones.flat<double>()) CHECK(v == 6);  // 2 * 3 copies of each element
  // Multiples from a fed tensor: the shape comes at run time.
  Output m = ops::Placeholder(root, DT_INT32, {2});
  Output t = ops::Tile(root, ops::Const(root, x), m);
  CHECK(t.shape() == Shape{-1, -1});
  CHECK(RunOne(g, t, {{m, Tensor::FromVector<int32_t>({1, 4})}}).shape() == Shape{2, 12});
}

TEST_CASE("Range in every dtype, TensorFlow's sizes and errors", "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  CHECK(RunOne(g, ops::Range(root, 0, 5)).ToVector<int32_t>() ==
        std::vector<int32_t>{0, 1, 2, 3, 4});
  CHECK(RunOne(g, ops::Range(root, 10, 1, -4)).ToVector<int32_t>() ==
        std::vector<int32_t>{10, 6, 2});
  CHECK(RunOne(g, ops::Range(root, 3, 3)).num_elements() == 0);
  auto scalar = [&](auto v) { return ops::Const(root, Tensor::Scalar(v)); };
  Tensor f = RunOne(g, ops::Range(root, scalar(1.f), scalar(2.f), scalar(0.3f)));
  REQUIRE(f.shape() == Shape{4});  // ceil(1 / 0.3)
  for (int i = 0; i < 4; ++i) CHECK(f.data<float>()[i] == Approx(1 + 0.3 * i));
  Tensor d = RunOne(g, ops::Range(root, scalar(0.0), scalar(-1.0), scalar(-0.25)));
  CHECK(d.ToVector<double>() == std::vector<double>{0, -0.25, -0.5, -0.75});
  Tensor l = RunOne(g, ops::Range(root, scalar(int64_t{1} << 40), scalar((int64_t{1} << 40) + 3),
                                  scalar(int64_t{2})));
  CHECK(l.ToVector<int64_t>() == std::vector<int64_t>{int64_t{1} << 40, (int64_t{1} << 40) + 2});
  CHECK_THROWS_WITH(ops::Range(root, 0, 5, 0), Contains("Requires delta != 0: 0"));
  CHECK_THROWS_WITH(ops::Range(root, 5, 1, 1),
                    Contains("Requires start <= limit when delta > 0: 5/1"));
  CHECK_THROWS_WITH(ops::Range(root, 1, 5, -1),
                    Contains("Requires start >= limit when delta < 0: 1/5"));
  // A fed limit: the length is known at run time only; errors then name the node.
  Output lim = ops::Placeholder(root, DT_INT32, {});
  Output r =
      ops::Range(root.WithOpName("fed_range"), ops::ConstInt(root, 2), lim, ops::ConstInt(root, 1));
  CHECK(r.shape() == Shape{-1});
  CHECK(RunOne(g, r, {{lim, Tensor::Scalar(int32_t{6})}}).ToVector<int32_t>() ==
        std::vector<int32_t>{2, 3, 4, 5});
  CHECK_THROWS_WITH(
      RunOne(g, r, {{lim, Tensor::Scalar(int32_t{0})}}),
      Contains("Requires start <= limit when delta > 0: 2/0") && Contains("fed_range"));
}

// Naive scan along `axis` of a [3, 4, 2] tensor.
Tensor NaiveCumsum(const Tensor& x, int axis, bool exclusive, bool reverse) {
  const std::vector<int64_t> dims = {3, 4, 2};
  Tensor out(DT_DOUBLE, x.shape());
  for (int64_t o = 0; o < x.num_elements(); ++o) {
    std::vector<int64_t> idx = Index(dims, o);
    double sum = 0;
    for (int64_t j = 0; j < dims[axis]; ++j) {
      const bool before = reverse ? j > idx[axis] : j < idx[axis];
      if (!(before || (!exclusive && j == idx[axis]))) continue;
      std::vector<int64_t> at = idx;
      at[axis] = j;
      sum += x.data<double>()[Offset(dims, at)];
    }
    out.data<double>()[o] = sum;
  }
  return out;
}

TEST_CASE("Cumsum: exclusive and reverse along every axis, and its gradient",
          "[ops][everyday][grad]") {
  Tensor x = RandomDoubleTensor({3, 4, 2}, 6);
  for (int axis : {0, 1, 2}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        Graph g;
        Scope root = Scope::Root(&g);
        Tensor got = RunOne(g, ops::Cumsum(root, ops::Const(root, x), axis, exclusive, reverse));
        CHECK(testing::MaxAbsDiff(got, NaiveCumsum(x, axis, exclusive, reverse)) < 1e-12);
        Output p = ops::Placeholder(root, DT_DOUBLE, {3, 4, 2});
        Output y = ops::Cumsum(root, p, axis - 3, exclusive, reverse);  // negative axis too
        CHECK(ComputeGradientError(root, p, {3, 4, 2}, y, {3, 4, 2}) < 1e-6);
      }
    }
  }
  Graph g;
  Scope root = Scope::Root(&g);
  CHECK(RunOne(g, ops::Cumsum(root, ops::ConstInt(root, std::vector<int32_t>{1, 2, 3}), 0))
            .ToVector<int32_t>() == std::vector<int32_t>{1, 3, 6});
  CHECK_THROWS_WITH(ops::Cumsum(root, ops::Const(root, x), 3),
                    Contains("Expected scan axis in the range [-3, 3), but got 3"));
}

TEST_CASE("TopK: the k largest per row, ties to the lower index; gradient and errors",
          "[ops][everyday][grad]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({4, 7}, 7);
  x.data<float>()[2] = x.data<float>()[5] = 2.f;  // a tie at the top of row 0
  auto top = ops::TopK(root, ops::Const(root, x), 3);
  Session sess(g);
  auto out = sess.Run({top.values, top.indices});
  REQUIRE(out[0].shape() == Shape{4, 3});
  CHECK(out[1].dtype() == DT_INT32);
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<int32_t> order(7);
    std::iota(order.begin(), order.end(), 0);
    const float* row = x.data<float>() + r * 7;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    for (int j = 0; j < 3; ++j) {
      CHECK(out[1].data<int32_t>()[r * 3 + j] == order[j]);
      CHECK(out[0].data<float>()[r * 3 + j] == row[order[j]]);
    }
  }
  CHECK(out[1].data<int32_t>()[0] == 2);
  CHECK(out[1].data<int32_t>()[1] == 5);
  CHECK_THROWS_WITH(
      ops::TopK(root.WithOpName("big_k"), ops::Const(root, x), 8),
      Contains("input must have last dimension >= k = 8 but is 7") && Contains("big_k"));
  CHECK_THROWS_WITH(ops::TopK(root, ops::Const(root, x), -1), Contains("Need k >= 0, got -1"));
  Output p = ops::Placeholder(root, DT_DOUBLE, {3, 5});
  auto tp = ops::TopK(root, p, 2);
  CHECK(ComputeGradientError(root, p, {3, 5}, tp.values, {3, 2}) < 1e-6);
  // k fed at run time: the output shape and the check come then, naming the node.
  Output kp = ops::Placeholder(root, DT_INT32, {});
  auto fed = ops::TopK(root.WithOpName("fed_k"), ops::Const(root, x), kp);
  CHECK(fed.values.shape() == Shape{4, -1});
  CHECK(RunOne(g, fed.indices, {{kp, Tensor::Scalar(int32_t{2})}}).shape() == Shape{4, 2});
  CHECK_THROWS_WITH(
      RunOne(g, fed.values, {{kp, Tensor::Scalar(int32_t{9})}}),
      Contains("input must have last dimension >= k = 9 but is 7") && Contains("fed_k"));
  // int32 input.
  auto ti = ops::TopK(root, ops::ConstInt(root, std::vector<int32_t>{3, 9, 9, 1}), 2);
  CHECK(RunOne(g, ti.indices).ToVector<int32_t>() == std::vector<int32_t>{1, 2});
}

TEST_CASE("InTopK: ties count for the target; non-finite rows and bad targets are false",
          "[ops][everyday]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const float inf = std::numeric_limits<float>::infinity();
  Output pred = ops::Const(root,
                           std::vector<float>{0.1f, 0.5f, 0.5f, 0.2f,   //
                                              0.9f, 0.1f, 0.3f, 0.2f,   //
                                              0.1f, inf, 0.0f, 0.2f,    //
                                              0.4f, 0.3f, 0.2f, 0.1f},  //
                           {4, 4});
  Output targets = ops::ConstInt(root, std::vector<int32_t>{2, 2, 3, 7});
  Session sess(g);
  auto out = sess.Run({ops::InTopK(root, pred, targets, 1), ops::InTopK(root, pred, targets, 2)});
  CHECK(out[0].ToVector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK(out[1].ToVector<bool>() == std::vector<bool>{true, true, false, false});
  Output t64 = ops::Const(root, std::vector<int64_t>{1, 0, 0, 0}, {4});
  CHECK(RunOne(g, ops::InTopK(root, pred, t64, 1)).ToVector<bool>() ==
        std::vector<bool>{true, true, false, true});
  CHECK_THROWS_WITH(ops::InTopK(root, pred, ops::ConstInt(root, std::vector<int32_t>{1, 2}), 1),
                    Contains("First dimension of predictions 4 must match length of targets 2"));
}

TEST_CASE("The everyday ops have CPU kernels only: a GPU request soft-places them on the CPU",
          "[ops][everyday][placer]") {
  DeviceSet devices;
  devices.Add(std::make_unique<testing::FakeDevice>(kDeviceCpu, 0, 100, true));
  devices.Add(std::make_unique<testing::FakeDevice>(kDeviceGpu, 0, 200, false));
  Graph g;
  Scope root = Scope::Root(&g);
  Scope gpu = root.WithDevice("/gpu:0");
  Output x = ops::Const(root, RandomTensor({3, 4}, 8));
  std::vector<Output> built = {
      ops::Where(gpu, ops::Const(root, Tensor::Scalar(true))),
      ops::SelectV2(gpu, ops::Const(root, Tensor::Scalar(true)), x, x),
      ops::ClipByValue(gpu, x, ops::Const(root, 0.f), ops::Const(root, 1.f)),
      ops::GatherV2(gpu, x, ops::Const(root, Tensor::Scalar(int32_t{1})),
                    ops::Const(root, Tensor::Scalar(int32_t{0}))),
      ops::Tile(gpu, x, ops::Const(root, std::vector<int32_t>{1, 1}, {2})),
      ops::Cumsum(gpu, x, ops::Const(root, Tensor::Scalar(int32_t{0}))),
      ops::TopK(gpu, x, ops::Const(root, Tensor::Scalar(int32_t{1}))).values,
      ops::Abs(gpu, x),
      ops::ArgMin(gpu, x, 0)};
  auto strict = Place(g.nodes(), devices, {});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(), Contains("no supported kernel for GPU devices"));
  auto soft = Place(g.nodes(), devices, {.allow_soft_placement = true});
  REQUIRE(soft.ok());
  for (const Output& o : built) {
    INFO(o.node->op());
    CHECK(soft->device.at(o.node)->name() == "/job:localhost/replica:0/task:0/device:CPU:0");
  }
}

}  // namespace
}  // namespace pf::gather_scan_topk_test
