// nn kernels and variable updates against naive references.
#include <cmath>

#include "tests/testing/test_util.h"

namespace pf::nn_state_ops_test {
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

// TensorFlow 1.x: Assign, AssignAdd, AssignSub and the Apply ops return their reference, so
// their output can be updated again (tf.assign_sub(tf.assign_add(v, 1), 1)).
TEST_CASE("Updates return the variable's reference: they chain, on any device", "[ops][state]") {
  for (const char* dev : {"/cpu:0", "/cpu:1"}) {
    INFO("device " << dev);
    Graph g;
    Scope root = Scope::Root(&g);
    Scope s = root.WithDevice(dev);
    Variable v = GetVariable(s, "v", {2}, init::Constant(1.0));
    Output one = ops::Const(root, Tensor::FromVector<float>({1, 1}));
    Output three = ops::Const(root, Tensor::FromVector<float>({3, 3}));
    // v + 3 - 1 = 3, then reset to 7, then a gradient step of 0.5 * 2 on the reset value.
    Output chain =
        ops::AssignSub(root.WithOpName("sub"), ops::AssignAdd(root, v.ref(), three), one);
    Output reset = ops::Assign(root, chain, ops::Const(root, Tensor::FromVector<float>({7, 7})));
    Output stepped = NodeBuilder(root.WithOpName("gd"), "ApplyGradientDescent")
                         .Input(reset)
                         .Input(ops::Const(root, 0.5f))
                         .Input(ops::Const(root, Tensor::FromVector<float>({2, 4})))
                         .Finalize();
    SessionOptions o;
    o.device_count["CPU"] = 2;
    Session sess(g, o);
    // The chain reads no variable before it is initialised: the error names v, not an update.
    CHECK_THROWS_WITH(sess.Run({chain}), Contains("Attempting to use uninitialized value v"));
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    CHECK(sess.Run({chain})[0].DebugString() == "Tensor<float [2]> [3, 3]");
    CHECK(sess.Run({v.value()})[0].DebugString() == "Tensor<float [2]> [3, 3]");
    CHECK(sess.Run({stepped})[0].DebugString() == "Tensor<float [2]> [6, 5]");
    CHECK(sess.Run({v.value()})[0].DebugString() == "Tensor<float [2]> [6, 5]");
    // Every update in the chain is colocated with the variable (they share its storage).
    auto where = sess.DevicePlacement();
    const std::string want = std::string(dev).back() == '1' ? "CPU:1" : "CPU:0";
    for (const char* n : {"sub", "gd"}) CHECK_THAT(where.at(n), Contains(want));
  }
}

TEST_CASE("A reference input that is not a reference is a clear error", "[ops][state]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "v", {2}, init::Constant(1.0));
  // Identity reads the value: its output is no reference (TensorFlow's identity of a ref).
  Output read = ops::Identity(root.WithOpName("read"), v.ref());
  Output bad =
      ops::AssignAdd(root.WithOpName("bump"), read, ops::Const(root, Tensor(DT_FLOAT, {2})));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  CHECK_THROWS_WITH(sess.Run({bad}), Contains("Input 0 of node 'bump' must be a variable "
                                              "reference, but comes from 'read' (Identity)"));
}

}  // namespace
}  // namespace pf::nn_state_ops_test
