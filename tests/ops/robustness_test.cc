// Bad input through the public API (issue 20): every case is an error that names the node and
// its shapes, or a defined result, never a read or write outside a buffer.
#include <cmath>
#include <limits>

#include "tests/testing/test_util.h"

namespace pf::robustness_test {
namespace {

using Catch::Matchers::Contains;

using testing::Iota;

TEST_CASE("Slice of an unknown-rank input checks the fed shape at run time", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output p = ops::Placeholder(root.WithOpName("p"), DT_FLOAT);
  Output s = ops::Slice(root.WithOpName("s"), p, {0, 1}, {2, 2});
  CHECK(s.shape() == Shape{2, 2});
  Session sess(g);
  Tensor ok = sess.Run({{p, Iota({3, 3})}}, {s})[0];
  CHECK(ok.ToVector<float>() == std::vector<float>{1, 2, 4, 5});
  // Too small: the static [2,2] must not be trusted.
  CHECK_THROWS_WITH(sess.Run({{p, Iota({1, 1})}}, {s}),
                    Contains("Expected begin[0] = 0 and size[0] = 2 to fit in dimension 0 of "
                             "size 1") &&
                        Contains("with input shapes: [1,1]") && Contains("{{node s}} = Slice"));
  // Another rank.
  CHECK_THROWS_WITH(sess.Run({{p, Iota({4, 4, 4})}}, {s}),
                    Contains("Expected begin and size arguments to be 1-D tensors of size 3, but "
                             "got 2") &&
                        Contains("{{node s}} = Slice"));
  CHECK_THROWS_WITH(sess.Run({{p, Tensor::Scalar<float>(1)}}, {s}),
                    Contains("of size 0, but got 2"));
}

TEST_CASE("Slice attrs are checked even when the input's rank is unknown", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output p = ops::Placeholder(root, DT_FLOAT);
  CHECK_THROWS_WITH(ops::Slice(root.WithOpName("neg"), p, {-1}, {1}),
                    Contains("Expected begin[0] = -1 to be >= 0") && Contains("'neg'"));
  CHECK_THROWS_WITH(ops::Slice(root, p, {0}, {-3}), Contains("Expected size[0] = -3 to be >= -1"));
  CHECK_THROWS_WITH(ops::Slice(root, p, std::vector<int32_t>(9, 0), std::vector<int32_t>(9, 1)),
                    Contains("Slice of rank 9: at most 8 dimensions are supported"));
}

TEST_CASE("Transpose checks perm when the input's rank is unknown, so its gradient is safe",
          "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output p = ops::Placeholder(root, DT_FLOAT);
  CHECK_THROWS_WITH(ops::Transpose(root.WithOpName("t"), p, {0, 5}),
                    Contains("5 is not a valid permutation index (or repeats) for rank 2") &&
                        Contains("for node 't' (op: 'Transpose')"));
  CHECK_THROWS_WITH(ops::Transpose(root, p, {1, 1}), Contains("1 is not a valid permutation"));
  // A valid perm on an unknown rank: the fed rank is checked at run time, the gradient works.
  Output t = ops::Transpose(root, p, {1, 0});
  Output dx = Gradients(root, {ops::Sum(root, ops::Mul(root, t, t))}, {p})[0];
  Session sess(g);
  Tensor x = Iota({2, 3});
  Tensor got = sess.Run({{p, x}}, {dx})[0];
  CHECK(got.shape() == Shape{2, 3});
  CHECK(got.data<float>()[5] == 10.f);
  CHECK_THROWS_WITH(sess.Run({{p, Iota({2, 3, 4})}}, {t}),
                    Contains("transpose expects a vector of size 3. But input(1) is a vector of "
                             "size 2"));
}

TEST_CASE("Shapes past rank 8 are errors, not stack writes", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x8 = ops::Const(root, Iota({1, 1, 1, 1, 1, 1, 1, 2}));
  CHECK_THROWS_WITH(ops::ExpandDims(root.WithOpName("e"), x8, 0),
                    Contains("Shape [1,1,1,1,1,1,1,2] cannot grow past 8 dimensions") &&
                        Contains("for node 'e' (op: 'ExpandDims')"));
  // Gather: indices rank + params rank - 1 = 9.
  Output idx = ops::Const(root, std::vector<int32_t>{0}, {1, 1, 1, 1, 1});
  Output params = ops::Const(root, Iota({2, 1, 1, 1, 1}));
  CHECK_THROWS_WITH(ops::Gather(root, params, idx), Contains("cannot grow past 8 dimensions"));
  // Reshape to a 9-entry shape tensor of unknown values.
  Output shp = ops::Placeholder(root, DT_INT32, {9});
  CHECK_THROWS_WITH(ops::Reshape(root, x8, shp), Contains("cannot grow past 8 dimensions"));
  // At run time: ExpandDims of an unknown-rank input fed with rank 8.
  Output p = ops::Placeholder(root, DT_FLOAT);
  Output e = ops::ExpandDims(root.WithOpName("e2"), p, 0);
  Session sess(g);
  CHECK_THROWS_WITH(
      sess.Run({{p, Iota({1, 1, 1, 1, 1, 1, 1, 2})}}, {e}),
      Contains("cannot grow past 8 dimensions") && Contains("{{node e2}} = ExpandDims"));
}

TEST_CASE("Gradients of reductions over empty tensors", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Tensor(DT_FLOAT, {5, 0}));
  Output xi = ops::Const(root, Tensor(DT_INT32, {0, 5}));
  auto dsum = Gradients(root, {ops::Sum(root, x, {1})}, {x});
  auto dmean = Gradients(root, {ops::Mean(root, x, {1})}, {x});
  auto dmean0 = Gradients(root, {ops::Mean(root, x, {0})}, {x});
  Session sess(g);
  auto out = sess.Run({dsum[0], dmean[0], dmean0[0]});
  for (const Tensor& t : out) CHECK(t.shape() == Shape{5, 0});
  // The integer mean of an empty tensor: no division by zero either.
  auto imean = ops::Mean(root, xi, {0});
  CHECK(sess.Run({imean})[0].shape() == Shape{5});
}

TEST_CASE("Reshape's element count cannot overflow", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, Iota({4}));
  // (2^62 + 1) * 4 wraps to 4 in 64 bits.
  const int64_t big = (int64_t{1} << 62) + 1;
  Output shape = ops::Const(root, std::vector<int64_t>{big, 4}, {2});
  CHECK_THROWS_WITH(ops::Reshape(root.WithOpName("r"), x, shape),
                    Contains("Cannot reshape a tensor with 4 elements to shape "
                             "[4611686018427387905,4]: more than 9223372036854775807 elements") &&
                        Contains("for node 'r' (op: 'Reshape')"));
  // The same from a fed shape, at run time.
  Output fed = ops::Placeholder(root, DT_INT64, {2});
  Output r = ops::Reshape(root.WithOpName("r2"), x, fed);
  Session sess(g);
  CHECK_THROWS_WITH(
      sess.Run({{fed, Tensor::FromVector<int64_t>({big, 4})}}, {r}),
      Contains("more than 9223372036854775807 elements") && Contains("{{node r2}} = Reshape"));
  CHECK_THROWS_WITH(sess.Run({{fed, Tensor::FromVector<int64_t>({-1, big})}}, {r}),
                    Contains("Cannot reshape a tensor with 4 elements to shape [?,"));
  CHECK(sess.Run({{fed, Tensor::FromVector<int64_t>({2, -1})}}, {r})[0].shape() == Shape{2, 2});
}

TEST_CASE("Pad's padded dims cannot overflow", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const int64_t big = std::numeric_limits<int64_t>::max() - 1;
  Output x = ops::Const(root, Iota({2}));
  Output pads = ops::Const(root, std::vector<int64_t>{big, 4}, {1, 2});
  CHECK_THROWS_WITH(ops::Pad(root.WithOpName("pad"), x, pads),
                    Contains("Paddings (9223372036854775806, 4) of dimension 0 overflow int64 for "
                             "input [2]") &&
                        Contains("for node 'pad' (op: 'Pad')"));
}

TEST_CASE("Cast to integers saturates and maps NaN to 0", "[ops][robust]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Graph g;
  Scope root = Scope::Root(&g);
  Output f =
      ops::Const(root, std::vector<float>{nan, inf, -inf, 3e9f, -3e9f, 2.7f, -2.7f, 1e19f}, {8});
  Output d = ops::Const(root, std::vector<double>{nan, 1e300, -1e300, 2147483647.5, -2.5}, {5});
  Session sess(g);
  auto out = sess.Run({ops::Cast(root, f, DT_INT32), ops::Cast(root, f, DT_INT64),
                       ops::Cast(root, d, DT_INT32), ops::Cast(root, d, DT_INT64)});
  const int32_t i32max = std::numeric_limits<int32_t>::max();
  const int32_t i32min = std::numeric_limits<int32_t>::min();
  const int64_t i64max = std::numeric_limits<int64_t>::max();
  const int64_t i64min = std::numeric_limits<int64_t>::min();
  CHECK(out[0].ToVector<int32_t>() ==
        std::vector<int32_t>{0, i32max, i32min, i32max, i32min, 2, -2, i32max});
  CHECK(out[1].ToVector<int64_t>() ==
        std::vector<int64_t>{0, i64max, i64min, 3000000000, -3000000000, 2, -2, i64max});
  CHECK(out[2].ToVector<int32_t>() == std::vector<int32_t>{0, i32max, i32min, i32max, -2});
  CHECK(out[3].ToVector<int64_t>() == std::vector<int64_t>{0, i64max, i64min, 2147483647, -2});
}

TEST_CASE("Split into INT32_MAX parts is an error, not bad_alloc", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output p = ops::Placeholder(root, DT_FLOAT);
  CHECK_THROWS_WITH(ops::Split(root.WithOpName("sp"), p, 0, std::numeric_limits<int32_t>::max()),
                    Contains("Attr 'num_split' = 2147483647 asks for more outputs than the "
                             "1048576 a node may have for node 'sp' (op: 'Split')"));
  CHECK_THROWS_AS(ops::Split(root, p, 0, std::numeric_limits<int32_t>::max()), Error);
  CHECK_THROWS_WITH(ops::Split(root, p, 0, -1),
                    Contains("Number of ways to split should be > 0, but got -1"));
}

TEST_CASE("Placeholder dims are -1 (unknown) or sizes", "[ops][robust]") {
  Graph g;
  Scope root = Scope::Root(&g);
  CHECK_THROWS_WITH(ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-7, 2}),
                    Contains("Dimension -7 in attr 'shape' = [-7,2] must be >= -1") &&
                        Contains("for node 'x' (op: 'Placeholder')"));
  CHECK_THROWS_WITH(
      NodeBuilder(root, "Variable").Attr("shape", Shape{3, -2}).Attr("dtype", DT_FLOAT).Finalize(),
      Contains("Dimension -2 in attr 'shape' = [3,-2] must be >= -1"));
  CHECK(ops::Placeholder(root, DT_FLOAT, {-1, 2}).shape() == Shape{-1, 2});
}

}  // namespace
}  // namespace pf::robustness_test
