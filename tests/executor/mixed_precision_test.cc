// Automatic mixed precision (executor/mixed_precision.h): which nodes the rewrite converts and
// where it puts Casts, on a partition built by hand; then in a session: the values against
// float32, float32 variables and updates, the trace, fetched nodes, the option's errors.
#include "placeflow/executor/mixed_precision.h"

#include <cmath>
#include <map>
#include <memory>

#include "placeflow/devices/device.h"
#include "placeflow/ops/half_via_float.h"
#include "tests/testing/test_util.h"

namespace pf::mixed_precision_test {
namespace {

using Catch::Matchers::Contains;
using testing::MaxAbsDiff;
using testing::RandomTensor;

// x -> MatMul -> BiasAdd -> Relu -> MatMul -> BiasAdd -> Softmax, on one CPU partition.
struct TwoLayers {
  std::unique_ptr<Device> cpu = NewCpuDevice(0);
  Partitions::Part part;
  Output softmax;
  TwoLayers() {
    part.device = cpu.get();
    part.graph = std::make_unique<Graph>();
    Scope root = Scope::Root(part.graph.get());
    Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {8, 20});
    auto layer = [&](const std::string& i, Output in, int n_in, int n_out) {
      Output w = ops::Const(root.WithOpName("w" + i), RandomTensor({n_in, n_out}, 1));
      Output b = ops::Const(root.WithOpName("b" + i), RandomTensor({n_out}, 2));
      return ops::BiasAdd(root.WithOpName("ba" + i), ops::MatMul(root.WithOpName("mm" + i), in, w),
                          b);
    };
    Output h = ops::Relu(root.WithOpName("relu1"), layer("1", x, 20, 16));
    softmax = ops::Softmax(root.WithOpName("softmax"), layer("2", h, 16, 10));
    for (Node* n : part.graph->nodes()) {
      n->set_assigned_device(cpu->name());
      part.nodes.push_back(n);
    }
  }
  // node name -> its type attr T after the rewrite.
  std::map<std::string, DType> Types() const {
    std::map<std::string, DType> t;
    for (Node* n : part.nodes)
      if (n->HasAttr("T")) t[n->name()] = n->attr<DType>("T");
    return t;
  }
  // The input `i` of node `name` after the rewrite: "node:index".
  std::string InputOf(const std::string& name, int i) const {
    return part.graph->FindNode(name)->input(i).name();
  }
};

TEST_CASE("AutoMixedPrecision float16: matmuls and what lies between them, Casts at the edges",
          "[mixed_precision]") {
  TwoLayers m;
  MixedPrecisionReport r = AutoMixedPrecision(&m.part, DT_HALF, {Output(m.softmax)});
  auto t = m.Types();
  for (const char* n : {"mm1", "ba1", "relu1", "mm2"}) CHECK(t.at(n) == DT_HALF);
  // The last BiasAdd follows an allow op but leads to a deny op only: float32 (TF's float16
  // mode); the softmax is on the deny list.
  CHECK(t.at("ba2") == DT_FLOAT);
  CHECK(t.at("softmax") == DT_FLOAT);
  CHECK(r.converted.size() == 4);
  CHECK(m.InputOf("mm1", 0) == "x-0-CastToFp16-AutoMixedPrecision:0");
  CHECK(m.InputOf("mm1", 1) == "w1-0-CastToFp16-AutoMixedPrecision:0");
  CHECK(m.InputOf("ba1", 0) == "mm1:0");  // 16-bit to 16-bit: no Cast
  CHECK(m.InputOf("ba2", 0) == "mm2-0-CastToFp32-AutoMixedPrecision:0");
  CHECK(m.part.graph->FindNode("mm2")->output_dtype(0) == DT_HALF);
  CHECK(r.casts.size() == 5);  // x, w1, b1, w2 in; mm2 out
}

TEST_CASE("AutoMixedPrecision bfloat16 also converts infer ops below a converted op",
          "[mixed_precision]") {
  TwoLayers m;
  AutoMixedPrecision(&m.part, DT_BFLOAT16, {Output(m.softmax)});
  auto t = m.Types();
  CHECK(t.at("ba2") == DT_BFLOAT16);
  CHECK(t.at("softmax") == DT_FLOAT);
  CHECK(m.InputOf("softmax", 0) == "ba2-0-CastToFp32-AutoMixedPrecision:0");
}

TEST_CASE("AutoMixedPrecision leaves fetched nodes and ops downstream of a deny op in float32",
          "[mixed_precision]") {
  TwoLayers m;
  Node* relu = m.part.graph->FindNode("relu1");
  AutoMixedPrecision(&m.part, DT_HALF, {Output(m.softmax), Output(relu)});
  auto t = m.Types();
  CHECK(t.at("relu1") == DT_FLOAT);
  CHECK(t.at("ba1") == DT_FLOAT);  // no longer between two converted ops
  CHECK(t.at("mm1") == DT_HALF);

  // exp (deny) -> mul (infer) -> matmul: the Mul stays float32.
  std::unique_ptr<Device> cpu = NewCpuDevice(0);
  Partitions::Part part;
  part.device = cpu.get();
  part.graph = std::make_unique<Graph>();
  Scope root = Scope::Root(part.graph.get());
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {4, 4});
  Output mul = ops::Mul(root.WithOpName("mul"), ops::Exp(root.WithOpName("exp"), x), x);
  Output mm = ops::MatMul(root.WithOpName("mm"), mul, x);
  for (Node* n : part.graph->nodes()) part.nodes.push_back(n);
  AutoMixedPrecision(&part, DT_HALF, {mm});  // mm fetched: nothing is converted
  CHECK(mm.node->attr<DType>("T") == DT_FLOAT);
  Output mm2 = ops::MatMul(root.WithOpName("mm2"), mm, x);
  part.nodes.push_back(mm2.node);
  AutoMixedPrecision(&part, DT_HALF, {mm2});
  CHECK(mm.node->attr<DType>("T") == DT_HALF);
  CHECK(mul.node->attr<DType>("T") == DT_FLOAT);
  CHECK(mul.node->output_dtype(0) == DT_FLOAT);
}

// A small classifier trained with SGD: y = softmax(relu(x W1 + b1) W2 + b2).
struct Classifier {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {32, 24});
  Output labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32, {32});
  Variable w1 = GetVariable(root, "w1", {24, 32}, init::GlorotUniform(1));
  Variable b1 = GetVariable(root, "b1", {32}, init::Zeros());
  Variable w2 = GetVariable(root, "w2", {32, 4}, init::GlorotUniform(2));
  Variable b2 = GetVariable(root, "b2", {4}, init::Zeros());
  Output mm1 = ops::MatMul(root.WithOpName("mm1"), x, w1.value());
  Output hidden = ops::Relu(root.WithOpName("hidden"), ops::BiasAdd(root, mm1, b1.value()));
  Output logits =
      ops::BiasAdd(root, ops::MatMul(root.WithOpName("mm2"), hidden, w2.value()), b2.value());
  Output loss = ops::Mean(
      root.WithOpName("loss"),
      ops::SparseSoftmaxCrossEntropyWithLogits(root.WithOpName("xent"), logits, labels).first, {0});
  train::GradientDescent sgd{0.5};
  Operation train_op = sgd.Minimize(root, loss);

  FeedDict Batch(uint32_t seed) const {
    Tensor xs = RandomTensor({32, 24}, seed);
    Tensor ys(DT_INT32, Shape{32});
    for (int i = 0; i < 32; ++i) {  // the class is the sign pattern of two features
      const float* r = xs.data<float>() + i * 24;
      ys.data<int32_t>()[i] = (r[0] > 0 ? 1 : 0) + (r[1] > 0 ? 2 : 0);
    }
    return {{x, xs}, {labels, ys}};
  }
  // The loss after each of `steps` SGD steps, and w1 at the end.
  std::pair<std::vector<float>, Tensor> Train(const std::string& mode, int steps) {
    SessionOptions o;
    o.rewrite_options.auto_mixed_precision = mode;
    Session sess(g, o);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    std::vector<float> losses;
    for (int s = 0; s < steps; ++s) {
      losses.push_back(sess.Run(Batch(s), {loss}, {train_op})[0].scalar<float>());
    }
    return {losses, sess.Run({w1.value()})[0]};
  }
};

TEST_CASE("A session with auto_mixed_precision trains as float32 does, variables in float32",
          "[mixed_precision][session]") {
  Classifier c;
  auto [f32, w_f32] = c.Train("", 40);
  for (const char* mode : {"float16", "bfloat16"}) {
    INFO(mode);
    auto [f16, w_16] = c.Train(mode, 40);
    CHECK(w_16.dtype() == DT_FLOAT);
    // The same batches: the loss curves differ by the rounding only (bfloat16 keeps 8 bits).
    const double tol = std::string(mode) == "float16" ? 0.01 : 0.05;
    for (size_t s = 0; s < f32.size(); ++s) CHECK(std::abs(f16[s] - f32[s]) <= tol);
    CHECK(f16.back() < 0.6 * f16.front());  // it learned
    CHECK(MaxAbsDiff(w_16, w_f32) < 10 * tol);
  }
}

TEST_CASE("auto_mixed_precision shows in the trace; a fetched matmul stays float32",
          "[mixed_precision][session]") {
  Classifier c;
  SessionOptions o;
  o.rewrite_options.auto_mixed_precision = "bfloat16";
  o.rewrite_options.remapping = false;  // the matmul stays a node of its own
  Session sess(c.g, o);
  sess.Run({}, {}, {GlobalVariablesInitializer(c.root)});
  RunOptions ro;
  ro.trace = true;
  RunMetadata md;
  sess.Run(ro, c.Batch(0), {c.loss}, {}, &md);
  std::map<std::string, std::string> label;
  int casts = 0;
  for (const NodeExecStats& s : md.step_stats) {
    label[s.node] = s.label;
    if (s.node.find("-AutoMixedPrecision") != std::string::npos) ++casts;
  }
  // A bfloat16 kernel ran: oneDNN's own, or the float32 path of CPUs without bfloat16 math.
  CHECK_THAT(label.at("mm1"),
             Contains(DnnlNativeBf16() ? "oneDNN bfloat16 matmul" : "float32 compute"));
  CHECK(label.at("xent").empty());
  CHECK(casts >= 4);
  // The matmul fetched in another signature of the same session: a float32 node with a kernel
  // of its own (not the first signature's 16-bit one), bitwise the plain session's value.
  Session plain(c.g);
  plain.Run({}, {}, {GlobalVariablesInitializer(c.root)});
  Tensor mine = sess.Run(c.Batch(0), {c.mm1})[0];
  CHECK(mine.dtype() == DT_FLOAT);
  CHECK(mine.BitwiseEqual(plain.Run(c.Batch(0), {c.mm1})[0]));
}

TEST_CASE("auto_mixed_precision with an unknown type is an error naming it",
          "[mixed_precision][session]") {
  Classifier c;
  SessionOptions o;
  o.rewrite_options.auto_mixed_precision = "float8";
  Session sess(c.g, o);
  CHECK_THROWS_WITH(sess.Run({}, {}, {GlobalVariablesInitializer(c.root)}),
                    Contains("auto_mixed_precision 'float8'"));
  CHECK(MixedPrecisionType("").value() == DT_INVALID);
  CHECK(MixedPrecisionType("off").value() == DT_INVALID);
  CHECK(MixedPrecisionType("float16").value() == DT_HALF);
  CHECK(MixedPrecisionType("bfloat16").value() == DT_BFLOAT16);
}

}  // namespace
}  // namespace pf::mixed_precision_test
