// Batch norm with its activation fused in: the remapper's _FusedBatchNormEx (FusedBatchNorm ->
// Relu | Relu6) and _FusedBatchNormGradEx (ReluGrad | Relu6Grad -> FusedBatchNormGrad, behind a
// fused forward pass) give the bits of the ops they replace, are made only where nothing else
// reads what they absorb, and reject what they cannot run. Also the NHWC moments over many blocks
// against float64.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "placeflow/ops/simd/cpu_isa.h"
#include "tests/testing/test_util.h"

namespace pf::batch_norm_fusion_test {
namespace {

using testing::RandomTensor;
using testing::Remapping;
using testing::TracedOps;

// PF_BATCHNORM_ONEDNN=1: the plain FusedBatchNorm runs oneDNN (the fused ops never do).
bool OneDnnBatchNorm() {
  const char* v = std::getenv("PF_BATCHNORM_ONEDNN");
  return v != nullptr && v[0] == '1';
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.num_elements() * sizeof(float)) == 0;
}

// x -> FusedBatchNorm -> activation ("Relu" or "Relu6") -> y, and the gradients of
// sum(y * w) with respect to x, scale and offset.
struct Block {
  Graph g;
  Output x, pre, y, dx, dscale, doffset;
  ops::FusedBatchNormOutputs bn;
  Block(const std::string& activation, bool training, const Shape& s = {2, 5, 6, 7}) {
    Scope root = Scope::Root(&g);
    const int64_t c = s.dim(3);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, s);
    Output scale = ops::Const(root.WithOpName("scale"), RandomTensor({c}, 11, 2.f, 6.f));
    Output offset = ops::Const(root.WithOpName("offset"), RandomTensor({c}, 12, -1.f, 4.f));
    Output mean = ops::Const(root.WithOpName("mean"), RandomTensor({c}, 13, -1.f, 1.f));
    Output var = ops::Const(root.WithOpName("var"), RandomTensor({c}, 14, 0.5f, 2.f));
    bn = ops::FusedBatchNorm(root.WithOpName("bn"), x, scale, offset, mean, var, 1e-3f, training);
    pre = bn.y;
    y = activation == "Relu" ? ops::Relu(root.WithOpName("act"), pre)
                             : ops::Relu6(root.WithOpName("act"), pre);
    Output w = ops::Const(root.WithOpName("w"), RandomTensor(s, 15));
    auto grads = Gradients(root, {ops::Sum(root, ops::Mul(root, y, w))}, {x, scale, offset});
    dx = grads[0];
    dscale = grads[1];
    doffset = grads[2];
  }
  FeedDict Feed() const { return {{x, RandomTensor(x.shape(), 16, -3.f, 3.f)}}; }
};

TEST_CASE("Batch norm and Relu6 (and Relu) run fused, forward and backward, with the same bits",
          "[remapper][ops][nn][batchnorm]") {
  for (const char* activation : {"Relu6", "Relu"}) {
    const char* activation_grad = activation == std::string("Relu") ? "ReluGrad" : "Relu6Grad";
    for (bool training : {true, false}) {
      INFO(activation << " training " << training);
      Block b(activation, training);
      Session on(b.g), off(b.g, Remapping(false));
      const std::vector<Output> fetches = {b.y, b.dx, b.dscale, b.doffset};
      auto ops_on = TracedOps(on, b.Feed(), fetches);
      CHECK(ops_on.at("act") == "_FusedBatchNormEx");
      CHECK(ops_on.count("bn") == 0);
      int fused_grads = 0;
      for (const auto& [node, op] : ops_on) {
        CHECK(op != activation_grad);
        CHECK(op != "FusedBatchNormGrad");
        fused_grads += op == "_FusedBatchNormGradEx";
      }
      CHECK(fused_grads == 1);
      auto ops_off = TracedOps(off, b.Feed(), fetches);
      CHECK(ops_off.at("bn") == "FusedBatchNorm");
      CHECK(ops_off.at("act") == activation);
      const std::vector<Tensor> a = on.Run(b.Feed(), fetches), e = off.Run(b.Feed(), fetches);
      for (size_t i = 0; i < a.size(); ++i) {
        INFO("fetch " << i);
        if (!OneDnnBatchNorm()) {
          CHECK(SameBits(a[i], e[i]));
        } else {
          // The unfused FusedBatchNorm runs oneDNN's primitive (ctest's batchnorm_onednn): the
          // same maths, rounded differently.
          double scale = 1;
          for (int64_t j = 0; j < e[i].num_elements(); ++j)
            scale = std::max(scale, double{std::abs(e[i].data<float>()[j])});
          CHECK(testing::MaxAbsDiff(a[i], e[i]) <= 1e-4 * scale);
        }
      }
      // The data reach both sides of the activation: some outputs clamp at 0 (and at 6), and
      // their gradient is 0 where the mask is.
      const Tensor pre = off.Run(b.Feed(), {b.pre})[0];
      int low = 0, high = 0;
      for (int64_t i = 0; i < pre.num_elements(); ++i) {
        low += pre.data<float>()[i] < 0;
        high += pre.data<float>()[i] > 6;
      }
      CHECK(low > 0);
      if (activation == std::string("Relu6")) CHECK(high > 0);
    }
  }
}

TEST_CASE("The batch norm fusion leaves alone what others read", "[remapper][batchnorm]") {
  SECTION("the batch norm's output fetched") {
    Block b("Relu6", true);
    Session sess(b.g);
    auto ops = TracedOps(sess, b.Feed(), {b.y, b.pre, b.dx});
    CHECK(ops.at("bn") == "FusedBatchNorm");
    CHECK(ops.at("act") == "Relu6");
    // The gradient fuses only behind a fused forward pass (whose pre-activation it recomputes).
    CHECK(ops.at(b.dx.node->name()) == "FusedBatchNormGrad");
  }
  SECTION("a statistics output fetched") {
    Block b("Relu6", true);
    Session sess(b.g);
    auto ops = TracedOps(sess, b.Feed(), {b.y, b.bn.batch_mean});
    CHECK(ops.at("bn") == "FusedBatchNorm");
    CHECK(ops.at("act") == "Relu6");
  }
  SECTION("another op reads the batch norm's output") {
    Block b("Relu6", true);
    Scope root = Scope::Root(&b.g);
    Output other = ops::Neg(root.WithOpName("other"), b.pre);
    Session sess(b.g);
    auto ops = TracedOps(sess, b.Feed(), {b.y, other});
    CHECK(ops.at("bn") == "FusedBatchNorm");
    CHECK(ops.at("act") == "Relu6");
  }
  SECTION("the activation's gradient fetched") {
    Block b("Relu6", true);
    Node* act_grad = b.dx.node->input(0).node;
    REQUIRE(act_grad->op() == "Relu6Grad");
    Session sess(b.g);
    auto ops = TracedOps(sess, b.Feed(), {b.dx, Output(act_grad, 0)});
    CHECK(ops.at(act_grad->name()) == "Relu6Grad");
    CHECK(ops.at(b.dx.node->name()) == "FusedBatchNormGrad");
    CHECK(ops.at("act") == "_FusedBatchNormEx");  // the forward pattern still fuses
  }
}

TEST_CASE("_FusedBatchNormEx rejects an unknown activation and NCHW with one",
          "[ops][nn][batchnorm][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root, DT_FLOAT, {2, 3, 4, 4});
  Output c = ops::Placeholder(root, DT_FLOAT, {3});
  auto fused = [&](const std::string& mode, const std::string& format) {
    return NodeBuilder(root, "_FusedBatchNormEx")
        .Input(x)
        .Input(c)
        .Input(c)
        .Input(c)
        .Input(c)
        .Attr("activation_mode", mode)
        .Attr("data_format", format)
        .Finalize();
  };
  CHECK_THROWS_WITH(fused("Tanh", "NHWC"), Catch::Contains("Unsupported activation_mode \"Tanh\""));
  CHECK_THROWS_WITH(fused("Relu6", "NCHW"),
                    Catch::Contains("activation_mode \"Relu6\" needs data_format \"NHWC\""));
  CHECK_NOTHROW(fused("Identity", "NCHW"));
}

TEST_CASE("FusedBatchNorm's NHWC moments over many blocks match float64, far from zero too",
          "[ops][nn][batchnorm]") {
  // 50,176 rows of 4 channels: 7 blocks of rows, the last one short. Channel k is centred at
  // 1000 * k with a spread of 0.01 * (k + 1): a one-pass sum of squares in float32 would lose
  // every digit of the variance.
  const Shape s{16, 56, 56, 4};
  Tensor x = RandomTensor(s, 21);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t k = i % 4;
    x.data<float>()[i] = 1000.f * k + 0.01f * (k + 1) * x.data<float>()[i];
  }
  Graph g;
  Scope root = Scope::Root(&g);
  Output one = ops::Const(root, RandomTensor({4}, 22, 1.f, 1.f));
  Output zero = ops::Const(root, RandomTensor({4}, 23, 0.f, 0.f));
  Output empty = ops::Const(root, Tensor(DT_FLOAT, {0}));
  auto bn = ops::FusedBatchNorm(root, ops::Const(root, x), one, zero, empty, empty, 0.f);
  Session sess(g);
  auto got = sess.Run({}, {bn.batch_mean, bn.batch_variance});
  const double n = static_cast<double>(s.num_elements() / 4);
  for (int64_t k = 0; k < 4; ++k) {
    double mean = 0, m2 = 0;
    for (int64_t i = k; i < x.num_elements(); i += 4) mean += x.data<float>()[i];
    mean /= n;
    for (int64_t i = k; i < x.num_elements(); i += 4) {
      m2 += (x.data<float>()[i] - mean) * (x.data<float>()[i] - mean);
    }
    INFO("channel " << k);
    CHECK(std::abs(got[0].data<float>()[k] - mean) <= 1e-6 * (1 + std::abs(mean)));
    const double unbiased = m2 / (n - 1);
    CHECK(std::abs(got[1].data<float>()[k] - unbiased) <= 1e-3 * unbiased);
  }
}

TEST_CASE("Batch norm's fused loops give the same bits under every ISA cap",
          "[remapper][batchnorm][simd]") {
  // The loops run in SimdCall's SSE2, AVX2 and AVX-512 copies, vectorised along the channels
  // (40 here: a remainder after every vector width), with no fused multiply-add in any copy.
  const simd::CpuIsa saved = simd::MaxCpuIsa();
  Block b("Relu6", /*training=*/true, {4, 9, 10, 40});
  const std::vector<Output> fetches = {b.y,  b.bn.batch_mean, b.bn.batch_variance,
                                       b.dx, b.dscale,        b.doffset};
  std::vector<std::vector<Tensor>> runs;
  for (simd::CpuIsa cap : {simd::CpuIsa::kSse4, simd::CpuIsa::kAvx2, simd::CpuIsa::kAvx512}) {
    if (cap > simd::HostCpuIsa()) continue;
    simd::SetMaxCpuIsa(cap);
    Session sess(b.g);
    runs.push_back(sess.Run(b.Feed(), fetches));
  }
  simd::SetMaxCpuIsa(saved);
  for (size_t r = 1; r < runs.size(); ++r) {
    for (size_t k = 0; k < fetches.size(); ++k) {
      INFO("cap " << r << ", fetch " << k);
      CHECK(SameBits(runs[r][k], runs[0][k]));
    }
  }
  if (runs.size() < 2) WARN("this CPU has only the SSE4 target: nothing to compare");
}

}  // namespace
}  // namespace pf::batch_norm_fusion_test
