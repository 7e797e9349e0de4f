// Array kernels against naive index arithmetic.
#include "tests/testing/test_util.h"

namespace pf::array_ops_test {
namespace {

using Catch::Matchers::Contains;
using testing::Iota;
using testing::RandomTensor;
using testing::RunOne;

TEST_CASE("Reshape, ExpandDims and Squeeze share the buffer and infer -1", "[ops][array]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Iota({2, 3, 4}));
  Session sess(g);
  auto out = sess.Run({ops::Reshape(root, x, std::vector<int32_t>{4, -1}),
                       ops::ExpandDims(root, x, 1), ops::Squeeze(root, ops::ExpandDims(root, x, 0)),
                       ops::Squeeze(root, ops::Const(root, Iota({1, 3, 1})), {2})});
  CHECK(out[0].shape() == Shape{4, 6});
  CHECK(out[0].data<float>()[23] == 23.f);
  CHECK(out[1].shape() == Shape{2, 1, 3, 4});
  CHECK(out[2].shape() == Shape{2, 3, 4});
  CHECK(out[3].shape() == Shape{1, 3});
  CHECK_THROWS_WITH(ops::Squeeze(root, x, {1}),
                    Contains("Can not squeeze dim[1], expected a dimension of 1, got 3"));
  // A runtime shape from a placeholder.
  Output p = ops::Placeholder(root, DT_FLOAT, {-1, 4});
  Output r = ops::Reshape(root, p, std::vector<int32_t>{-1, 2});
  CHECK(r.shape() == Shape::Unknown().MergeWith(Shape{-1, 2}));
  Tensor got = sess.Run({{p, Iota({3, 4})}}, {r})[0];
  CHECK(got.shape() == Shape{6, 2});
  CHECK_THROWS_WITH(
      sess.Run({{p, Iota({3, 4})}}, {ops::Reshape(root, p, std::vector<int32_t>{5, -1})}),
      Contains("Cannot reshape a tensor with 12 elements to shape [5,?]"));
}

TEST_CASE("Transpose any permutation", "[ops][array]") {
  Tensor x = Iota({2, 3, 4});
  for (std::vector<int32_t> perm :
       {std::vector<int32_t>{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {0, 2, 1}, {2, 0, 1}, {1, 2, 0}}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Tensor got = RunOne(g, ops::Transpose(root, ops::Const(root, x), perm));
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          int64_t idx[3] = {i, j, k};
          int64_t o = (idx[perm[0]] * got.dim(1) + idx[perm[1]]) * got.dim(2) + idx[perm[2]];
          REQUIRE(got.data<float>()[o] == x.data<float>()[(i * 3 + j) * 4 + k]);
        }
  }
  Graph g;
  Scope root = Scope::Root(&g);
  CHECK_THROWS_WITH(ops::Transpose(root, ops::Const(root, x), {0, 0, 1}),
                    Contains("not a valid permutation"));
}

TEST_CASE("Concat and Split are inverses along any axis", "[ops][array]") {
  for (int axis : {0, 1, 2, -1}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Tensor a = RandomTensor({2, 4, 6}, 1), b = RandomTensor({2, 4, 6}, 2);
    Output cat = ops::Concat(root, {ops::Const(root, a), ops::Const(root, b)}, axis);
    auto parts = ops::Split(root, cat, axis, 2);
    Session sess(g);
    auto out = sess.Run({cat, parts[0], parts[1]});
    CHECK(out[1].BitwiseEqual(a));
    CHECK(out[2].BitwiseEqual(b));
    int ax = axis < 0 ? 2 : axis;
    CHECK(out[0].dim(ax) == 2 * a.dim(ax));
    // Element check of the concat against index arithmetic.
    std::vector<int64_t> idx(3, 0);
    for (int64_t i = 0; i < out[0].num_elements(); ++i) {
      int64_t rem = i;
      for (int d = 2; d >= 0; --d) {
        idx[d] = rem % out[0].dim(d);
        rem /= out[0].dim(d);
      }
      const Tensor& src = idx[ax] < a.dim(ax) ? a : b;
      if (idx[ax] >= a.dim(ax)) idx[ax] -= a.dim(ax);
      REQUIRE(out[0].data<float>()[i] == src.data<float>()[(idx[0] * 4 + idx[1]) * 6 + idx[2]]);
    }
  }
  Graph g;
  Scope root = Scope::Root(&g);
  CHECK_THROWS_WITH(
      ops::Concat(root, {ops::Const(root, Iota({2, 3})), ops::Const(root, Iota({3, 3}))}, 1),
      Contains("Dimension 0 in both shapes must be equal"));
  CHECK_THROWS_WITH(ops::Split(root, ops::Const(root, Iota({5, 3})), 0, 2),
                    Contains("evenly divide"));
}

TEST_CASE("Slice and Gather", "[ops][array]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Iota({4, 5}));
  Output idx = ops::Const(root, Tensor::FromVector<int32_t>({3, 0, 3}));
  Output idx64 = ops::Const(root, Tensor::FromVector<int64_t>({1, 2}, {2, 1}));
  Session sess(g);
  auto out = sess.Run({ops::Slice(root, x, {1, 2}, {2, -1}), ops::Gather(root, x, idx),
                       ops::Gather(root, x, idx64)});
  CHECK(out[0].DebugString() == "Tensor<float [2,3]> [[7, 8, 9], [12, 13, 14]]");
  CHECK(out[1].shape() == Shape{3, 5});
  CHECK(out[1].data<float>()[0] == 15.f);
  CHECK(out[1].data<float>()[5] == 0.f);
  CHECK(out[2].shape() == Shape{2, 1, 5});
  CHECK(out[2].data<float>()[5] == 10.f);
  CHECK_THROWS_WITH(ops::Slice(root, x, {3, 0}, {2, 1}),
                    Contains("to fit in dimension 0 of size 4"));
  Output bad = ops::Const(root, Tensor::FromVector<int32_t>({1, 9}));
  CHECK_THROWS_WITH(sess.Run({ops::Gather(root, x, bad)}),
                    Contains("indices[1] = 9 is not in [0, 4)"));
}

TEST_CASE("Cast, Fill, ZerosLike, OnesLike, Shape and OneHot", "[ops][array]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output f = ops::Const(root, Tensor::FromVector<float>({-1.7f, 0.f, 2.9f}));
  Output labels = ops::Const(root, Tensor::FromVector<int32_t>({2, 0, 5}));
  Session sess(g);
  auto out = sess.Run(
      {ops::Cast(root, f, DT_INT32), ops::Cast(root, f, DT_BOOL),
       ops::Cast(root, labels, DT_DOUBLE),
       ops::Fill(root, ops::ConstInt(root, std::vector<int32_t>{2, 2}), ops::Const(root, 3.f)),
       ops::ZerosLike(root, f), ops::OnesLike(root, labels),
       ops::Shape(root, ops::Const(root, Iota({2, 7}))), ops::OneHot(root, labels, 3)});
  CHECK(out[0].DebugString() == "Tensor<int32 [3]> [-1, 0, 2]");
  CHECK(out[1].DebugString() == "Tensor<bool [3]> [true, false, true]");
  CHECK(out[2].DebugString() == "Tensor<double [3]> [2, 0, 5]");
  CHECK(out[3].DebugString() == "Tensor<float [2,2]> [[3, 3], [3, 3]]");
  CHECK(out[4].DebugString() == "Tensor<float [3]> [0, 0, 0]");
  CHECK(out[5].DebugString() == "Tensor<int32 [3]> [1, 1, 1]");
  CHECK(out[6].DebugString() == "Tensor<int32 [2]> [2, 7]");
  // Out-of-range labels give an all-off row, as in TensorFlow.
  CHECK(out[7].DebugString() == "Tensor<float [3,3]> [[0, 0, 1], [1, 0, 0], [0, 0, 0]]");
}

}  // namespace
}  // namespace pf::array_ops_test

namespace pf::array_ops_test {
namespace {

TEST_CASE("Const holds any dtype and shape; its values must fill the shape", "[ops][array]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output i64 = ops::Const(root, std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  Output f64 = ops::Const(root, Tensor::Scalar<double>(0.5));
  Output b = ops::Const(root, std::vector<bool>{true, false}, {2});
  CHECK(i64.dtype() == DT_INT64);
  CHECK(i64.shape() == Shape{2, 3});
  CHECK(f64.dtype() == DT_DOUBLE);
  Session sess(g);
  auto out = sess.Run({ops::Sum(root, i64, {1}), f64, b});
  CHECK(out[0].ToVector<int64_t>() == std::vector<int64_t>{6, 15});
  CHECK(out[1].scalar<double>() == 0.5);
  CHECK(out[2].dtype() == DT_BOOL);
  CHECK(out[2].data<bool>()[0]);
  CHECK_FALSE(out[2].data<bool>()[1]);
  CHECK_THROWS_WITH(ops::Const(root, std::vector<int32_t>{1, 2, 3}, {2, 2}),
                    Contains("3 values for shape [2,2]"));
  CHECK_THROWS_WITH(ops::Const(root, {1.f, 2.f}, {3}), Contains("2 values for shape [3]"));
}

}  // namespace
}  // namespace pf::array_ops_test
