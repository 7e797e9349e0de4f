// FusedBatchNorm and FusedBatchNormGrad against the formulas computed here in double, the
// statistics outputs (unbiased variance, running averages, reserve spaces), finite-difference
// gradient checks in float64 and errors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tests/testing/test_util.h"

namespace pf::batch_norm_ops_test {
namespace {

using testing::FromDoubles;
using testing::MaxAbsDiff;

std::vector<double> Random(int64_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// Channel of flat index i.
int64_t ChannelOf(int64_t i, const Shape& s, bool nchw) {
  return nchw ? (i / (s.dim(2) * s.dim(3))) % s.dim(1) : i % s.dim(3);
}

struct Reference {
  std::vector<double> y, batch_mean, batch_var, rs1, rs2;
};

Reference NaiveBatchNorm(const Shape& s, bool nchw, const std::vector<double>& x,
                         const std::vector<double>& scale, const std::vector<double>& offset,
                         const std::vector<double>& mean_in, const std::vector<double>& var_in,
                         double eps, bool training, double f) {
  const int64_t c = nchw ? s.dim(1) : s.dim(3);
  const int64_t n = s.num_elements() / c;
  Reference r;
  std::vector<double> mean(c, 0.0), var(c, 0.0);
  if (training) {
    for (int64_t i = 0; i < s.num_elements(); ++i) mean[ChannelOf(i, s, nchw)] += x[i] / n;
    for (int64_t i = 0; i < s.num_elements(); ++i) {
      const int64_t k = ChannelOf(i, s, nchw);
      var[k] += (x[i] - mean[k]) * (x[i] - mean[k]) / n;
    }
    for (int64_t k = 0; k < c; ++k) {
      const double unbiased = n > 1 ? var[k] * n / (n - 1) : var[k];
      r.batch_mean.push_back(f == 1 ? mean[k] : (1 - f) * mean_in[k] + f * mean[k]);
      r.batch_var.push_back(f == 1 ? unbiased : (1 - f) * var_in[k] + f * unbiased);
    }
  } else {
    mean = mean_in;
    var = var_in;
    r.batch_mean = mean_in;
    r.batch_var = var_in;
  }
  for (int64_t k = 0; k < c; ++k) {
    r.rs1.push_back(mean[k]);
    r.rs2.push_back(1 / std::sqrt(var[k] + eps));
  }
  for (int64_t i = 0; i < s.num_elements(); ++i) {
    const int64_t k = ChannelOf(i, s, nchw);
    r.y.push_back((x[i] - mean[k]) / std::sqrt(var[k] + eps) * scale[k] + offset[k]);
  }
  return r;
}

const std::vector<Shape> kShapes = {{2, 3, 4, 5}, {1, 5, 3, 7}, {3, 1, 1, 4}, {4, 6, 6, 16}};

TEST_CASE("FusedBatchNorm matches the formula in both modes and layouts", "[ops][nn][batchnorm]") {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (bool nchw : {false, true}) {
      for (bool training : {true, false}) {
        for (double f : {1.0, 0.25}) {
          if (!training && f != 1.0) continue;
          for (DType t : {DT_FLOAT, DT_DOUBLE}) {
            INFO(s.ToString() << (nchw ? " NCHW" : " NHWC") << " training " << training << " f "
                              << f << " " << DTypeName(t));
            const int64_t c = nchw ? s.dim(1) : s.dim(3);
            const Shape cs{c};
            auto x = Random(s.num_elements(), seed++, -2, 3);
            auto scale = Random(c, seed++, 0.5, 2), offset = Random(c, seed++);
            auto mean = Random(c, seed++), var = Random(c, seed++, 0.5, 2);
            const double eps = static_cast<double>(1e-3f);  // the attr is a float, as in TF
            Reference want = NaiveBatchNorm(s, nchw, x, scale, offset, mean, var, eps, training, f);
            Graph g;
            Scope root = Scope::Root(&g);
            auto in = [&](const Shape& sh, const std::vector<double>& v) {
              return ops::Const(root, FromDoubles(t, sh, v));
            };
            auto bn = ops::FusedBatchNorm(root, in(s, x), in(cs, scale), in(cs, offset),
                                          in(cs, mean), in(cs, var), static_cast<float>(eps),
                                          training, nchw ? "NCHW" : "NHWC", static_cast<float>(f));
            CHECK(bn.y.shape() == s);
            CHECK(bn.reserve_space_2.shape() == cs);
            Session sess(g);
            auto got = sess.Run({}, {bn.y, bn.batch_mean, bn.batch_variance, bn.reserve_space_1,
                                     bn.reserve_space_2});
            const double tol = t == DT_FLOAT ? 2e-5 : 1e-12;
            CHECK(MaxAbsDiff(got[0], FromDoubles(t, s, want.y)) <= tol * 10);
            CHECK(MaxAbsDiff(got[1], FromDoubles(t, cs, want.batch_mean)) <= tol);
            CHECK(MaxAbsDiff(got[2], FromDoubles(t, cs, want.batch_var)) <= tol * 10);
            CHECK(MaxAbsDiff(got[3], FromDoubles(t, cs, want.rs1)) <= tol);
            CHECK(MaxAbsDiff(got[4], FromDoubles(t, cs, want.rs2)) <= tol * 10);
          }
        }
      }
    }
  }
}

TEST_CASE("FusedBatchNorm returns the unbiased variance and TF's running averages",
          "[ops][nn][batchnorm]") {
  // One channel of 4 values 1, 2, 3, 6: mean 3, biased variance 3.5, unbiased 14/3.
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, {1.f, 2.f, 3.f, 6.f}, {1, 2, 2, 1});
  Output one = ops::Const(root, {1.f}, {1}), zero = ops::Const(root, {0.f}, {1});
  Output empty = ops::Const(root, std::vector<float>{}, {0});
  // Training with f == 1 accepts empty statistics, as TensorFlow does.
  auto plain = ops::FusedBatchNorm(root, x, one, zero, empty, empty, 0.f);
  auto avg = ops::FusedBatchNorm(root, x, one, zero, ops::Const(root, {1.f}, {1}),
                                 ops::Const(root, {2.f}, {1}), 0.f, true, "NHWC", 0.25f);
  Session sess(g);
  auto got = sess.Run({}, {plain.batch_mean, plain.batch_variance, plain.reserve_space_2,
                           avg.batch_mean, avg.batch_variance, plain.y});
  CHECK(got[0].data<float>()[0] == Approx(3.f));
  CHECK(got[1].data<float>()[0] == Approx(14.f / 3));
  CHECK(got[2].data<float>()[0] == Approx(1 / std::sqrt(3.5)));
  CHECK(got[3].data<float>()[0] == Approx(0.75 * 1 + 0.25 * 3));
  CHECK(got[4].data<float>()[0] == Approx(0.75 * 2 + 0.25 * 14.0 / 3));
  CHECK(got[5].data<float>()[3] == Approx(3 / std::sqrt(3.5)));
}

TEST_CASE("FusedBatchNormGrad matches the formulas", "[ops][nn][batchnorm]") {
  uint32_t seed = 100;
  for (const Shape& s : kShapes) {
    for (bool nchw : {false, true}) {
      for (bool training : {true, false}) {
        for (DType t : {DT_FLOAT, DT_DOUBLE}) {
          INFO(s.ToString() << (nchw ? " NCHW" : " NHWC") << " training " << training << " "
                            << DTypeName(t));
          const int64_t c = nchw ? s.dim(1) : s.dim(3);
          const int64_t n = s.num_elements() / c;
          auto dy = Random(s.num_elements(), seed++), x = Random(s.num_elements(), seed++);
          auto scale = Random(c, seed++, 0.5, 2), mean = Random(c, seed++);
          auto inv_std = Random(c, seed++, 0.5, 2);
          std::vector<double> sum_dy(c, 0.0), sum_dy_xhat(c, 0.0), dx(s.num_elements());
          for (int64_t i = 0; i < s.num_elements(); ++i) {
            const int64_t k = ChannelOf(i, s, nchw);
            sum_dy[k] += dy[i];
            sum_dy_xhat[k] += dy[i] * (x[i] - mean[k]) * inv_std[k];
          }
          for (int64_t i = 0; i < s.num_elements(); ++i) {
            const int64_t k = ChannelOf(i, s, nchw);
            const double xhat = (x[i] - mean[k]) * inv_std[k];
            dx[i] = training ? scale[k] * inv_std[k] / n *
                                   (n * dy[i] - sum_dy[k] - xhat * sum_dy_xhat[k])
                             : dy[i] * scale[k] * inv_std[k];
          }
          Graph g;
          Scope root = Scope::Root(&g);
          auto in = [&](const Shape& sh, const std::vector<double>& v) {
            return ops::Const(root, FromDoubles(t, sh, v));
          };
          const Shape cs{c};
          auto r =
              ops::FusedBatchNormGrad(root, in(s, dy), in(s, x), in(cs, scale), in(cs, mean),
                                      in(cs, inv_std), 1e-3f, training, nchw ? "NCHW" : "NHWC");
          Session sess(g);
          auto got = sess.Run({}, {r.x_backprop, r.scale_backprop, r.offset_backprop});
          const double tol = t == DT_FLOAT ? 1e-4 : 1e-11;
          CHECK(MaxAbsDiff(got[0], FromDoubles(t, s, dx)) <= tol);
          CHECK(MaxAbsDiff(got[1], FromDoubles(t, cs, sum_dy_xhat)) <= tol * n);
          CHECK(MaxAbsDiff(got[2], FromDoubles(t, cs, sum_dy)) <= tol * n);
        }
      }
    }
  }
}

// The float32 NHWC kernels run oneDNN and the float64 ones the direct loops: the two paths on the
// same inputs (cast), forward through the gradient, both layouts (NCHW float32 runs the loops
// today, and is held to the same bound should it move to oneDNN) and modes. Odd channel counts and
// n = N*H*W not a multiple of 16 reach the primitives' vector tails. Tolerance: |f32 - f64| <=
// 2e-5 * (1 + |f64|) per element (about 170 float ulps of a value near 1; observed: below 7e-7),
// 5e-5 * (1 + |f64|) for the channel sums dscale and doffset, n terms of order 1 that partly
// cancel (observed: below 7e-6 with 2 threads).
TEST_CASE("FusedBatchNorm float32 (loops, or oneDNN in NHWC) matches float64 (direct loops)",
          "[ops][nn][batchnorm]") {
  auto max_rel = [](const Tensor& f, const Tensor& d) {
    double worst = 0;
    for (int64_t i = 0; i < d.num_elements(); ++i) {
      const double want = d.data<double>()[i];
      worst = std::max(worst, std::abs(f.data<float>()[i] - want) / (1 + std::abs(want)));
    }
    return worst;
  };
  const std::vector<std::pair<Shape, bool>> cases = {
      {{3, 5, 7, 13}, false},  {{3, 13, 5, 7}, true}, {{4, 11, 13, 21}, false},
      {{4, 21, 11, 13}, true}, {{1, 1, 1, 5}, false}, {{2, 3, 1, 1}, true},
      {{5, 3, 3, 67}, false},  {{5, 67, 3, 3}, true}};
  uint32_t seed = 500;
  for (const auto& [s, nchw] : cases) {
    for (bool training : {true, false}) {
      for (float f : {1.f, 0.3f}) {
        if (!training && f != 1.f) continue;
        INFO(s.ToString() << (nchw ? " NCHW" : " NHWC") << " training " << training << " f " << f);
        const int64_t c = nchw ? s.dim(1) : s.dim(3);
        const int64_t n = s.num_elements() / c;
        const Shape cs{c};
        auto x = Random(s.num_elements(), seed++, -2, 3), dy = Random(s.num_elements(), seed++);
        auto scale = Random(c, seed++, 0.5, 2), offset = Random(c, seed++);
        auto mean = Random(c, seed++), var = Random(c, seed++, 0.5, 2);
        std::vector<Tensor> got[2];
        for (DType t : {DT_FLOAT, DT_DOUBLE}) {
          Graph g;
          Scope root = Scope::Root(&g);
          auto in = [&](const Shape& sh, const std::vector<double>& v) {
            return ops::Const(root, FromDoubles(t, sh, v));
          };
          const std::string df = nchw ? "NCHW" : "NHWC";
          auto bn = ops::FusedBatchNorm(root, in(s, x), in(cs, scale), in(cs, offset), in(cs, mean),
                                        in(cs, var), 1e-3f, training, df, f);
          auto gr =
              ops::FusedBatchNormGrad(root, in(s, dy), in(s, x), in(cs, scale), bn.reserve_space_1,
                                      bn.reserve_space_2, 1e-3f, training, df);
          Session sess(g);
          got[t == DT_DOUBLE] = sess.Run(
              {}, {bn.y, bn.batch_mean, bn.batch_variance, bn.reserve_space_1, bn.reserve_space_2,
                   gr.x_backprop, gr.scale_backprop, gr.offset_backprop});
        }
        const char* names[] = {
            "y",          "batch_mean",     "batch_variance", "reserve_space_1", "reserve_space_2",
            "x_backprop", "scale_backprop", "offset_backprop"};
        for (int i = 0; i < 8; ++i) {
          INFO(names[i]);
          const double tol = i >= 6 ? 5e-5 : 2e-5;
          CHECK(max_rel(got[0][i], got[1][i]) <= tol);
        }
      }
    }
  }
}

// Timings of the float32 kernels, median and fastest of 50 runs (`pf_tests "[batchnorm-bench]"`;
// run again with PF_BATCHNORM_ONEDNN=1 for oneDNN in NHWC). Prints, asserts nothing.
TEST_CASE("FusedBatchNorm timings", "[.][batchnorm-bench]") {
  for (const auto& [s, nchw] : std::vector<std::pair<Shape, bool>>{{{128, 14, 14, 64}, false},
                                                                   {{128, 28, 28, 16}, false},
                                                                   {{128, 64, 14, 14}, true},
                                                                   {{128, 16, 28, 28}, true}}) {
    const int64_t c = nchw ? s.dim(1) : s.dim(3);
    const std::string df = nchw ? "NCHW" : "NHWC";
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Const(root, testing::RandomTensor(s, 1));
    Output dy = ops::Const(root, testing::RandomTensor(s, 2));
    Output scale = ops::Const(root, testing::RandomTensor({c}, 3, 0.5f, 2.f));
    Output offset = ops::Const(root, testing::RandomTensor({c}, 4));
    Output mean = ops::Const(root, testing::RandomTensor({c}, 5));
    Output var = ops::Const(root, testing::RandomTensor({c}, 6, 0.5f, 2.f));
    for (bool training : {true, false}) {
      auto bn = ops::FusedBatchNorm(root, x, scale, offset, mean, var, 1e-3f, training, df);
      auto gr = ops::FusedBatchNormGrad(root, dy, x, scale, bn.reserve_space_1, bn.reserve_space_2,
                                        1e-3f, training, df);
      Session sess(g);
      for (auto [what, out] :
           {std::pair<const char*, Output>{"forward", bn.y}, {"forward+grad", gr.x_backprop}}) {
        std::vector<double> ms;
        for (int i = 0; i < 55; ++i) {
          const auto start = std::chrono::steady_clock::now();
          sess.Run({}, {out});
          if (i >= 5) {
            ms.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
          }
        }
        std::sort(ms.begin(), ms.end());
        std::printf("%-18s %s %-9s %-13s median %7.3f ms min %7.3f ms (threads %d, loops %s)\n",
                    s.ToString().c_str(), df.c_str(), training ? "training" : "inference", what,
                    ms[ms.size() / 2], ms[0], ThreadPool::Default()->num_threads(),
                    std::getenv("PF_BATCHNORM_ONEDNN") ? std::getenv("PF_BATCHNORM_ONEDNN") : "0");
      }
    }
  }
}

TEST_CASE("Gradient check: FusedBatchNorm wrt x, scale and offset (float64)",
          "[ops][nn][batchnorm][gradients]") {
  const Shape s{2, 3, 2, 4};
  for (bool nchw : {false, true}) {
    for (bool training : {true, false}) {
      const int64_t c = nchw ? s.dim(1) : s.dim(3);
      const Shape cs{c};
      const std::string df = nchw ? "NCHW" : "NHWC";
      for (int wrt = 0; wrt < 3; ++wrt) {
        INFO(df << " training " << training << " wrt input " << wrt);
        Graph g;
        Scope root = Scope::Root(&g);
        const Shape ws = wrt == 0 ? s : cs;
        Output p = ops::Placeholder(root.WithOpName("p"), DT_DOUBLE, ws);
        auto konst = [&](const Shape& sh, uint32_t seed, double lo, double hi) {
          return ops::Const(root,
                            FromDoubles(DT_DOUBLE, sh, Random(sh.num_elements(), seed, lo, hi)));
        };
        Output x = wrt == 0 ? p : konst(s, 1, -2, 2);
        Output scale = wrt == 1 ? p : konst(cs, 2, 0.5, 2);
        Output offset = wrt == 2 ? p : konst(cs, 3, -1, 1);
        auto bn = ops::FusedBatchNorm(root, x, scale, offset, konst(cs, 4, -1, 1),
                                      konst(cs, 5, 0.5, 2), 1e-3f, training, df);
        Tensor p0 = FromDoubles(DT_DOUBLE, ws, Random(ws.num_elements(), 7, 0.5, 1.5));
        CHECK(ComputeGradientError(root, p, ws, bn.y, s, &p0) < 1e-6);
      }
    }
  }
}

TEST_CASE("FusedBatchNormGrad has no gradient of its own", "[ops][nn][batchnorm][gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_DOUBLE, {2, 2, 2, 3});
  Output c = ops::Const(root, FromDoubles(DT_DOUBLE, {3}, {1, 2, 3}));
  auto bn = ops::FusedBatchNorm(root, x, c, c, c, c);
  Output dx = Gradients(root, {ops::Sum(root, ops::Square(root, bn.y))}, {x})[0];
  CHECK_THROWS_WITH(Gradients(root, {ops::Sum(root, dx)}, {x}),
                    Catch::Contains("No gradient defined for op: FusedBatchNormGrad"));
}

TEST_CASE("FusedBatchNorm errors name the problem and the shapes", "[ops][nn][batchnorm][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  auto ph = [&](const Shape& s) { return ops::Placeholder(root, DT_FLOAT, s); };
  Output x = ph({2, 4, 4, 3}), c3 = ph({3}), c4 = ph({4}), empty = ph({0});
  CHECK_THROWS_WITH(ops::FusedBatchNorm(root, ph({4, 4, 3}), c3, c3, c3, c3),
                    Catch::Contains("x must be 4-dimensional, got [4,4,3]"));
  CHECK_THROWS_WITH(ops::FusedBatchNorm(root, x, c4, c3, c3, c3),
                    Catch::Contains("scale must have the same number of elements as the "
                                    "channels of x, got 4 and 3"));
  CHECK_THROWS_WITH(ops::FusedBatchNorm(root, x, c3, c3, c3, c3, 1e-3f, true, "NCHW"),
                    Catch::Contains("scale must have the same number of elements as the "
                                    "channels of x, got 3 and 4"));
  CHECK_THROWS_WITH(ops::FusedBatchNorm(root, x, c3, ph({3, 1}), c3, c3),
                    Catch::Contains("offset must be 1-dimensional, got [3,1]"));
  CHECK_THROWS_WITH(ops::FusedBatchNorm(root, x, c3, c3, empty, c3, 1e-3f, false),
                    Catch::Contains("When is_training=false, mean must have the same number of "
                                    "elements as the channels of x, got 0 and 3"));
  CHECK_THROWS_WITH(ops::FusedBatchNorm(root, x, c3, c3, c3, empty, 1e-3f, true, "NHWC", 0.5f),
                    Catch::Contains("When exponential_avg_factor != 1, variance must have"));
  CHECK_THROWS_WITH(ops::FusedBatchNorm(root, x, c3, c3, c3, c3, 1e-3f, true, "HWCN"),
                    Catch::Contains("Invalid data_format \"HWCN\""));
  CHECK_THROWS_WITH(ops::FusedBatchNormGrad(root, ph({2, 4, 4, 4}), x, c3, c3, c3),
                    Catch::Contains("y_backprop and x must have the same shape, got [2,4,4,4] "
                                    "and [2,4,4,3]"));
  CHECK_THROWS_WITH(ops::FusedBatchNormGrad(root, x, x, c3, c3, c4),
                    Catch::Contains("reserve_space_2 must have the same number of elements"));
  // Run-time shapes take the same checks.
  Output u = ops::Placeholder(root, DT_FLOAT, Shape::Unknown());
  auto bn = ops::FusedBatchNorm(root, u, c3, c3, c3, c3);
  Session sess(g);
  Tensor three(DT_FLOAT, {3});
  CHECK_THROWS_WITH(sess.Run({{u, Tensor(DT_FLOAT, {1, 2, 2, 5})}, {c3, three}}, {bn.y}),
                    Catch::Contains("scale must have the same number of elements as the "
                                    "channels of x, got 3 and 5"));
}

}  // namespace
}  // namespace pf::batch_norm_ops_test
