// nn kernels and variable updates against naive references.
#include <cmath>

#include "tests/testing/test_util.h"

namespace pf {
namespace {

using Catch::Matchers::Contains;
using testing::MaxAbsDiff;
using testing::RandomTensor;
using testing::RunOne;

TEST_CASE("BiasAdd adds along the last axis", "[ops][nn]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({5, 3}, 1), b = RandomTensor({3}, 2);
  Tensor got = RunOne(g, ops::BiasAdd(root, ops::Const(root, x), ops::Const(root, b)));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j)
      CHECK(got.data<float>()[i * 3 + j] == x.data<float>()[i * 3 + j] + b.data<float>()[j]);
  CHECK_THROWS_WITH(ops::BiasAdd(root, ops::Const(root, x), ops::Const(root, RandomTensor({4}, 3))),
                    Contains("Dimensions must be equal, but are 3 and 4"));
}

TEST_CASE("Softmax and LogSoftmax match the definition and stay finite at large logits",
          "[ops][nn]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Tensor x = RandomTensor({4, 10}, 7, -5.f, 5.f);
  Session sess(g);
  auto out = sess.Run(
      {ops::Softmax(root, ops::Const(root, x)), ops::LogSoftmax(root, ops::Const(root, x))});
  for (int r = 0; r < 4; ++r) {
    double denom = 0;
    for (int c = 0; c < 10; ++c) denom += std::exp(double(x.data<float>()[r * 10 + c]));
    for (int c = 0; c < 10; ++c) {
      double p = std::exp(double(x.data<float>()[r * 10 + c])) / denom;
      CHECK(out[0].data<float>()[r * 10 + c] == Approx(p).epsilon(1e-5));
      CHECK(out[1].data<float>()[r * 10 + c] == Approx(std::log(p)).epsilon(1e-5));
    }
  }
  Tensor big = Tensor::FromVector<float>({1e4f, -1e4f, 0.f}, {1, 3});
  auto extreme = sess.Run(
      {ops::Softmax(root, ops::Const(root, big)), ops::LogSoftmax(root, ops::Const(root, big))});
  CHECK(extreme[0].DebugString() == "Tensor<float [1,3]> [[1, 0, 0]]");
  CHECK(extreme[1].data<float>()[0] == 0.f);
  CHECK(extreme[1].data<float>()[1] == -2e4f);
}

TEST_CASE("Assign, AssignAdd and AssignSub update the variable in place", "[ops][state]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "v", {3}, init::Constant(1.0));
  Output delta = ops::Const(root, Tensor::FromVector<float>({1, 2, 3}));
  Output add = ops::AssignAdd(root, v.ref(), delta);
  Output sub = ops::AssignSub(root, v.ref(),
                              ops::Const(root, Tensor::FromVector<float>({0.5f, 0.5f, 0.5f})));
  Output set = ops::Assign(root, v.ref(), ops::Const(root, Tensor::FromVector<float>({9, 8, 7})));
  Session sess(g);
  CHECK_THROWS_WITH(sess.Run({add}), Contains("Attempting to use uninitialized value v"));
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK(sess.Run({add})[0].DebugString() == "Tensor<float [3]> [2, 3, 4]");
  CHECK(sess.Run({add})[0].DebugString() == "Tensor<float [3]> [3, 5, 7]");
  CHECK(sess.Run({sub})[0].DebugString() == "Tensor<float [3]> [2.5, 4.5, 6.5]");
  CHECK(sess.Run({v.value()})[0].DebugString() == "Tensor<float [3]> [2.5, 4.5, 6.5]");
  CHECK(sess.Run({set})[0].DebugString() == "Tensor<float [3]> [9, 8, 7]");
  // Re-initialising restores the initial value: the variable never aliased its initializer.
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK(sess.Run({v.value()})[0].DebugString() == "Tensor<float [3]> [1, 1, 1]");
  CHECK_THROWS_WITH(ops::Assign(root, v.ref(), ops::Const(root, Tensor(DT_FLOAT, {4}))),
                    Contains("Shapes must be equal"));
  // A second session has its own variables.
  Session other(g);
  CHECK_THROWS_WITH(other.Run({v.value()}), Contains("Attempting to use uninitialized value v"));
}

}  // namespace
}  // namespace pf
