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
  // One check (ValidateBiasAdd) for the shape function and the CPU and GPU kernels.
  CHECK_THROWS_WITH(
      ops::BiasAdd(root, ops::Const(root, x), ops::Const(root, RandomTensor({4}, 3))),
      Contains("Must provide as many biases as the last dimension of the input tensor: [4] vs. "
               "[5,3]"));
  CHECK_THROWS_WITH(ops::BiasAdd(root, ops::Const(root, b), ops::Const(root, b)),
                    Contains("Input tensor must be at least 2D: [3]"));
  // Shapes known only when the graph runs meet the same check in the kernel.
  Output value = ops::Placeholder(root, DT_FLOAT);
  Output bias = ops::Placeholder(root, DT_FLOAT);
  Output y = ops::BiasAdd(root, value, bias);
  Session sess(g);
  CHECK_THROWS_WITH(sess.Run({{value, x}, {bias, RandomTensor({4}, 3)}}, {y}),
                    Contains("Must provide as many biases as the last dimension of the input "
                             "tensor: [4] vs. [5,3]"));
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

TEST_CASE("Losses and activation gradients check their shapes at build time and in the kernels",
          "[ops][nn]") {
  // One check per op (loss_ops.h, nn_ops.h) serves the shape function and the CPU and GPU
  // kernels, so a shape known only at run time meets the same message as a static one.
  Graph g;
  Scope root = Scope::Root(&g);
  Output logits = ops::Const(root, RandomTensor({4, 10}, 1));
  CHECK_THROWS_WITH(
      ops::SoftmaxCrossEntropyWithLogits(root, logits, ops::Const(root, RandomTensor({4, 9}, 2))),
      Contains("logits and labels must be same size: logits_size=[4,10] labels_size=[4,9]"));
  CHECK_THROWS_WITH(ops::SparseSoftmaxCrossEntropyWithLogits(
                        root, logits, ops::Const(root, Tensor::FromVector<int32_t>({1, 2, 3}))),
                    Contains("logits and labels must have the same first dimension, got logits "
                             "shape [4,10] and labels shape [3]"));
  CHECK_THROWS_WITH(
      ops::SigmoidCrossEntropyWithLogits(root, logits, ops::Const(root, RandomTensor({10}, 3))),
      Contains("logits and labels must have the same shape ([4,10] vs [10])"));
  CHECK_THROWS_WITH(NodeBuilder(root, "ReluGrad")
                        .Input(logits)
                        .Input(ops::Transpose(root, logits, {1, 0}))
                        .Finalize(),
                    Contains("ReluGrad: gradients and outputs must have the same shape, got "
                             "[4,10] and [10,4]"));
  Output x = ops::Placeholder(root, DT_FLOAT);
  Output z = ops::Placeholder(root, DT_FLOAT);
  auto [loss, backprop] = ops::SoftmaxCrossEntropyWithLogits(root, x, z);
  Output sigmoid_loss = ops::SigmoidCrossEntropyWithLogits(root, x, z);
  Output relu_grad = NodeBuilder(root, "ReluGrad").Input(x).Input(z).Finalize();
  Session sess(g);
  const FeedDict feeds = {{x, RandomTensor({4, 10}, 4)}, {z, RandomTensor({4, 9}, 5)}};
  CHECK_THROWS_WITH(
      sess.Run(feeds, {loss}),
      Contains("logits and labels must be same size: logits_size=[4,10] labels_size=[4,9]"));
  CHECK_THROWS_WITH(sess.Run(feeds, {sigmoid_loss}),
                    Contains("logits and labels must have the same shape ([4,10] vs [4,9])"));
  CHECK_THROWS_WITH(sess.Run(feeds, {relu_grad}),
                    Contains("ReluGrad: gradients and outputs must have the same shape, got "
                             "[4,10] and [4,9]"));
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
