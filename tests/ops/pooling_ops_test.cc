// MaxPool, AvgPool and their gradient ops against naive window loops written here (NHWC, with
// NCHW tensors transposed by hand), finite-difference gradient checks in float64, and errors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <thread>

#include "placeflow/ops/nn/pooling_onednn.h"
#include "tests/testing/test_util.h"

namespace pf::pooling_ops_test {
namespace {

using testing::FromDoubles;
using testing::MaxAbsDiff;
using testing::RunOne;

struct PoolCase {
  Shape nhwc;  // input, NHWC
  int kh, kw, sh, sw;
  const char* padding;
};

const std::vector<PoolCase>& Cases() {
  static const std::vector<PoolCase> cases = {
      {{2, 7, 9, 3}, 3, 3, 2, 2, "SAME"},   {{2, 7, 9, 3}, 3, 3, 2, 2, "VALID"},
      {{1, 6, 6, 4}, 2, 2, 2, 2, "VALID"},  {{3, 5, 8, 2}, 2, 3, 1, 2, "SAME"},
      {{3, 5, 8, 2}, 2, 3, 1, 2, "VALID"},  {{2, 9, 7, 5}, 4, 4, 3, 3, "SAME"},
      {{2, 4, 5, 3}, 3, 1, 3, 1, "SAME"},   {{1, 3, 3, 1}, 1, 1, 1, 1, "VALID"},
      {{4, 11, 10, 16}, 3, 3, 2, 2, "SAME"}};
  return cases;
}

// One spatial dim of the reference: output size and padding before, by TensorFlow's rules.
void RefDim(int64_t in, int k, int s, bool same, int64_t* out, int64_t* pad) {
  if (same) {
    *out = (in + s - 1) / s;
    *pad = std::max<int64_t>((*out - 1) * s + k - in, 0) / 2;
  } else {
    *out = in >= k ? (in - k) / s + 1 : 0;
    *pad = 0;
  }
}

// Value at NHWC index of a 4-D NHWC double vector.
struct Img {
  int64_t n, h, w, c;
  int64_t at(int64_t a, int64_t b, int64_t d, int64_t e) const {
    return ((a * h + b) * w + d) * c + e;
  }
};

enum class Ref { kMax, kAvg, kMaxGrad, kAvgGrad };

// Naive pooling in NHWC: kMax/kAvg return the output; the grad kinds scatter dy (an output-
// shaped vector) back to the input.
std::vector<double> NaivePool(const PoolCase& pc, const std::vector<double>& x,
                              const std::vector<double>& dy, Ref kind, Shape* out_shape) {
  const bool same = std::string(pc.padding) == "SAME";
  int64_t oh, ow, ph, pw;
  RefDim(pc.nhwc.dim(1), pc.kh, pc.sh, same, &oh, &ph);
  RefDim(pc.nhwc.dim(2), pc.kw, pc.sw, same, &ow, &pw);
  const Img in{pc.nhwc.dim(0), pc.nhwc.dim(1), pc.nhwc.dim(2), pc.nhwc.dim(3)};
  const Img out{in.n, oh, ow, in.c};
  *out_shape = Shape{in.n, oh, ow, in.c};
  const bool grad = kind == Ref::kMaxGrad || kind == Ref::kAvgGrad;
  std::vector<double> result(grad ? in.n * in.h * in.w * in.c : in.n * oh * ow * in.c, 0.0);
  for (int64_t n = 0; n < in.n; ++n) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        for (int64_t c = 0; c < in.c; ++c) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t arg = -1, count = 0;
          std::vector<int64_t> cells;
          for (int a = 0; a < pc.kh; ++a) {
            for (int b = 0; b < pc.kw; ++b) {
              const int64_t h = i * pc.sh - ph + a, w = j * pc.sw - pw + b;
              if (h < 0 || h >= in.h || w < 0 || w >= in.w) continue;
              const int64_t idx = in.at(n, h, w, c);
              cells.push_back(idx);
              ++count;
              sum += x.empty() ? 0 : x[idx];
              if (!x.empty() && x[idx] > best) {
                best = x[idx];
                arg = idx;
              }
            }
          }
          const int64_t o = out.at(n, i, j, c);
          switch (kind) {
            case Ref::kMax:
              result[o] = best;
              break;
            case Ref::kAvg:
              result[o] = sum / count;
              break;
            case Ref::kMaxGrad:
              result[arg] += dy[o];
              break;
            case Ref::kAvgGrad:
              for (int64_t idx : cells) result[idx] += dy[o] / count;
              break;
          }
        }
      }
    }
  }
  return result;
}

// NHWC <-> NCHW by hand.
std::vector<double> ToNchw(const std::vector<double>& v, const Shape& nhwc) {
  const Img s{nhwc.dim(0), nhwc.dim(1), nhwc.dim(2), nhwc.dim(3)};
  std::vector<double> out(v.size());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t h = 0; h < s.h; ++h)
      for (int64_t w = 0; w < s.w; ++w)
        for (int64_t c = 0; c < s.c; ++c)
          out[((n * s.c + c) * s.h + h) * s.w + w] = v[s.at(n, h, w, c)];
  return out;
}
Shape NchwShape(const Shape& nhwc) { return {nhwc.dim(0), nhwc.dim(3), nhwc.dim(1), nhwc.dim(2)}; }

std::vector<double> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// Distinct values (a shuffled ramp): no ties, so max pooling is differentiable everywhere.
std::vector<double> Distinct(int64_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = -1 + 2.0 * i / n;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

// The NHWC shape a case pools to (the naive loop's own output shape).
Shape PooledShape(const PoolCase& pc) {
  Shape out;
  NaivePool(pc, Random(pc.nhwc.num_elements(), 1), {}, Ref::kMax, &out);
  return out;
}

std::vector<int32_t> Window(const PoolCase& pc, bool nchw, bool strides) {
  const int a = strides ? pc.sh : pc.kh, b = strides ? pc.sw : pc.kw;
  return nchw ? std::vector<int32_t>{1, 1, a, b} : std::vector<int32_t>{1, a, b, 1};
}

// The four pooling ops of one case on one graph, and the naive loops' answers in its layout.
struct PoolRun {
  PoolRun(const PoolCase& pc, DType t, bool nchw, const std::vector<double>& x, uint32_t dy_seed)
      : pc(pc), t(t), nchw(nchw) {
    want_max = NaivePool(pc, x, {}, Ref::kMax, &out_nhwc);
    want_avg = NaivePool(pc, x, {}, Ref::kAvg, &out_nhwc);
    const std::vector<double> dy = Random(out_nhwc.num_elements(), dy_seed);
    want_dmax = NaivePool(pc, x, dy, Ref::kMaxGrad, &out_nhwc);
    want_davg = NaivePool(pc, x, dy, Ref::kAvgGrad, &out_nhwc);
    const std::string df = nchw ? "NCHW" : "NHWC";
    Scope root = Scope::Root(&g);
    Output in = ops::Const(root, Layout(x, pc.nhwc));
    Output grad = ops::Const(root, Layout(dy, out_nhwc));
    const auto k = Window(pc, nchw, false), s = Window(pc, nchw, true);
    Output mx = ops::MaxPool(root, in, k, s, pc.padding, df);
    Output av = ops::AvgPool(root, in, k, s, pc.padding, df);
    Output dmx = ops::MaxPoolGrad(root, in, mx, grad, k, s, pc.padding, df);
    Output dav = ops::AvgPoolGrad(root, ops::Shape(root, in), grad, k, s, pc.padding, df);
    outputs = {mx, av, dmx, dav};
  }
  Tensor Layout(const std::vector<double>& v, const Shape& s) const {
    return nchw ? FromDoubles(t, NchwShape(s), ToNchw(v, s)) : FromDoubles(t, s, v);
  }
  // Each output's largest difference from its naive answer: max, avg, dmax, davg.
  std::vector<double> Errors(const std::vector<Tensor>& got) const {
    return {MaxAbsDiff(got[0], Layout(want_max, out_nhwc)),
            MaxAbsDiff(got[1], Layout(want_avg, out_nhwc)),
            MaxAbsDiff(got[2], Layout(want_dmax, pc.nhwc)),
            MaxAbsDiff(got[3], Layout(want_davg, pc.nhwc))};
  }
  PoolCase pc;
  DType t;
  bool nchw;
  Shape out_nhwc;
  std::vector<double> want_max, want_avg, want_dmax, want_davg;
  Graph g;
  std::vector<Output> outputs;
};

TEST_CASE("MaxPool, AvgPool and their gradient ops match naive loops", "[ops][nn][pool]") {
  uint32_t seed = 1;
  for (const PoolCase& pc : Cases()) {
    for (DType t : {DT_FLOAT, DT_DOUBLE}) {
      for (bool nchw : {false, true}) {
        INFO(pc.nhwc.ToString() << " k " << pc.kh << "x" << pc.kw << " s " << pc.sh << "x" << pc.sw
                                << " " << pc.padding << " " << DTypeName(t)
                                << (nchw ? " NCHW" : " NHWC"));
        const std::vector<double> x = Random(pc.nhwc.num_elements(), seed++);
        PoolRun r(pc, t, nchw, x, seed++);
        const Shape want_out = nchw ? NchwShape(r.out_nhwc) : r.out_nhwc;
        CHECK(r.outputs[0].shape() == want_out);
        Session sess(r.g);
        const std::vector<double> err = r.Errors(sess.Run({}, r.outputs));
        const double tol = t == DT_FLOAT ? 1e-5 : 1e-12;
        for (double e : err) CHECK(e <= tol);
      }
    }
  }
}

// Values on a grid of 0.25 in [-1, 1]: most windows hold ties, so MaxPoolGrad's choice of the
// first maximum is checked on every image of every shard.
std::vector<double> Quantized(int64_t n, uint32_t seed) {
  std::vector<double> v = Random(n, seed);
  for (double& x : v) x = std::round(x * 4) / 4;
  return v;
}

TEST_CASE("float32 pooling split into uneven batch shards matches naive loops", "[ops][nn][pool]") {
  // Batches of 5, 7 and 9 over 4 threads: shards of two sizes (one oneDNN primitive per shard,
  // pooling_onednn.cc); the big ones split into several shards, the small one may run as one.
  const std::vector<PoolCase> cases = {{{7, 28, 28, 32}, 3, 3, 2, 2, "SAME"},
                                       {{7, 24, 24, 16}, 2, 2, 2, 2, "VALID"},
                                       {{9, 13, 11, 5}, 2, 2, 2, 2, "VALID"},
                                       {{5, 15, 17, 24}, 3, 2, 1, 3, "SAME"},
                                       {{5, 15, 17, 24}, 3, 2, 1, 3, "VALID"}};
  uint32_t seed = 100;
  for (const PoolCase& pc : cases) {
    for (bool nchw : {false, true}) {
      INFO(pc.nhwc.ToString() << " k " << pc.kh << "x" << pc.kw << " s " << pc.sh << "x" << pc.sw
                              << " " << pc.padding << (nchw ? " NCHW" : " NHWC"));
      const std::vector<double> x = Quantized(pc.nhwc.num_elements(), seed++);
      PoolRun r(pc, DT_FLOAT, nchw, x, seed++);
      SessionOptions opts;
      opts.num_threads = 4;
      Session sess(r.g, opts);
      for (int run = 0; run < 2; ++run) {  // the second run reuses the cached primitives
        const std::vector<double> err = r.Errors(sess.Run({}, r.outputs));
        CHECK(err[0] == 0);
        CHECK(err[1] <= 1e-6);
        CHECK(err[2] <= 1e-5);
        CHECK(err[3] <= 1e-6);
      }
    }
  }
}

// The tests of the kept workspace name their MaxPool uniquely: the request to keep one is keyed
// by the node's name, process-wide, and the counts below assume a MaxPool nobody asked before.
TEST_CASE("MaxPoolGrad takes its MaxPool's workspace only for the very tensors it pooled",
          "[ops][nn][pool]") {
  // A training-like graph: x fed each step, y = MaxPool(x), dx = MaxPoolGrad(x, y, dy); beside it
  // a MaxPoolGrad whose orig_input is another tensor of x's shape (the workspace of MaxPool(x)
  // would be wrong for it) and a second MaxPoolGrad of the same pair (the workspace goes once).
  const PoolCase pc{{9, 12, 10, 16}, 3, 3, 2, 2, "SAME"};
  const Shape out_nhwc = PooledShape(pc);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, pc.nhwc);
  Output other = ops::Placeholder(root.WithOpName("other"), DT_FLOAT, pc.nhwc);
  Output dy = ops::Placeholder(root.WithOpName("dy"), DT_FLOAT, out_nhwc);
  const std::vector<int32_t> k = {1, 3, 3, 1}, st = {1, 2, 2, 1};
  Output y = ops::MaxPool(root.WithOpName("kept_pool"), x, k, st, "SAME");
  Output dx = ops::MaxPoolGrad(root.WithOpName("dx"), x, y, dy, k, st, "SAME");
  Output dx_again = ops::MaxPoolGrad(root.WithOpName("dx_again"), x, y, dy, k, st, "SAME");
  Output dother = ops::MaxPoolGrad(root.WithOpName("dother"), other, y, dy, k, st, "SAME");
  SessionOptions opts;
  opts.num_threads = 4;
  Session sess(g, opts);
  const MaxPoolWorkspaceCounts before = GetMaxPoolWorkspaceCounts();
  constexpr int kSteps = 4;
  for (int step = 0; step < kSteps; ++step) {
    INFO("step " << step);
    const std::vector<double> xv = Quantized(pc.nhwc.num_elements(), 10 + step);
    const std::vector<double> ov = Quantized(pc.nhwc.num_elements(), 20 + step);
    const std::vector<double> dyv = Random(out_nhwc.num_elements(), 30 + step);
    std::vector<Tensor> got = sess.Run({{x, FromDoubles(DT_FLOAT, pc.nhwc, xv)},
                                        {other, FromDoubles(DT_FLOAT, pc.nhwc, ov)},
                                        {dy, FromDoubles(DT_FLOAT, out_nhwc, dyv)}},
                                       {y, dx, dx_again, dother});
    Shape unused;
    CHECK(MaxAbsDiff(got[0], FromDoubles(DT_FLOAT, out_nhwc,
                                         NaivePool(pc, xv, {}, Ref::kMax, &unused))) == 0);
    const Tensor want_dx =
        FromDoubles(DT_FLOAT, pc.nhwc, NaivePool(pc, xv, dyv, Ref::kMaxGrad, &unused));
    CHECK(MaxAbsDiff(got[1], want_dx) <= 1e-5);
    CHECK(MaxAbsDiff(got[2], want_dx) <= 1e-5);
    // TensorFlow's MaxPoolGrad takes each window's argmax from orig_input.
    CHECK(MaxAbsDiff(got[3], FromDoubles(DT_FLOAT, pc.nhwc,
                                         NaivePool(pc, ov, dyv, Ref::kMaxGrad, &unused))) <= 1e-5);
  }
  // The first step recomputes for all three gradients; from the second on MaxPool keeps one
  // workspace per step, which exactly one of dx and dx_again takes.
  const MaxPoolWorkspaceCounts after = GetMaxPoolWorkspaceCounts();
  CHECK(after.kept - before.kept == kSteps - 1);
  CHECK(after.taken - before.taken == kSteps - 1);
  CHECK(after.recomputed - before.recomputed == 3 + 2 * (kSteps - 1));
}

TEST_CASE("MaxPoolGrad of another window never takes the MaxPool's workspace", "[ops][nn][pool]") {
  // 3x3 and 4x4 windows at stride 2, SAME, give the same output shape: the gradient's link
  // (orig_output of MaxPool "wide_pool", orig_input its input) matches, its geometry does not.
  const PoolCase pool3{{5, 12, 10, 16}, 3, 3, 2, 2, "SAME"}, wide{pool3.nhwc, 4, 4, 2, 2, "SAME"};
  const Shape out_nhwc = PooledShape(pool3);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, pool3.nhwc);
  Output dy = ops::Placeholder(root.WithOpName("dy"), DT_FLOAT, out_nhwc);
  const std::vector<int32_t> st = {1, 2, 2, 1};
  Output y = ops::MaxPool(root.WithOpName("wide_pool"), x, {1, 3, 3, 1}, st, "SAME");
  Output dwide = ops::MaxPoolGrad(root.WithOpName("dwide"), x, y, dy, {1, 4, 4, 1}, st, "SAME");
  Session sess(g);
  const MaxPoolWorkspaceCounts before = GetMaxPoolWorkspaceCounts();
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    const std::vector<double> xv = Quantized(pool3.nhwc.num_elements(), 40 + step);
    const std::vector<double> dyv = Random(out_nhwc.num_elements(), 50 + step);
    Tensor got = sess.Run(
        {{x, FromDoubles(DT_FLOAT, pool3.nhwc, xv)}, {dy, FromDoubles(DT_FLOAT, out_nhwc, dyv)}},
        {dwide})[0];
    Shape unused;
    CHECK(MaxAbsDiff(got, FromDoubles(DT_FLOAT, pool3.nhwc,
                                      NaivePool(wide, xv, dyv, Ref::kMaxGrad, &unused))) <= 1e-5);
  }
  const MaxPoolWorkspaceCounts after = GetMaxPoolWorkspaceCounts();
  CHECK(after.kept - before.kept == 2);  // asked for after the first step, never taken
  CHECK(after.taken == before.taken);
}

TEST_CASE("Concurrent training steps each get their own MaxPool workspace", "[ops][nn][pool]") {
  const PoolCase pc{{6, 14, 14, 8}, 2, 2, 2, 2, "VALID"};
  const Shape out_nhwc = PooledShape(pc);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, pc.nhwc);
  Output dy = ops::Placeholder(root.WithOpName("dy"), DT_FLOAT, out_nhwc);
  const std::vector<int32_t> k = {1, 2, 2, 1};
  Output y = ops::MaxPool(root.WithOpName("concurrent_pool"), x, k, k, "VALID");
  Output dx = ops::MaxPoolGrad(root.WithOpName("dx"), x, y, dy, k, k, "VALID");
  SessionOptions opts;
  opts.num_threads = 4;
  Session sess(g, opts);
  constexpr int kThreads = 3, kSteps = 20;
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < kSteps; ++step) {
        const uint32_t seed = 1000 + t * kSteps + step;
        const std::vector<double> xv = Quantized(pc.nhwc.num_elements(), seed);
        const std::vector<double> dyv = Random(out_nhwc.num_elements(), seed);
        Tensor got = sess.Run(
            {{x, FromDoubles(DT_FLOAT, pc.nhwc, xv)}, {dy, FromDoubles(DT_FLOAT, out_nhwc, dyv)}},
            {dx})[0];
        Shape unused;
        const Tensor want =
            FromDoubles(DT_FLOAT, pc.nhwc, NaivePool(pc, xv, dyv, Ref::kMaxGrad, &unused));
        if (MaxAbsDiff(got, want) > 1e-5) ++wrong[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(wrong[t] == 0);
}

TEST_CASE("MaxPoolGrad sends each gradient to the first maximum of its window", "[ops][nn][pool]") {
  // A 3x3 image of ties: [[1,1,0],[1,1,0],[0,0,0]], 2x2 windows, stride 1, VALID: every window
  // holding several 1s gives its gradient to the first 1 in row-major order.
  const std::vector<double> x = {1, 1, 0, 1, 1, 0, 0, 0, 0};
  const std::vector<double> dy = {1, 10, 100, 1000};  // windows (0,0) (0,1) (1,0) (1,1)
  // (0,0) -> x(0,0); (0,1) -> x(0,1); (1,0) -> x(1,0); (1,1) -> x(1,1).
  const std::vector<double> want = {1, 10, 0, 100, 1000, 0, 0, 0, 0};
  // All equal: every window picks its top-left cell.
  const std::vector<double> flat(9, 0.5);
  const std::vector<double> want_flat = {1, 10, 0, 100, 1000, 0, 0, 0, 0};
  // [[0,2,2],[2,2,0],[0,0,0]]: window (0,0) -> (0,1); (0,1) -> (0,1); (1,0) -> (1,0);
  // (1,1) -> (1,1).
  const std::vector<double> x2 = {0, 2, 2, 2, 2, 0, 0, 0, 0};
  const std::vector<double> want2 = {0, 11, 0, 100, 1000, 0, 0, 0, 0};
  for (DType t : {DT_FLOAT, DT_DOUBLE}) {
    for (auto [in, expected] : {std::pair{x, want}, {flat, want_flat}, {x2, want2}}) {
      INFO(DTypeName(t));
      Graph g;
      Scope root = Scope::Root(&g);
      Output xi = ops::Const(root, FromDoubles(t, {1, 3, 3, 1}, in));
      Output y = ops::MaxPool(root, xi, {1, 2, 2, 1}, {1, 1, 1, 1}, "VALID");
      Output d = ops::MaxPoolGrad(root, xi, y, ops::Const(root, FromDoubles(t, {1, 2, 2, 1}, dy)),
                                  {1, 2, 2, 1}, {1, 1, 1, 1}, "VALID");
      CHECK(MaxAbsDiff(RunOne(g, d), FromDoubles(t, {1, 3, 3, 1}, expected)) == 0);
    }
  }
}

TEST_CASE("GlobalAvgPool is the mean over H and W", "[ops][nn][pool]") {
  const std::vector<double> x = Random(2 * 3 * 4 * 5, 9);
  for (bool nchw : {false, true}) {
    Graph g;
    Scope root = Scope::Root(&g);
    const Shape s{2, 3, 4, 5};
    Tensor xt =
        nchw ? FromDoubles(DT_FLOAT, NchwShape(s), ToNchw(x, s)) : FromDoubles(DT_FLOAT, s, x);
    Output y = ops::GlobalAvgPool(root, ops::Const(root, xt), nchw ? "NCHW" : "NHWC");
    REQUIRE(y.shape() == Shape{2, 5});
    std::vector<double> want(10, 0.0);
    for (int64_t i = 0; i < s.num_elements(); ++i) want[(i / 60) * 5 + i % 5] += x[i] / 12;
    CHECK(MaxAbsDiff(RunOne(g, y), FromDoubles(DT_FLOAT, {2, 5}, want)) <= 1e-6);
  }
}

TEST_CASE("Gradient check: MaxPool, AvgPool, AvgPoolGrad (float64)", "[ops][nn][pool][gradients]") {
  const std::vector<PoolCase> cases = {{{2, 5, 6, 3}, 3, 3, 2, 2, "SAME"},
                                       {{2, 5, 6, 3}, 2, 3, 1, 2, "VALID"},
                                       {{1, 4, 4, 2}, 2, 2, 2, 2, "SAME"}};
  for (const PoolCase& pc : cases) {
    for (bool nchw : {false, true}) {
      INFO(pc.nhwc.ToString() << " " << pc.padding << (nchw ? " NCHW" : " NHWC"));
      const std::string df = nchw ? "NCHW" : "NHWC";
      const Shape xs = nchw ? NchwShape(pc.nhwc) : pc.nhwc;
      const auto k = Window(pc, nchw, false), s = Window(pc, nchw, true);
      Tensor x0 = FromDoubles(DT_DOUBLE, xs, Distinct(xs.num_elements(), 5));
      for (bool max : {true, false}) {
        INFO((max ? "MaxPool" : "AvgPool"));
        Graph g;
        Scope root = Scope::Root(&g);
        Output x = ops::Placeholder(root.WithOpName("x"), DT_DOUBLE, xs);
        Output y = max ? ops::MaxPool(root, x, k, s, pc.padding, df)
                       : ops::AvgPool(root, x, k, s, pc.padding, df);
        CHECK(ComputeGradientError(root, x, xs, y, y.shape(), &x0) < 1e-6);
      }
      // AvgPoolGrad is linear in grad; its gradient is AvgPool.
      Graph g;
      Scope root = Scope::Root(&g);
      Output probe = ops::AvgPool(root, ops::Const(root, x0), k, s, pc.padding, df);
      const Shape ys = probe.shape();
      Output dy = ops::Placeholder(root.WithOpName("dy"), DT_DOUBLE, ys);
      Output dx = ops::AvgPoolGrad(
          root,
          ops::ConstInt(root, {static_cast<int32_t>(xs.dim(0)), static_cast<int32_t>(xs.dim(1)),
                               static_cast<int32_t>(xs.dim(2)), static_cast<int32_t>(xs.dim(3))}),
          dy, k, s, pc.padding, df);
      CHECK(ComputeGradientError(root, dy, ys, dx, xs) < 1e-6);
    }
  }
}

TEST_CASE("MaxPoolGrad has no gradient of its own", "[ops][nn][pool][gradients]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_DOUBLE, {1, 4, 4, 1});
  Output y = ops::MaxPool(root, x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  Output dx = Gradients(root, {ops::Sum(root, y)}, {x})[0];
  CHECK_THROWS_WITH(
      Gradients(root, {ops::Sum(root, dx)}, {x}),
      Catch::Contains("No gradient defined for op") && Catch::Contains("MaxPoolGrad"));
}

TEST_CASE("Pooling errors name the problem and the shapes", "[ops][nn][pool][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x4 = ops::Placeholder(root, DT_FLOAT, {2, 6, 6, 3});
  Output x3 = ops::Placeholder(root, DT_FLOAT, {6, 6, 3});
  const std::vector<int32_t> k = {1, 2, 2, 1}, s = {1, 2, 2, 1};
  CHECK_THROWS_WITH(ops::MaxPool(root, x3, k, s, "SAME"),
                    Catch::Contains("input must be 4-dimensional, got [6,6,3]"));
  CHECK_THROWS_WITH(ops::AvgPool(root, x4, {2, 2, 2, 1}, s, "SAME"),
                    Catch::Contains("Pooling is not yet supported on the batch dimension"));
  CHECK_THROWS_WITH(ops::MaxPool(root, x4, {1, 2, 2, 2}, s, "SAME"),
                    Catch::Contains("Pooling over the depth dimension is not supported"));
  CHECK_THROWS_WITH(ops::MaxPool(root, x4, k, s, "FULL"),
                    Catch::Contains("invalid padding \"FULL\": expected \"SAME\" or \"VALID\""));
  CHECK_THROWS_WITH(ops::MaxPool(root, x4, k, s, "SAME", "NWHC"),
                    Catch::Contains("invalid data_format \"NWHC\""));
  CHECK_THROWS_WITH(ops::MaxPool(root, x4, {1, 2, 2}, s, "SAME"),
                    Catch::Contains("ksize field must specify 4 dimensions, got [1,2,2]"));
  CHECK_THROWS_WITH(ops::AvgPool(root, x4, {1, 8, 2, 1}, {1, 1, 1, 1}, "VALID"),
                    Catch::Contains("Computed output size would be negative: -1 [input_size: 6, "
                                    "effective_filter_size: 8, stride: 1]"));
  CHECK_THROWS_WITH(ops::AvgPool(root, x4, k, {1, 0, 2, 1}, "VALID"),
                    Catch::Contains("ksize and strides must be positive"));
  Output y = ops::MaxPool(root, x4, k, s, "SAME");  // [2,3,3,3]
  CHECK_THROWS_WITH(
      ops::MaxPoolGrad(root, x4, y, ops::Placeholder(root, DT_FLOAT, {2, 3, 3, 4}), k, s, "SAME"),
      Catch::Contains("grad must have the pooling output's shape [2,3,3,3], got [2,3,3,4]"));
  CHECK_THROWS_WITH(ops::AvgPoolGrad(root, ops::ConstInt(root, {2, 6, 6}), y, k, s, "SAME"),
                    Catch::Contains("orig_input_shape must be 1-dimensional with 4 elements"));
}

TEST_CASE("Pooling checks run-time shapes too", "[ops][nn][pool][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, Shape::Unknown());
  Output y = ops::MaxPool(root, x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  Session sess(g);
  CHECK_THROWS_WITH(sess.Run({{x, Tensor(DT_FLOAT, {4, 4, 1})}}, {y}),
                    Catch::Contains("input must be 4-dimensional, got [4,4,1]"));
}

// Hidden: LeNet's two max pools (2x2, stride 2, SAME, batch 128) forward and gradient, as targets
// (no fetch copies), median of 30 runs each. Prints, asserts nothing: `pf_tests "[pool-bench]"`
// (PF_POOL_OMP=1: one primitive over the batch on OpenMP threads instead of shards).
TEST_CASE("Max pooling timings", "[.][pool-bench]") {
  for (const Shape& xs : {Shape{128, 28, 28, 32}, Shape{128, 14, 14, 64}}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Const(root, FromDoubles(DT_FLOAT, xs, Random(xs.num_elements(), 7)));
    Output y = ops::MaxPool(root, x, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
    Output dy =
        ops::Const(root, FromDoubles(DT_FLOAT, y.shape(), Random(y.shape().num_elements(), 8)));
    Output dx = ops::MaxPoolGrad(root, x, y, dy, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
    Session sess(g);
    for (auto [name, target] :
         {std::pair<const char*, Output>{"MaxPool", y}, {"MaxPoolGrad", dx}}) {
      const std::vector<Operation> targets = {Operation(target.node)};
      for (int i = 0; i < 3; ++i) sess.Run({}, {}, targets);
      std::vector<double> ms;
      for (int i = 0; i < 30; ++i) {
        const auto start = std::chrono::steady_clock::now();
        sess.Run({}, {}, targets);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
      }
      std::sort(ms.begin(), ms.end());
      std::printf("pool_bench %-12s %-16s median %8.3f ms  min %8.3f ms (threads %d, omp %s)\n",
                  name, xs.ToString().c_str(), ms[ms.size() / 2], ms[0],
                  ThreadPool::Default()->num_threads(),
                  std::getenv("PF_POOL_OMP") ? std::getenv("PF_POOL_OMP") : "0");
    }
  }
}

}  // namespace
}  // namespace pf::pooling_ops_test
