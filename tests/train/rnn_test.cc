// Recurrent layers (issue 35): LSTMCell and GRUCell against hand-written double loops,
// DynamicRnn against the same cell unrolled, its gradient against finite differences, masking
// past sequence_length, and a small sequence task learnt through the loop's gradient.
#include "tests/testing/test_util.h"

namespace pf::rnn_test {
namespace {

using Catch::Matchers::Contains;

double Sig(double v) { return 1 / (1 + std::exp(-v)); }

// The LSTM of docs (gates i, j, f, o; forget bias 1) in doubles, from the variables' values.
std::vector<double> ReferenceLstm(const Tensor& x, const Tensor& w, const Tensor& b, int units) {
  const int batch = static_cast<int>(x.shape().dim(0)), steps = static_cast<int>(x.shape().dim(1));
  const int depth = static_cast<int>(x.shape().dim(2));
  std::vector<double> c(batch * units, 0), h(batch * units, 0), out;
  for (int t = 0; t < steps; ++t) {
    std::vector<double> nc(c.size()), nh(h.size());
    for (int n = 0; n < batch; ++n) {
      std::vector<double> z(4 * units);
      for (int k = 0; k < 4 * units; ++k) {
        double acc = b.data<double>()[k];
        for (int d = 0; d < depth; ++d)
          acc +=
              x.data<double>()[(n * steps + t) * depth + d] * w.data<double>()[d * 4 * units + k];
        for (int u = 0; u < units; ++u)
          acc += h[n * units + u] * w.data<double>()[(depth + u) * 4 * units + k];
        z[k] = acc;
      }
      for (int u = 0; u < units; ++u) {
        const double i = z[u], j = z[units + u], f = z[2 * units + u], o = z[3 * units + u];
        nc[n * units + u] = c[n * units + u] * Sig(f + 1) + Sig(i) * std::tanh(j);
        nh[n * units + u] = std::tanh(nc[n * units + u]) * Sig(o);
      }
    }
    c = nc;
    h = nh;
  }
  return h;
}

TEST_CASE("DynamicRnn with an LSTMCell matches a plain LSTM loop", "[control_flow][rnn]") {
  const bool fused = GENERATE(true, false);
  CAPTURE(fused);
  Graph g;
  Scope root = Scope::Root(&g);
  const Tensor xv = testing::RandomDoubleTensor({2, 5, 3}, 11);
  Output x = ops::Const(root, xv);
  layers::LSTMCell cell("lstm", 4, 1.f, /*seed=*/3);
  layers::RnnOutputs r = layers::DynamicRnn(root, cell, x, {.fused = fused});
  // The fused sequence is one BlockLSTM op and no loop; the loop has no BlockLSTM.
  CHECK((g.FindNode("rnn/lstm/BlockLSTM") != nullptr) == fused);
  CHECK((g.FindNode("rnn/while/LoopCond") != nullptr) == !fused);
  CHECK(r.outputs.shape() == Shape{2, 5, 4});
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto v = sess.RunNamed({}, {"lstm/kernel:0", "lstm/bias:0"});
  auto out = sess.Run({r.outputs, r.final_state[1]});
  const std::vector<double> want = ReferenceLstm(xv, v[0], v[1], 4);
  REQUIRE(out[1].num_elements() == 8);
  for (int k = 0; k < 8; ++k) CHECK(out[1].data<double>()[k] == Approx(want[k]).margin(1e-12));
  // The outputs' last step is the final h.
  CHECK(out[0].shape() == Shape{2, 5, 4});
  for (int n = 0; n < 2; ++n)
    for (int u = 0; u < 4; ++u)
      CHECK(out[0].data<double>()[(n * 5 + 4) * 4 + u] == out[1].data<double>()[n * 4 + u]);
}

TEST_CASE("GRUCell in DynamicRnn matches the same cell unrolled by hand", "[control_flow][rnn]") {
  Graph g;
  Scope root = Scope::Root(&g);
  const Tensor xv = testing::RandomDoubleTensor({3, 4, 2}, 12);
  Output x = ops::Const(root, xv);
  layers::GRUCell cell("gru", 5, /*seed=*/4);
  layers::RnnOutputs r = layers::DynamicRnn(root, cell, x, {.time_major = false});
  // The same steps without a loop: slices of x, the cell's Step four times.
  Output h = ops::Cast(root, ops::Const(root, Tensor(DT_FLOAT, {3, 5})), DT_DOUBLE);
  h = ops::ZerosLike(root, h);
  for (int t = 0; t < 4; ++t) {
    Output xt = ops::Reshape(root, ops::Slice(root, x, {0, t, 0}, {3, 1, 2}), {3, 2});
    Output y;
    h = cell.Step(root, xt, {h}, &y)[0];
  }
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto out = sess.Run({r.final_state[0], h});
  CHECK(testing::MaxAbsDiff(out[0], out[1]) < 1e-12);
}

// Central differences of `loss` at `value` of the fed tensor `t` (the session's variables
// initialised), against Gradients' value there: the largest absolute difference.
double GradientError(Session& sess, Output loss, Output t, const Tensor& value, Output grad,
                     const FeedDict& other) {
  FeedDict feeds = other;
  feeds.emplace_back(t, value);
  const Tensor symbolic = sess.Run(feeds, {grad})[0];
  double worst = 0;
  for (int64_t k = 0; k < value.num_elements(); ++k) {
    double f[2];
    for (int side = 0; side < 2; ++side) {
      Tensor moved = value.Clone();
      moved.data<double>()[k] += side == 0 ? 1e-6 : -1e-6;
      feeds.back().second = moved;
      f[side] = sess.Run(feeds, {loss})[0].scalar<double>();
    }
    worst = std::max(worst, std::abs((f[0] - f[1]) / 2e-6 - symbolic.data<double>()[k]));
  }
  return worst;
}

TEST_CASE("DynamicRnn's gradient matches finite differences", "[control_flow][rnn][gradients]") {
  const bool fused = GENERATE(true, false);
  for (bool lstm : {true, false}) {
    CAPTURE(lstm, fused);
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, {2, 3, 2});
    std::unique_ptr<layers::RnnCell> cell;
    if (lstm) {
      cell = std::make_unique<layers::LSTMCell>("cell", 3, 1.f, 5);
    } else {
      cell = std::make_unique<layers::GRUCell>("cell", 3, 5);
    }
    layers::RnnOutputs r = layers::DynamicRnn(root, *cell, x, {.fused = fused});
    Output loss = ops::Sum(root, ops::Square(root, r.outputs));
    // The kernel's read: fed, it stands for the variable (a perturbed copy of its value).
    Output kernel(g.FindNode(lstm ? "cell/kernel/read" : "cell/gates/kernel/read"), 0);
    REQUIRE(kernel.node != nullptr);
    std::vector<Output> grads = Gradients(root, {loss}, {x, kernel});
    Session sess(g);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    const Tensor xv = testing::RandomDoubleTensor({2, 3, 2}, 14);
    const Tensor kv = sess.Run({kernel})[0];
    CHECK(GradientError(sess, loss, x, xv, grads[0], {{kernel, kv}}) < 1e-7);
    CHECK(GradientError(sess, loss, kernel, kv, grads[1], {{x, xv}}) < 1e-7);
  }
}

TEST_CASE("DynamicRnn keeps the state past each sequence's length", "[control_flow][rnn]") {
  const bool fused = GENERATE(true, false);
  CAPTURE(fused);
  Graph g;
  Scope root = Scope::Root(&g);
  const Tensor xv = testing::RandomTensor({2, 4, 3}, 13);
  Output x = ops::Const(root, xv);
  layers::LSTMCell cell("lstm", 2, 1.f, 6);
  layers::RnnOutputs full = layers::DynamicRnn(root, cell, x, {.fused = fused});
  layers::DynamicRnnOptions o;
  o.fused = fused;
  // int64, as TensorFlow takes it too.
  o.sequence_length = ops::Const(root, std::vector<int64_t>{2, 4}, {2});
  o.name = "masked";
  layers::RnnOutputs masked = layers::DynamicRnn(root, cell, x, o);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto out = sess.Run({full.outputs, masked.outputs, masked.final_state[1]});
  const float* f = out[0].data<float>();
  const float* m = out[1].data<float>();
  for (int u = 0; u < 2; ++u) {
    // Entry 0 (length 2): its h after step 2 is its final state; its outputs past it are 0.
    CHECK(out[2].data<float>()[u] == f[(0 * 4 + 1) * 2 + u]);
    CHECK(m[(0 * 4 + 2) * 2 + u] == 0.f);
    CHECK(m[(0 * 4 + 3) * 2 + u] == 0.f);
    // Entry 1 (length 4) runs all steps.
    CHECK(out[2].data<float>()[2 + u] == f[(1 * 4 + 3) * 2 + u]);
  }
}

TEST_CASE("DynamicRnn's fused LSTM gives the loop's outputs, states and gradients",
          "[control_flow][rnn][gradients]") {
  // Batch 24: the fused kernels split the entries over the intra-op threads. Lengths 0 (the
  // zero state), past the steps (all of them) and in between.
  constexpr int kBatch = 24, kSteps = 5;
  std::vector<int32_t> len(kBatch);
  for (int n = 0; n < kBatch; ++n) len[n] = n % 7;  // 0 .. 6, kSteps = 5
  std::vector<Tensor> got[2];
  for (bool fused : {false, true}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Const(root, testing::RandomTensor({kBatch, kSteps, 3}, 15));
    layers::LSTMCell cell("lstm", 6, 1.f, 9);
    layers::DynamicRnnOptions o;
    o.fused = fused;
    o.sequence_length = ops::Const(root, len, {kBatch});
    layers::RnnOutputs r = layers::DynamicRnn(root, cell, x, o);
    Output loss = ops::Add(root, ops::Sum(root, ops::Square(root, r.outputs)),
                           ops::Sum(root, ops::Mul(root, r.final_state[0], r.final_state[1])));
    std::vector<Output> fetch = {r.outputs, r.final_state[0], r.final_state[1]};
    for (const Variable& v : GlobalVariables(&g)) fetch.push_back(v.value());
    const std::vector<Output> grads = Gradients(root, {loss}, {fetch[3], fetch[4], x});
    fetch.insert(fetch.end(), grads.begin(), grads.end());
    Session sess(g);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    got[fused] = sess.Run(fetch);
  }
  for (size_t k = 0; k < got[0].size(); ++k) {
    CAPTURE(k);
    CHECK(testing::MaxAbsDiff(got[0][k], got[1][k]) < 2e-6);
  }
  // A zero length leaves the zero state; outputs past a length are zeros.
  for (int u = 0; u < 6; ++u) CHECK(got[1][2].data<float>()[u] == 0.f);
  CHECK(got[1][0].data<float>()[((1 * kSteps) + 1) * 6] == 0.f);
}

TEST_CASE("An LSTM learns a sequence task through the loop's gradient and the fused one's",
          "[control_flow][rnn]") {
  // Is the sum of a sequence of 8 values in [-1, 1) positive? Batch 64, 16 units, Adam.
  const bool fused = GENERATE(true, false);
  CAPTURE(fused);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {64, 8, 1});
  Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT, {64, 1});
  layers::LSTMCell cell("lstm", 16, 1.f, 7);
  layers::RnnOutputs r = layers::DynamicRnn(root, cell, x, {.fused = fused});
  Output logits = layers::Dense(root, "out", r.final_state[1], {.units = 1, .seed = 8});
  Output loss = ops::Mean(root, ops::SigmoidCrossEntropyWithLogits(root, logits, y));
  train::Adam adam(0.02);
  Operation train = adam.Minimize(root, loss);
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  auto batch = [](uint32_t seed) {
    Tensor xs = testing::RandomTensor({64, 8, 1}, seed);
    Tensor ys(DT_FLOAT, {64, 1});
    for (int n = 0; n < 64; ++n) {
      float sum = 0;
      for (int t = 0; t < 8; ++t) sum += xs.data<float>()[n * 8 + t];
      ys.data<float>()[n] = sum > 0 ? 1.f : 0.f;
    }
    return std::make_pair(xs, ys);
  };
  auto [x0, y0] = batch(100);
  const float first = sess.Run({{x, x0}, {y, y0}}, {loss})[0].scalar<float>();
  for (int step = 0; step < 150; ++step) {
    auto [xs, ys] = batch(200 + step);
    sess.Run({{x, xs}, {y, ys}}, {}, {train});
  }
  const float last = sess.Run({{x, x0}, {y, y0}}, {loss})[0].scalar<float>();
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.5f * first);
}

// Two LSTM layers and a dense layer, trained 10 Adam steps on fixed batches; `split`: the
// second layer (its loop and, by name, its gradient) on /cpu:1. `stacked`: both layers in one
// loop (MultiRnnCell), the second through DeviceWrapper when split: one loop on two devices.
// `fused`: unstacked layers run as BlockLSTM ops (their gradients BlockLSTMGrad), not loops.
std::vector<float> TwoLayerLosses(bool split, bool stacked = false, bool fused = false) {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {16, 6, 3});
  Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT, {16, 1});
  Output h = x;
  if (stacked) {
    layers::LSTMCell lstm0("lstm_0", 8, 1.f, 20), lstm1("lstm_1", 8, 1.f, 21);
    layers::DeviceWrapper on1(&lstm1, split ? "/cpu:1" : "/cpu:0");
    layers::MultiRnnCell cell({&lstm0, &on1});
    h = layers::DynamicRnn(root, cell, h).outputs;
  }
  for (int layer = 0; layer < 2 && !stacked; ++layer) {
    const std::string name = "lstm_" + std::to_string(layer);
    const Scope s = split && layer == 1 ? root.WithDevice("/cpu:1") : root;
    layers::LSTMCell cell(name, 8, 1.f, 20 + layer);
    h = layers::DynamicRnn(s, cell, h, {.name = name, .fused = fused}).outputs;
  }
  Output last = ops::Reshape(root, ops::Slice(root, h, {0, 5, 0}, {-1, 1, 8}), {16, 8});
  Output out = layers::Dense(root, "out", last, {.units = 1, .seed = 30});
  Output loss = ops::Mean(root, ops::Square(root, ops::Sub(root, out, y)));
  train::Adam adam(0.01);
  Operation step = adam.Minimize(root, loss);
  SessionOptions two;
  two.device_count["CPU"] = 2;
  Session sess(g, two);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  std::vector<float> losses;
  for (int i = 0; i < 10; ++i) {
    const FeedDict feeds = {{x, testing::RandomTensor({16, 6, 3}, 40 + i)},
                            {y, testing::RandomTensor({16, 1}, 60 + i)}};
    losses.push_back(sess.Run(feeds, {loss})[0].scalar<float>());
    sess.Run(feeds, {}, {step});
  }
  // The second layer's loop really ran on /cpu:1 (or /cpu:0), its gradient's loop too; stacked,
  // its step's MatMul and its gradient's.
  const char* want = split ? "CPU:1" : "CPU:0";
  int checked = 0;
  const std::string forward = stacked ? "rnn/while/lstm_1/MatMul"
                              : fused ? "lstm_1/lstm_1/BlockLSTM"
                                      : "lstm_1/while/LoopCond";
  const std::string grad =
      stacked ? "gradients/rnn/while_grad/while/gradients/rnn/while/lstm_1/MatMul_grad/MatMul"
      : fused ? "gradients/lstm_1/lstm_1/BlockLSTM_grad/BlockLSTMGrad"
              : "gradients/lstm_1/while_grad/while/LoopCond";
  for (const auto& [node, device] : sess.DevicePlacement()) {
    if (node.rfind(forward, 0) == 0 || node.rfind(grad, 0) == 0) {
      ++checked;
      CHECK(device.find(want) != std::string::npos);
    }
  }
  CHECK(checked >= 2);
  return losses;
}

TEST_CASE("The same RNN on one device and split over two gives equal losses for 10 steps",
          "[control_flow][rnn]") {
  const std::vector<float> one = TwoLayerLosses(false), two = TwoLayerLosses(true);
  // Equal up to float rounding: the split graph sums some gradients in another order.
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) CHECK(two[i] == Approx(one[i]).epsilon(1e-5));
  // The layers as BlockLSTM ops, on one device and on two: the loops' losses up to rounding.
  const std::vector<float> fused_one = TwoLayerLosses(false, false, /*fused=*/true),
                           fused_two = TwoLayerLosses(true, false, /*fused=*/true);
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(fused_one[i] == Approx(one[i]).epsilon(1e-4));
    CHECK(fused_two[i] == Approx(fused_one[i]).epsilon(1e-5));
  }
  // Both layers in one loop (MultiRnnCell), on one device and with its body spanning two: the
  // same losses. (The same model as two loops, so the same first loss; Adam's first steps
  // magnify the rounding of gradients summed in another order, so later losses differ from the
  // two-loop graph's by about 1e-4.)
  const std::vector<float> stacked_one = TwoLayerLosses(false, /*stacked=*/true),
                           stacked_two = TwoLayerLosses(true, /*stacked=*/true);
  REQUIRE(stacked_two.size() == one.size());
  CHECK(stacked_one[0] == Approx(one[0]).epsilon(1e-6));
  for (size_t i = 0; i < one.size(); ++i)
    CHECK(stacked_two[i] == Approx(stacked_one[i]).epsilon(1e-5));
}

TEST_CASE("DynamicRnn's bad input names the inputs", "[control_flow][rnn][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  layers::LSTMCell cell("lstm", 2);
  CHECK_THROWS_WITH(layers::DynamicRnn(root, cell, ops::Const(root, Tensor(DT_FLOAT, {2, 3}))),
                    Contains("must be [batch, time, depth]"));
  CHECK_THROWS_WITH(layers::LSTMCell("bad", 0), Contains("units must be positive"));
  layers::DynamicRnnOptions o;
  o.sequence_length = ops::Const(root, 2.f);
  CHECK_THROWS_WITH(
      layers::DynamicRnn(root, cell, ops::Const(root, Tensor(DT_FLOAT, {2, 3, 1})), o),
      Contains("sequence_length") && Contains("int32 or int64 vector"));
}

}  // namespace
}  // namespace pf::rnn_test
