// The Highway kernels (ops/simd/vec_kernels.h): every ISA cap gives the same bits, each function
// is within its stated ulp of the function in double, and PF_MAX_CPU_ISA is honoured.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "placeflow/ops/simd/cpu_isa.h"
#include "placeflow/ops/simd/vec_kernels.h"
#include "tests/testing/test_util.h"

namespace pf::simd::simd_kernels_test {
namespace {

constexpr CpuIsa kCaps[] = {CpuIsa::kSse4, CpuIsa::kAvx2, CpuIsa::kAvx512};

// Restores the cap a test found (PF_MAX_CPU_ISA's, when CI runs the suite under one).
struct CapGuard {
  CpuIsa saved = MaxCpuIsa();
  ~CapGuard() { SetMaxCpuIsa(saved); }
};

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float FromBits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

// Floats of every binade: every 509th bit pattern (both signs), the special values, and the
// neighbourhoods of 0 and 1.
std::vector<float> SweepInputs() {
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 509) x.push_back(FromBits(uint32_t(b)));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.f, -0.f, 1.f, -1.f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(), 88.7228394f, 88.76f, -103.9f, -104.5f})
    x.push_back(v);
  for (float v = -4.f; v <= 4.f; v += 1.f / 1024) x.push_back(v);
  return x;
}

// Distance in representable floats; NaN against NaN is 0, NaN against a number is huge.
int64_t UlpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  auto ordered = [](float v) {
    const int64_t i = static_cast<int32_t>(Bits(v));
    return i < 0 ? INT64_C(0x80000000) - i : i + INT64_C(0x80000000);
  };
  return std::llabs(ordered(a) - ordered(b));
}

struct UnaryCase {
  UnaryFn fn;
  const char* name;
  double (*ref)(double);
  int64_t max_ulp;  // the stated accuracy, docs/simd.md
};

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Relu(double x) { return x > 0 ? x : 0; }
double Neg(double x) { return -x; }
double Square(double x) { return x * x; }
double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Tanh(double x) { return std::tanh(x); }
double Erf(double x) { return std::erf(x); }
double Sqrt(double x) { return std::sqrt(x); }

const UnaryCase kUnary[] = {
    {UnaryFn::kTanh, "tanh", Tanh, 7}, {UnaryFn::kSigmoid, "sigmoid", Sigmoid, 4},
    {UnaryFn::kExp, "exp", Exp, 2},    {UnaryFn::kLog, "log", Log, 2},
    {UnaryFn::kErf, "erf", Erf, 7},    {UnaryFn::kRelu, "relu", Relu, 0},
    {UnaryFn::kNeg, "neg", Neg, 0},    {UnaryFn::kSquare, "square", Square, 0},
    {UnaryFn::kSqrt, "sqrt", Sqrt, 0},
};

std::vector<float> RunUnary(UnaryFn fn, const std::vector<float>& x, CpuIsa cap) {
  SetMaxCpuIsa(cap);
  // One element off the vector alignment, so both loads and the remainder path run.
  std::vector<float> y(x.size() + 1);
  Unary(fn, x.data() + 1, y.data() + 1, static_cast<int64_t>(x.size()) - 1);
  y[1 + x.size() - 1] = 0;
  Unary(fn, x.data(), y.data(), 1);
  y.resize(x.size());
  return y;
}

TEST_CASE("SIMD: each ISA cap dispatches to its own target", "[simd]") {
  CapGuard guard;
  SetMaxCpuIsa(CpuIsa::kSse4);
  CHECK(std::string(DispatchedTargetName()).find("AVX") == std::string::npos);
  if (HostCpuIsa() >= CpuIsa::kAvx2) {
    SetMaxCpuIsa(CpuIsa::kAvx2);
    CHECK(std::string(DispatchedTargetName()) == "AVX2");
  }
  if (HostCpuIsa() >= CpuIsa::kAvx512) {
    SetMaxCpuIsa(CpuIsa::kAvx512);
    CHECK(std::string(DispatchedTargetName()).rfind("AVX3", 0) == 0);
  }
  if (HostCpuIsa() < CpuIsa::kAvx512) WARN("this CPU has no AVX-512: that target is not run");
}

TEST_CASE("SIMD: unary kernels give the same bits under every ISA cap and meet their ulp bound",
          "[simd]") {
  CapGuard guard;
  const std::vector<float> x = SweepInputs();
  for (const UnaryCase& c : kUnary) {
    INFO(c.name);
    const std::vector<float> base = RunUnary(c.fn, x, CpuIsa::kSse4);
    for (CpuIsa cap : kCaps) {
      if (cap > HostCpuIsa()) continue;
      const std::vector<float> y = RunUnary(c.fn, x, cap);
      INFO("cap " << CpuIsaName(cap));
      CHECK(std::memcmp(y.data(), base.data(), y.size() * 4) == 0);
    }
    int64_t worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = static_cast<float>(c.ref(x[i]));
      const int64_t d = UlpDistance(base[i], want);
      if (d > worst) worst = d, worst_x = x[i];
    }
    INFO("worst " << worst << " ulp at x = " << worst_x);
    CHECK(worst <= c.max_ulp);
  }
}

TEST_CASE("SIMD: binary kernels and Axpy match the scalar formula bit for bit", "[simd]") {
  CapGuard guard;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  const int64_t n = 1000 + 3;
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) a[i] = u(rng), b[i] = u(rng);
  b[5] = 0.f, a[6] = b[6];  // a zero divisor and a tie
  struct Case {
    BinaryFn fn;
    float (*f)(float, float);
  };
  const Case cases[] = {
      {BinaryFn::kAdd, [](float p, float q) { return p + q; }},
      {BinaryFn::kSub, [](float p, float q) { return p - q; }},
      {BinaryFn::kMul, [](float p, float q) { return p * q; }},
      {BinaryFn::kDiv, [](float p, float q) { return p / q; }},
      {BinaryFn::kMax, [](float p, float q) { return p > q ? p : q; }},
      {BinaryFn::kMin, [](float p, float q) { return p < q ? p : q; }},
      {BinaryFn::kReluGrad, [](float g, float y) { return y > 0.f ? g : 0.f; }},
      {BinaryFn::kTanhGrad, [](float y, float g) { return g * (1.f - y * y); }},
      {BinaryFn::kSigmoidGrad, [](float y, float g) { return g * y * (1.f - y); }},
      {BinaryFn::kSquaredDiff, [](float p, float q) { return (p - q) * (p - q); }},
  };
  for (CpuIsa cap : kCaps) {
    if (cap > HostCpuIsa()) continue;
    SetMaxCpuIsa(cap);
    INFO("cap " << CpuIsaName(cap));
    std::vector<float> y(n), ys(n), ya(n);
    for (const Case& c : cases) {
      INFO("fn " << static_cast<int>(c.fn));
      Binary(c.fn, a.data(), b.data(), y.data(), n);
      BinaryScalarB(c.fn, a.data(), b[9], ys.data(), n);
      BinaryScalarA(c.fn, a[9], b.data(), ya.data(), n);
      int wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        wrong += Bits(y[i]) != Bits(c.f(a[i], b[i]));
        wrong += Bits(ys[i]) != Bits(c.f(a[i], b[9]));
        wrong += Bits(ya[i]) != Bits(c.f(a[9], b[i]));
      }
      CHECK(wrong == 0);
    }
    std::vector<float> acc = b;
    Axpy(-1.f, a.data(), acc.data(), n);
    int wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += Bits(acc[i]) != Bits(b[i] - a[i]);
    CHECK(wrong == 0);
  }
}

TEST_CASE("SIMD: special values of exp, log, sigmoid, tanh and erf", "[simd]") {
  const float inf = std::numeric_limits<float>::infinity();
  auto at = [](UnaryFn fn, float v) {
    float y;
    Unary(fn, &v, &y, 1);
    return y;
  };
  CHECK(at(UnaryFn::kExp, 0.f) == 1.f);
  CHECK(at(UnaryFn::kExp, inf) == inf);
  CHECK(at(UnaryFn::kExp, -inf) == 0.f);
  CHECK(at(UnaryFn::kExp, 89.f) == inf);
  CHECK(at(UnaryFn::kExp, -88.f) > 0.f);
  CHECK(std::isnan(at(UnaryFn::kExp, std::nanf(""))));
  CHECK(at(UnaryFn::kLog, 1.f) == 0.f);
  CHECK(at(UnaryFn::kLog, 0.f) == -inf);
  CHECK(at(UnaryFn::kLog, -0.f) == -inf);
  CHECK(at(UnaryFn::kLog, inf) == inf);
  CHECK(std::isnan(at(UnaryFn::kLog, -1.f)));
  CHECK(at(UnaryFn::kLog, std::numeric_limits<float>::denorm_min()) ==
        static_cast<float>(std::log(double{std::numeric_limits<float>::denorm_min()})));
  CHECK(at(UnaryFn::kSigmoid, inf) == 1.f);
  CHECK(at(UnaryFn::kSigmoid, -inf) == 0.f);
  CHECK(at(UnaryFn::kSigmoid, 0.f) == 0.5f);
  CHECK(at(UnaryFn::kTanh, -inf) == -1.f);
  CHECK(at(UnaryFn::kTanh, 9.02f) == 1.f);        // tanh rounds to 1 in float from 9.0109
  CHECK(at(UnaryFn::kTanh, 9.f) == 0.99999994f);  // and not before
  CHECK(at(UnaryFn::kErf, 3.93f) == 1.f);         // erf from 3.9192
  CHECK(at(UnaryFn::kErf, -3.91f) == -0.99999994f);
  CHECK(Bits(at(UnaryFn::kTanh, -0.f)) == Bits(-0.f));
  CHECK(at(UnaryFn::kErf, inf) == 1.f);
  CHECK(at(UnaryFn::kErf, -inf) == -1.f);
  CHECK(std::isnan(at(UnaryFn::kErf, std::nanf(""))));
}

// A whole training step under each cap: Tanh, Sigmoid, Exp and Mul (Highway), their gradients,
// L2Loss (SimdCall), AddN and the Adam update (SimdFor, whose multiply-adds must not fuse in the
// AVX-512 copy). Every cap must leave the same bits in the variables and the loss.
TEST_CASE("SIMD: an Adam training step gives the same bits under every ISA cap", "[simd]") {
  CapGuard guard;
  Graph g;
  Scope root = Scope::Root(&g);
  Variable w = GetVariable(root, "w", {1003}, init::RandomUniform(-2, 2, /*seed=*/3));
  Output h = ops::Add(root, ops::Tanh(root, w.value()), ops::Sigmoid(root, w.value()));
  Output loss = ops::Add(root, ops::L2Loss(root, ops::Mul(root, h, ops::Exp(root, w.value()))),
                         ops::L2Loss(root, w.value()));
  train::Adam opt(0.01);
  Operation step = opt.Minimize(root, loss);
  std::vector<std::vector<uint32_t>> runs;
  for (CpuIsa cap : kCaps) {
    if (cap > HostCpuIsa()) continue;
    SetMaxCpuIsa(cap);
    Session sess(g);
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    for (int i = 0; i < 3; ++i) sess.Run({}, {}, {step});
    Tensor wv = sess.Run({w.value()})[0];
    std::vector<uint32_t> bits;
    for (float v : wv.flat<float>()) bits.push_back(Bits(v));
    bits.push_back(Bits(sess.Run({loss})[0].data<float>()[0]));
    runs.push_back(std::move(bits));
  }
  for (size_t r = 1; r < runs.size(); ++r) CHECK(runs[r] == runs[0]);
  if (runs.size() < 2) WARN("this CPU has only the SSE4 target: nothing to compare");
}

TEST_CASE("PF_MAX_CPU_ISA: the names it takes, and the cap the kernels run under", "[simd]") {
  CHECK(ParseCpuIsa("sse4") == CpuIsa::kSse4);
  CHECK(ParseCpuIsa("SSE41") == CpuIsa::kSse4);
  CHECK(ParseCpuIsa("avx2") == CpuIsa::kAvx2);
  CHECK(ParseCpuIsa("avx512_core") == CpuIsa::kAvx512);
  CHECK_FALSE(ParseCpuIsa("avx3").has_value());
  CHECK_FALSE(ParseCpuIsa("").has_value());
  // CI runs the [simd] and elementwise tests once per cap (tests/CMakeLists.txt): there the
  // process starts capped, and nothing runs above the cap.
  if (const char* env = std::getenv("PF_MAX_CPU_ISA")) {
    const std::optional<CpuIsa> cap = ParseCpuIsa(env);
    REQUIRE(cap.has_value());
    CHECK(MaxCpuIsa() == *cap);
    CHECK(ActiveCpuIsa() <= *cap);
    if (*cap < CpuIsa::kAvx2)
      CHECK(std::string(DispatchedTargetName()).find("AVX") == std::string::npos);
    // The same cap reached oneDNN (unless ONEDNN_MAX_CPU_ISA set its own).
    if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr) CHECK(OneDnnCpuIsa() <= *cap);
  } else if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr) {
    CHECK(OneDnnCpuIsa() == HostCpuIsa());  // uncapped, oneDNN sees the CPU as Highway does
  }
}

}  // namespace
}  // namespace pf::simd::simd_kernels_test
