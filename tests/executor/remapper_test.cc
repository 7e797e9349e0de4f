// The remapper (executor/remapper.h): which patterns become _FusedMatMul, which must not, and
// that the maths is the same with the rewrite on and off (values, gradients, training).
#include <functional>
#include <map>
#include <memory>

#include "tests/testing/log_capture.h"
#include "tests/testing/test_util.h"

namespace pf::remapper_test {
namespace {

using Catch::Matchers::Contains;
using testing::CaptureStdout;
using testing::MaxAbsDiff;
using testing::RandomDoubleTensor;
using testing::RandomTensor;
using testing::Remapping;
using testing::TracedOps;

struct Layer {
  Graph g;
  Output x, mm, ba, relu;
  explicit Layer(const std::string& dev_mm = "", const std::string& dev_ba = "") {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 5});
    Output w = ops::Const(root.WithOpName("w"), RandomTensor({5, 4}, 1));
    Output b = ops::Const(root.WithOpName("b"), RandomTensor({4}, 2));
    mm = ops::MatMul(root.WithOpName("mm").WithDevice(dev_mm), x, w);
    ba = ops::BiasAdd(root.WithOpName("ba").WithDevice(dev_ba), mm, b);
    relu = ops::Relu(root.WithOpName("relu").WithDevice(dev_ba), ba);
  }
  FeedDict Feed() const { return {{x, RandomTensor({7, 5}, 3)}}; }
};

TEST_CASE("Remapper: MatMul, BiasAdd and Relu run as one _FusedMatMul named after the Relu",
          "[remapper][session]") {
  Layer l;
  Session on(l.g), off(l.g, Remapping(false));
  auto ops_on = TracedOps(on, l.Feed(), {l.relu});
  CHECK(ops_on.at("relu") == "_FusedMatMul");
  CHECK(ops_on.count("mm") == 0);
  CHECK(ops_on.count("ba") == 0);
  auto ops_off = TracedOps(off, l.Feed(), {l.relu});
  CHECK(ops_off.at("mm") == "MatMul");
  CHECK(ops_off.at("ba") == "BiasAdd");
  CHECK(ops_off.at("relu") == "Relu");
  Tensor a = on.Run(l.Feed(), {l.relu})[0], b = off.Run(l.Feed(), {l.relu})[0];
  CHECK(a.shape() == Shape{7, 4});
  CHECK(MaxAbsDiff(a, b) < 1e-5);
  // Some of the outputs are negative before the Relu: the fused Relu did clamp them.
  Tensor pre = off.Run(l.Feed(), {l.ba})[0];
  bool clamped = false;
  for (int64_t i = 0; i < pre.num_elements(); ++i) {
    if (pre.data<float>()[i] < 0) {
      clamped = true;
      CHECK(a.data<float>()[i] == 0.f);
    }
  }
  CHECK(clamped);
  // The user's graph is untouched, and placement reports its nodes.
  CHECK(l.g.FindNode("mm")->op() == "MatMul");
  CHECK(on.DevicePlacement().count("mm") == 1);
}

// Large enough that the fused kernel splits the rows over the pool: the shards run the same
// primitive at once, each with its own scratchpad (sharing oneDNN's library scratchpad gave
// NaN and garbage rows). Four parallel branches keep both threads busy too.
TEST_CASE("Remapper: sharded _FusedMatMul calls running at once match the unfused graph",
          "[remapper][session]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 784});
  std::vector<Output> outs;
  for (int i = 0; i < 4; ++i) {
    Output w = ops::Const(root, RandomTensor({784, 500}, 10 + i));
    Output b = ops::Const(root, RandomTensor({500}, 20 + i));
    outs.push_back(ops::Relu(root, ops::BiasAdd(root, ops::MatMul(root, x, w), b)));
  }
  Session on(g, Remapping(true)), off(g, Remapping(false));
  const FeedDict feed = {{x, RandomTensor({100, 784}, 5)}};
  const std::vector<Tensor> want = off.Run(feed, outs);
  for (int rep = 0; rep < 20; ++rep) {
    const std::vector<Tensor> got = on.Run(feed, outs);
    for (int i = 0; i < 4; ++i) {
      INFO("run " << rep << " branch " << i);
      CHECK(MaxAbsDiff(got[i], want[i]) < 1e-4);
    }
  }
}

TEST_CASE("Remapper: a fetched intermediate is not absorbed", "[remapper][session]") {
  Layer l;
  Session sess(l.g);
  // The BiasAdd is fetched: MatMul + BiasAdd fuse (the BiasAdd is the pattern's end), the Relu
  // stays.
  auto ops = TracedOps(sess, l.Feed(), {l.ba, l.relu});
  CHECK(ops.at("ba") == "_FusedMatMul");
  CHECK(ops.at("relu") == "Relu");
  CHECK(ops.count("mm") == 0);
  // The MatMul is fetched: nothing fuses.
  ops = TracedOps(sess, l.Feed(), {l.mm, l.relu});
  CHECK(ops.at("mm") == "MatMul");
  CHECK(ops.at("ba") == "BiasAdd");
  CHECK(ops.at("relu") == "Relu");
  std::vector<Tensor> r = sess.Run(l.Feed(), {l.mm, l.ba, l.relu});
  Session off(l.g, Remapping(false));
  std::vector<Tensor> r_off = off.Run(l.Feed(), {l.mm, l.ba, l.relu});
  for (int i = 0; i < 3; ++i) CHECK(MaxAbsDiff(r[i], r_off[i]) < 1e-5);
}

TEST_CASE("Remapper: an intermediate with another consumer is not absorbed",
          "[remapper][session]") {
  Layer l;
  Scope root = Scope::Root(&l.g);
  Output other = ops::Neg(root.WithOpName("other"), l.mm);
  Session sess(l.g);
  auto ops = TracedOps(sess, l.Feed(), {l.relu, other});
  CHECK(ops.at("mm") == "MatMul");
  CHECK(ops.at("ba") == "BiasAdd");
  CHECK(ops.at("relu") == "Relu");
  // A control edge out of the BiasAdd keeps it too (something waits for it to run).
  Layer l2;
  Scope root2 = Scope::Root(&l2.g);
  Operation after = ops::NoOp(root2.WithOpName("after").WithControlDependencies({l2.ba}));
  Session sess2(l2.g);
  ops = TracedOps(sess2, l2.Feed(), {l2.relu}, {after});
  CHECK(ops.at("ba") == "_FusedMatMul");  // MatMul + BiasAdd fuse; the Relu is separate
  CHECK(ops.at("relu") == "Relu");
  CHECK(ops.count("after") == 1);
}

TEST_CASE("Remapper: no fusion across devices", "[remapper][session]") {
  Layer l("/cpu:0", "/cpu:1");
  SessionOptions o;
  o.device_count["CPU"] = 2;
  Session sess(l.g, o);
  auto ops = TracedOps(sess, l.Feed(), {l.relu});
  CHECK(ops.at("mm") == "MatMul");
  CHECK(ops.at("ba") == "BiasAdd");  // on /cpu:1, its input arrives through a _Recv
  CHECK(ops.at("relu") == "Relu");
  // Both on /cpu:1: they fuse there.
  Layer same("/cpu:1", "/cpu:1");
  Session sess2(same.g, o);
  ops = TracedOps(sess2, same.Feed(), {same.relu});
  CHECK(ops.at("relu") == "_FusedMatMul");
  CHECK(sess2.DevicePlacement().at("mm") == "/job:localhost/replica:0/task:0/device:CPU:1");
}

TEST_CASE("Remapper: control edges into and out of the pattern are kept", "[remapper][session]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "v", {}, init::Constant(0));
  Operation bump = ops::AssignAdd(root.WithOpName("bump"), v.ref(), ops::Const(root, 1.f));
  Output x = ops::Const(root, RandomTensor({3, 2}, 1));
  Output w = ops::Const(root, RandomTensor({2, 2}, 2));
  Output b = ops::Const(root, RandomTensor({2}, 3));
  Output mm = ops::MatMul(root.WithControlDependencies({bump}), x, w);
  Output y = ops::Relu(root.WithOpName("y"), ops::BiasAdd(root, mm, b));
  Operation done = ops::NoOp(root.WithOpName("done").WithControlDependencies({y}));
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto ops = TracedOps(sess, {}, {}, {done});
  CHECK(ops.at("y") == "_FusedMatMul");
  CHECK(ops.count("done") == 1);
  CHECK(ops.count("bump") == 1);  // the MatMul's control input still runs
  CHECK(sess.Run({v.value()})[0].data<float>()[0] == 1.f);
}

TEST_CASE("Remapper: MatMul with BiasAdd alone, transposed operands", "[remapper][session]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output a = ops::Const(root, RandomTensor({6, 3}, 1));  // used as a^T: [3, 6]
  Output w = ops::Const(root, RandomTensor({4, 6}, 2));  // used as w^T: [6, 4]
  Output b = ops::Const(root, RandomTensor({4}, 3));
  Output y = ops::BiasAdd(root.WithOpName("y"), ops::MatMul(root, a, w, true, true), b);
  Session on(g), off(g, Remapping(false));
  CHECK(TracedOps(on, {}, {y}).at("y") == "_FusedMatMul");
  Tensor t_on = on.Run({y})[0], t_off = off.Run({y})[0];
  CHECK(t_on.shape() == Shape{3, 4});
  CHECK(MaxAbsDiff(t_on, t_off) < 1e-5);
}

TEST_CASE("Remapper: an Add of a scalar or a row vector is read as the bias",
          "[remapper][session]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, RandomTensor({7, 5}, 1));
  Output w = ops::Const(root, RandomTensor({5, 4}, 2));
  Output scalar = ops::Const(root, 0.25f);
  Output row = ops::Const(root, RandomTensor({4}, 3));
  Output full = ops::Const(root, RandomTensor({7, 4}, 4));
  Output one = ops::Const(root, RandomTensor({1}, 5));
  Output s = ops::Relu(root.WithOpName("s"), ops::Add(root, ops::MatMul(root, x, w), scalar));
  Output r = ops::Add(root.WithOpName("r"), row, ops::MatMul(root, x, w));     // product second
  Output v = ops::Add(root.WithOpName("v"), ops::MatMul(root, x, w), scalar);  // no Relu
  // Not a bias: a full matrix, and a [1] vector (it broadcasts, but is not [N]).
  Output f = ops::Add(root.WithOpName("f"), ops::MatMul(root, x, w), full);
  Output o = ops::Add(root.WithOpName("o"), ops::MatMul(root, x, w), one);
  const std::vector<Output> all = {s, r, v, f, o};
  Session on(g), off(g, Remapping(false));
  testing::LogCapture log;
  auto ops_on = TracedOps(on, {}, all);
  // A [1, 1] oneDNN bias picked the reference matmul, 400x slower in the seed MLP step.
  CHECK_THAT(log.Text(), !Contains("reference matmul"));
  CHECK(ops_on.at("s") == "_FusedMatMul");
  CHECK(ops_on.at("r") == "_FusedMatMul");
  CHECK(ops_on.at("v") == "_FusedMatMul");
  CHECK(ops_on.at("f") == "Add");
  CHECK(ops_on.at("o") == "Add");
  std::vector<Tensor> t_on = on.Run(all), t_off = off.Run(all);
  for (size_t i = 0; i < all.size(); ++i) {
    INFO(all[i].name());
    CHECK(t_on[i].shape() == Shape{7, 4});
    CHECK(MaxAbsDiff(t_on[i], t_off[i]) < 1e-5);
  }
  // The scalar went in once per element: an independent check of one entry.
  std::vector<float> xv = on.Run({x})[0].ToVector<float>(), wv = on.Run({w})[0].ToVector<float>();
  float dot = 0.25f;
  for (int k = 0; k < 5; ++k) dot += xv[2 * 5 + k] * wv[k * 4 + 3];
  CHECK(t_on[2].data<float>()[2 * 4 + 3] == Approx(dot).margin(1e-5));
}

TEST_CASE("Remapper: the placement log names each fusion", "[remapper][session]") {
  Layer l;
  SessionOptions o;
  o.log_device_placement = true;
  testing::LogCapture log;
  std::string out = CaptureStdout([&] {
    Session sess(l.g, o);
    sess.Run(l.Feed(), {l.relu});
  });
  CHECK_THAT(log.Text(), Contains("Remapper: fused mm, ba, relu into relu (_FusedMatMul [BiasAdd, "
                                  "Relu]) on /job:localhost/replica:0/task:0/device:CPU:0"));
}

TEST_CASE("Remapper: gradients check with the rewrite on and off", "[remapper][gradients]") {
  for (bool on : {true, false}) {
    for (DType t : {DT_DOUBLE, DT_FLOAT}) {
      Graph g;
      Scope root = Scope::Root(&g);
      Output x = ops::Placeholder(root, t, {4, 3});
      Tensor w0 = RandomDoubleTensor({3, 5}, 1), b0 = RandomDoubleTensor({5}, 2);
      Output w = ops::Cast(root, ops::Const(root, w0), t);
      Output b = ops::Cast(root, ops::Const(root, b0), t);
      Output y = ops::Relu(root, ops::BiasAdd(root, ops::MatMul(root, x, w), b));
      const double err =
          ComputeGradientError(root, x, {4, 3}, y, {4, 5}, nullptr, 0, Remapping(on));
      INFO("remapping " << on << " dtype " << DTypeName(t));
      CHECK(err < (t == DT_DOUBLE ? 1e-6 : 5e-3));
    }
  }
}

// Two dense layers with a bias + Relu and a linear head, SGD on a fixed batch. Layer 1 adds a
// scalar bias with Add, the product second (seed 000's `x*w + b`); the others use BiasAdd.
std::vector<Tensor> Train(bool remapping, int steps, std::vector<float>* losses) {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 8});
  Output target = ops::Placeholder(root.WithOpName("t"), DT_FLOAT, {-1, 1});
  Output h = x;
  const int64_t dims[] = {8, 16, 16, 1};
  for (int i = 0; i < 3; ++i) {
    Scope vs = root.WithVariableScope("l" + std::to_string(i));
    Variable w = GetVariable(vs, "w", {dims[i], dims[i + 1]}, init::GlorotUniform(10 + i));
    Variable b = GetVariable(vs, "b", i == 1 ? Shape{} : Shape{dims[i + 1]}, init::Constant(0.1));
    h = i == 1 ? ops::Add(vs, b.value(), ops::MatMul(vs, h, w.value()))
               : ops::BiasAdd(vs, ops::MatMul(vs, h, w.value()), b.value());
    if (i < 2) h = ops::Relu(vs, h);
  }
  Output loss = ops::MeanSquaredError(root, h, target);
  train::GradientDescent opt(0.1);
  Operation step = opt.Minimize(root, loss);
  Session sess(g, Remapping(remapping));
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  Tensor xv = RandomTensor({32, 8}, 7), tv = RandomTensor({32, 1}, 8);
  auto ops = TracedOps(sess, {{x, xv}, {target, tv}}, {loss});
  CHECK((ops.at("l0/Relu") == "_FusedMatMul") == remapping);
  CHECK((ops.at("l1/Relu") == "_FusedMatMul") == remapping);
  CHECK((ops.at("l2/BiasAdd") == "_FusedMatMul") == remapping);
  for (int i = 0; i < steps; ++i)
    losses->push_back(sess.Run({{x, xv}, {target, tv}}, {loss}, {step})[0].data<float>()[0]);
  std::vector<Tensor> weights;
  for (const char* name : {"l0/w", "l0/b", "l1/w", "l1/b", "l2/w", "l2/b"})
    weights.push_back(sess.Run({FindVariable(&g, name).value()})[0]);
  return weights;
}

TEST_CASE("Remapper: training gives the same losses and weights with the rewrite on and off",
          "[remapper][train]") {
  constexpr int kSteps = 50;
  std::vector<float> loss_on, loss_off;
  std::vector<Tensor> w_on = Train(true, kSteps, &loss_on);
  std::vector<Tensor> w_off = Train(false, kSteps, &loss_off);
  // float32 sums in a different order in oneDNN's matmul than in sgemm: a few ulps per step.
  for (int i = 0; i < kSteps; ++i) CHECK(loss_on[i] == Approx(loss_off[i]).epsilon(1e-4));
  CHECK(loss_on.back() < 0.5f * loss_on.front());  // it trained
  for (size_t i = 0; i < w_on.size(); ++i) CHECK(MaxAbsDiff(w_on[i], w_off[i]) < 1e-4);
}

// A dense softmax layer with an L2 regulariser: the weight's gradient is AddN(data term,
// Mul(w, scale)), which the remapper folds into the optimizer's update.
struct L2Model {
  Graph g;
  Output x, labels, loss, addn, watch;
  Operation step;
  L2Model(train::Optimizer& opt, bool extra_addn_consumer = false) {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 6});
    labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32, {-1});
    Scope vs = root.WithVariableScope("dense");
    Variable w = GetVariable(vs, "w", {6, 5}, init::GlorotUniform(3));
    Variable b = GetVariable(vs, "b", {5}, init::Constant(0.1));
    Output logits = ops::BiasAdd(vs, ops::MatMul(vs, x, w.value()), b.value());
    Output xent =
        ops::Mean(root, ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).first);
    loss = ops::AddN(root, {train::L2Regularization(root, {w}, 0.05), xent});
    auto grads = opt.ComputeGradients(root, loss);
    for (const auto& [grad, var] : grads) {
      if (var.name() == "dense/w") addn = grad;
    }
    if (extra_addn_consumer) watch = ops::Neg(root.WithOpName("watch"), addn);
    step = opt.ApplyGradients(root, grads);
  }
  FeedDict Feed(int seed) const {
    Tensor y(DT_INT32, {8});
    for (int i = 0; i < 8; ++i) y.data<int32_t>()[i] = (i * 3 + seed) % 5;
    return {{x, RandomTensor({8, 6}, seed)}, {labels, y}};
  }
};

TEST_CASE("Remapper: a gradient's AddN and its L2 Mul run inside the optimizer's update",
          "[remapper][train]") {
  train::GradientDescent opt(0.5);
  L2Model m(opt);
  REQUIRE(m.addn.node->op() == "AddN");
  const std::string update = "GradientDescent/update_dense/w/ApplyGradientDescent";
  Session sess(m.g);
  sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&m.g))});
  auto ops = TracedOps(sess, m.Feed(1), {}, {m.step});
  CHECK(ops.at(update) == "_FusedApplyGradientDescent");
  CHECK(ops.count(m.addn.node->name()) == 0);
  for (const auto& [name, op] : ops)
    CHECK_FALSE((op == "Mul" && name.find("L2Loss_grad") != std::string::npos));
  // Fetching the sum, or a second consumer of it, keeps the AddN.
  ops = TracedOps(sess, m.Feed(1), {m.addn}, {m.step});
  CHECK(ops.at(update) == "ApplyGradientDescent");
  CHECK(ops.at(m.addn.node->name()) == "AddN");
  train::GradientDescent opt2(0.5);
  L2Model watched(opt2, /*extra_addn_consumer=*/true);
  Session sess2(watched.g);
  sess2.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&watched.g))});
  ops = TracedOps(sess2, watched.Feed(1), {watched.watch}, {watched.step});
  CHECK(ops.at(update) == "ApplyGradientDescent");
}

// The fused update sums the terms in AddN's order and rounding: every optimizer gives the
// same bits with the rewrite on and off.
TEST_CASE("Remapper: fused optimizer updates match the unfused graph bit for bit",
          "[remapper][train]") {
  using MakeOpt = std::function<std::unique_ptr<train::Optimizer>()>;
  const std::vector<std::pair<std::string, MakeOpt>> optimizers = {
      {"ApplyGradientDescent", [] { return std::make_unique<train::GradientDescent>(0.5); }},
      {"ApplyMomentum", [] { return std::make_unique<train::Momentum>(0.1, 0.9, true); }},
      {"ApplyAdam", [] { return std::make_unique<train::Adam>(0.01); }},
      {"ApplyRMSProp", [] { return std::make_unique<train::RMSProp>(0.01, 0.9, 0.5); }},
      {"ApplyAdagrad", [] { return std::make_unique<train::AdaGrad>(0.1); }},
  };
  for (const auto& [op, make] : optimizers) {
    INFO(op);
    std::vector<Tensor> w[2];
    std::vector<float> losses[2];
    for (bool on : {true, false}) {
      std::unique_ptr<train::Optimizer> opt = make();
      L2Model m(*opt);
      Session sess(m.g, Remapping(on));
      sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&m.g))});
      bool fused = false;
      for (const auto& [name, o] : TracedOps(sess, m.Feed(0), {}, {m.step}))
        fused = fused || o == "_Fused" + op;
      CHECK(fused == on);
      for (int i = 0; i < 20; ++i)
        losses[on].push_back(sess.Run(m.Feed(0), {m.loss}, {m.step})[0].data<float>()[0]);
      for (const char* name : {"dense/w", "dense/b"})
        w[on].push_back(sess.Run({FindVariable(&m.g, name).value()})[0]);
    }
    CHECK(losses[1] == losses[0]);
    CHECK(losses[1].back() < losses[1].front());  // it trained
    for (size_t i = 0; i < w[0].size(); ++i) CHECK(w[1][i].BitwiseEqual(w[0][i]));
  }
}

TEST_CASE("Remapper: a fused update reports gradient terms of the wrong shape",
          "[remapper][train]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Variable v = GetVariable(root, "v", {3}, init::Zeros());
  Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT, {-1});
  Output b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT, {-1});
  Output update = NodeBuilder(root.WithOpName("update"), "ApplyGradientDescent")
                      .Input(v.ref())
                      .Input(ops::Const(root, 0.1f))
                      .Input(ops::AddN(root.WithOpName("sum"), {a, b}))
                      .Finalize();
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  FeedDict feed = {{a, Tensor(DT_FLOAT, {3})}, {b, Tensor(DT_FLOAT, {4})}};
  // The shape function of the fused node catches it before the kernel runs.
  CHECK_THAT(sess.TryRun(feed, {}, {Operation(update.node)}, nullptr).message(),
             Contains("var and AddN input 1 (the AddN fused into this update) do not have the "
                      "same shape: [3] vs [4]") &&
                 Contains("{{node update}} = _FusedApplyGradientDescent"));
  // The variable was not touched.
  CHECK(sess.Run({v.value()})[0].BitwiseEqual(Tensor(DT_FLOAT, {3})));
}

}  // namespace
}  // namespace pf::remapper_test
