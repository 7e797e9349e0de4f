// BlockLSTM and BlockLSTMGrad (ops/nn/lstm_ops.cc): against an LSTM written out here in doubles
// (peepholes, a clip, seq_len_max short of the steps), float against double, gradients of every
// input against finite differences, and their errors.
#include "tests/testing/test_util.h"

namespace pf::lstm_ops_test {
namespace {

using Catch::Matchers::Contains;

constexpr int kT = 4, kB = 3, kD = 2, kH = 3;

double Sig(double v) { return 1 / (1 + std::exp(-v)); }

struct Inputs {
  Tensor x = testing::RandomDoubleTensor({kT, kB, kD}, 1);
  Tensor cs_prev = testing::RandomDoubleTensor({kB, kH}, 2);
  Tensor h_prev = testing::RandomDoubleTensor({kB, kH}, 3);
  Tensor w = testing::RandomDoubleTensor({kD + kH, 4 * kH}, 4);
  Tensor wci = testing::RandomDoubleTensor({kH}, 5);
  Tensor wcf = testing::RandomDoubleTensor({kH}, 6);
  Tensor wco = testing::RandomDoubleTensor({kH}, 7);
  Tensor b = testing::RandomDoubleTensor({4 * kH}, 8);
  std::vector<Tensor*> all() { return {&x, &cs_prev, &h_prev, &w, &wci, &wcf, &wco, &b}; }
};

// The step of TensorFlow's LSTMBlockCell, one value at a time: per step t < live and entry n,
// the seven outputs {i, cs, f, o, ci, co, h}, indexed [t][n][u].
std::vector<std::vector<double>> Reference(const Inputs& in, int live, double forget_bias,
                                           double clip, bool peephole) {
  auto v = [](const Tensor& t, int k) { return t.data<double>()[k]; };
  std::vector<std::vector<double>> out(7, std::vector<double>(kT * kB * kH, 0.0));
  std::vector<double> c(kB * kH), h(kB * kH);
  for (int k = 0; k < kB * kH; ++k) c[k] = v(in.cs_prev, k), h[k] = v(in.h_prev, k);
  for (int t = 0; t < live; ++t) {
    for (int n = 0; n < kB; ++n) {
      double z[4 * kH];
      for (int g = 0; g < 4 * kH; ++g) {
        z[g] = v(in.b, g);
        for (int d = 0; d < kD; ++d)
          z[g] += v(in.x, (t * kB + n) * kD + d) * v(in.w, d * 4 * kH + g);
        for (int u = 0; u < kH; ++u) z[g] += h[n * kH + u] * v(in.w, (kD + u) * 4 * kH + g);
      }
      for (int u = 0; u < kH; ++u) {
        const double cp = c[n * kH + u];
        const double i = Sig(z[u] + (peephole ? cp * v(in.wci, u) : 0));
        const double ci = std::tanh(z[kH + u]);
        const double f = Sig(z[2 * kH + u] + forget_bias + (peephole ? cp * v(in.wcf, u) : 0));
        double cs = i * ci + f * cp;
        if (clip > 0) cs = std::min(clip, std::max(-clip, cs));
        const double o = Sig(z[3 * kH + u] + (peephole ? cs * v(in.wco, u) : 0));
        const int e = (t * kB + n) * kH + u;
        const double vals[7] = {i, cs, f, o, ci, std::tanh(cs), std::tanh(cs) * o};
        for (int k = 0; k < 7; ++k) out[k][e] = vals[k];
      }
    }
    for (int k = 0; k < kB * kH; ++k) {
      c[k] = out[1][t * kB * kH + k];
      h[k] = out[6][t * kB * kH + k];
    }
  }
  return out;
}

// BlockLSTM on `in` (in dtype, input `fed` a placeholder when >= 0).
ops::BlockLstmOutputs Build(const Scope& s, Inputs& in, DType dtype, int64_t live,
                            const ops::BlockLstmAttrs& a, int fed = -1,
                            Output* placeholder = nullptr) {
  std::vector<Output> args;
  std::vector<Tensor*> all = in.all();
  for (int k = 0; k < 8; ++k) {
    const std::span<double> v = all[k]->flat<double>();
    Tensor value = testing::FromDoubles(dtype, all[k]->shape(), {v.begin(), v.end()});
    if (k == fed) {
      *placeholder = ops::Placeholder(s, dtype, value.shape());
      args.push_back(*placeholder);
    } else {
      args.push_back(ops::Const(s, value));
    }
  }
  return ops::BlockLSTM(s, ops::Const(s, Tensor::Scalar<int64_t>(live)), args[0], args[1], args[2],
                        args[3], args[4], args[5], args[6], args[7], a);
}

TEST_CASE("BlockLSTM matches an LSTM written out in doubles", "[ops][nn][rnn]") {
  Inputs in;
  for (bool peephole : {false, true}) {
    for (double clip : {-1.0, 0.4}) {
      CAPTURE(peephole, clip);
      const ops::BlockLstmAttrs a{
          .forget_bias = 0.7f, .cell_clip = static_cast<float>(clip), .use_peephole = peephole};
      const auto want = Reference(in, 3, 0.7, clip, peephole);
      for (DType dtype : {DT_DOUBLE, DT_FLOAT}) {
        Graph g;
        Scope root = Scope::Root(&g);
        ops::BlockLstmOutputs r = Build(root, in, dtype, /*live=*/3, a);
        CHECK(r.h.shape() == Shape{kT, kB, kH});
        Session sess(g);
        const auto got = sess.Run({r.i, r.cs, r.f, r.o, r.ci, r.co, r.h});
        // Doubles: the same math, summed in another order. Floats: float rounding.
        const double tol = dtype == DT_DOUBLE ? 1e-12 : 2e-6;
        for (int k = 0; k < 7; ++k) {
          for (int e = 0; e < kT * kB * kH; ++e) {
            INFO("output " << k << " element " << e);
            const double v =
                dtype == DT_DOUBLE ? got[k].data<double>()[e] : got[k].data<float>()[e];
            CHECK(v == Approx(want[k][e]).margin(tol));
          }
        }
      }
    }
  }
}

TEST_CASE("BlockLSTM's gradients match finite differences", "[ops][nn][rnn][gradients]") {
  for (bool peephole : {false, true}) {
    for (int fed = 0; fed < 8; ++fed) {
      CAPTURE(peephole, fed);
      Inputs in;
      Graph g;
      Scope root = Scope::Root(&g);
      Output p;
      const ops::BlockLstmAttrs a{.forget_bias = 1.f, .cell_clip = -1.f, .use_peephole = peephole};
      ops::BlockLstmOutputs r = Build(root, in, DT_DOUBLE, /*live=*/3, a, fed, &p);
      // Both outputs that carry gradients, weighted apart.
      Output y = ops::Add(root, r.h, ops::Mul(root, r.cs, ops::Const(root, Tensor::Scalar(0.3))));
      const Tensor value = in.all()[fed]->Clone();
      const double err = ComputeGradientError(root, p, value.shape(), y, Shape{kT, kB, kH}, &value);
      CHECK(err < 1e-7);
    }
  }
}

TEST_CASE("BlockLSTMGrad in float agrees with double", "[ops][nn][rnn][gradients]") {
  // The float kernel (ops/simd's LstmCellGrad under the ISA cap in force) against the double
  // one that the finite differences check; cs near the clip in places.
  Inputs in;
  for (double& v : in.x.flat<double>()) v *= 3;
  const ops::BlockLstmAttrs a{.forget_bias = 0.5f, .cell_clip = 0.6f, .use_peephole = true};
  std::vector<Tensor> grads[2];
  for (int k = 0; k < 2; ++k) {
    Graph g;
    Scope root = Scope::Root(&g);
    ops::BlockLstmOutputs r = Build(root, in, k == 0 ? DT_DOUBLE : DT_FLOAT, /*live=*/3, a);
    Output y = ops::Add(
        root, r.h, ops::Mul(root, r.cs, ops::Cast(root, ops::Const(root, 0.3f), r.cs.dtype())));
    std::vector<Output> args;
    for (int i = 1; i <= 8; ++i) args.push_back(r.h.node->input(i));
    Session sess(g);
    grads[k] = sess.Run(Gradients(root, {ops::Sum(root, y)}, args));
  }
  for (int i = 0; i < 8; ++i) {
    CAPTURE(i);
    REQUIRE(grads[1][i].num_elements() == grads[0][i].num_elements());
    for (int64_t e = 0; e < grads[0][i].num_elements(); ++e)
      CHECK(grads[1][i].data<float>()[e] == Approx(grads[0][i].data<double>()[e]).margin(1e-5));
  }
}

TEST_CASE("BlockLSTM's gradient stops where the clip held the cell state",
          "[ops][nn][rnn][gradients]") {
  // Large inputs push cs past 0.2 in many places: the gradient still matches finite differences
  // (which see a flat function there) of the clipped LSTM.
  Inputs in;
  for (double& v : in.x.flat<double>()) v *= 4;
  Graph g;
  Scope root = Scope::Root(&g);
  Output p;
  const ops::BlockLstmAttrs a{.forget_bias = 1.f, .cell_clip = 0.2f, .use_peephole = true};
  ops::BlockLstmOutputs r = Build(root, in, DT_DOUBLE, kT, a, /*fed=*/3, &p);
  Session sess(g);
  const Tensor cs = sess.Run({{p, in.w}}, {r.cs})[0];
  int clipped = 0;
  for (double v : cs.flat<double>()) clipped += std::abs(v) >= 0.2;
  CHECK(clipped > 5);
  CHECK(ComputeGradientError(root, p, in.w.shape(), r.h, Shape{kT, kB, kH}, &in.w) < 1e-7);
}

TEST_CASE("BlockLSTM's bad input and unsupported gradients are errors", "[ops][nn][rnn][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Inputs in;
  in.w = Tensor(DT_DOUBLE, {kD + kH, 4 * kH + 1});
  CHECK_THROWS_WITH(Build(root, in, DT_DOUBLE, kT, {}),
                    Contains("BlockLSTM") && Contains("shapes do not agree") &&
                        Contains("w [5,13]") && Contains("x [4,3,2]"));
  Inputs good;
  ops::BlockLstmOutputs r = Build(root, good, DT_DOUBLE, -1, {});
  Session sess(g);
  CHECK_THROWS_WITH(sess.Run({r.h}), Contains("seq_len_max is negative"));
  // Only cs and h carry gradients.
  CHECK_THROWS_WITH(Gradients(root, {ops::Sum(root, r.i)}, {r.h.node->input(1)}),
                    Contains("no gradient through its gate output 'i'"));
}

}  // namespace
}  // namespace pf::lstm_ops_test
