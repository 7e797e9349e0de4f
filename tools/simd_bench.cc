#include "tools/simd_bench.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "placeflow/core/thread_pool.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/ops/math/matmul.h"
#include "placeflow/ops/math/reduce_impl.h"
#include "placeflow/ops/nn/batch_norm_nhwc.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/simd/cpu_isa.h"
#include "placeflow/ops/simd/packed_gemm.h"
#include "placeflow/ops/simd/vec_kernels.h"
#include "placeflow/ops/train/apply_functors.cuh"
#include "tools/bench_util.h"

namespace pf::bench {
namespace {

constexpr int64_t kN = 4096;

// ns per element of fn (one pass over kN elements), the median of kRepeats timings of enough
// passes to last ~2 ms.
double NsPerElement(const std::function<void()>& fn) {
  fn();
  int passes = 1;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < passes; ++i) fn();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 2e-3) break;
    passes *= 2;
  }
  const double s = TimeMedian([&] {
    for (int i = 0; i < passes; ++i) fn();
  });
  return s / passes / kN * 1e9;
}

struct Buffers {
  std::vector<float> a = std::vector<float>(kN), b = std::vector<float>(kN),
                     y = std::vector<float>(kN), m = std::vector<float>(kN, 0.f),
                     v = std::vector<float>(kN, 0.f);
  Buffers() {
    for (int64_t i = 0; i < kN; ++i) {
      a[i] = std::sin(0.37f * i) * 3.f;
      b[i] = 0.5f + std::cos(0.11f * i) * 0.4f;  // positive: log and sqrt see real inputs
    }
  }
};

// Batch norm's channels-last loops see kN elements as [kN / kBnC, kBnC], on one thread.
constexpr int64_t kBnC = 64;
OpKernelContext* InlineContext() {
  static ThreadPool* pool = new ThreadPool(0);
  static OpKernelContext* ctx = [] {
    OpKernelContext::Params p;
    p.intra_op_pool = pool;
    return new OpKernelContext(p);
  }();
  return ctx;
}

std::vector<std::pair<std::string, std::function<void()>>> Families(Buffers* w) {
  float *a = w->a.data(), *b = w->b.data(), *y = w->y.data(), *m = w->m.data(), *v = w->v.data();
  OpKernelContext* ctx = InlineContext();
  constexpr int64_t kRows = kN / kBnC;
  constexpr BnActivation kRelu6 = BnActivation::kRelu6;
  using simd::BinaryFn;
  using simd::UnaryFn;
  auto unary = [=](UnaryFn fn) {
    return [=] { simd::Unary(fn, fn == UnaryFn::kLog || fn == UnaryFn::kSqrt ? b : a, y, kN); };
  };
  auto binary = [=](BinaryFn fn) { return [=] { simd::Binary(fn, a, b, y, kN); }; };
  const AdamUpdate<float> adam(0.9f, 0.999f, 1e-3f, 0.9f, 0.999f, 1e-7f);
  const GradientDescentUpdate<float> sgd{0.01f};
  return {
      {"tanh", unary(UnaryFn::kTanh)},
      {"sigmoid", unary(UnaryFn::kSigmoid)},
      {"exp", unary(UnaryFn::kExp)},
      {"log", unary(UnaryFn::kLog)},
      {"erf", unary(UnaryFn::kErf)},
      {"relu", unary(UnaryFn::kRelu)},
      {"add", binary(BinaryFn::kAdd)},
      {"div", binary(BinaryFn::kDiv)},
      {"max", binary(BinaryFn::kMax)},
      {"relu_grad", binary(BinaryFn::kReluGrad)},
      {"tanh_grad", binary(BinaryFn::kTanhGrad)},
      {"axpy", [=] { simd::Axpy(0.5f, a, y, kN); }},
      // SimdFor's straight-line loops: AddN's sums, the SGD and Adam updates.
      {"simdfor_sum", [=] { SimdFor(0, kN, [&](int64_t i) { y[i] += a[i]; }); }},
      {"simdfor_sgd", [=] { SimdFor(0, kN, [&](int64_t i) { sgd(y[i], a[i]); }); }},
      {"simdfor_adam", [=] { SimdFor(0, kN, [&](int64_t i) { adam(y[i], m[i], v[i], a[i]); }); }},
      // The reductions' inner loops: Sum and Max of a row (ReduceRow's eight partial results).
      {"row_sum", [=] { y[0] = ReduceRow<float, SumR>(a, kN); }},
      {"row_max", [=] { y[0] = ReduceRow<float, MaxR>(a, kN); }},
      // Batch norm's passes over [rows, 64] with Relu6 fused (the coefficients are per channel):
      // the moments, the normalisation, the gradient's sums and its apply pass, written to
      // another tensor and in place over dy (y, whose values settle after a few passes).
      {"bn_moments", [=] { NhwcMoments(ctx, a, kRows, kBnC, m, v); }},
      {"bn_normalize", [=] { NhwcNormalize(ctx, a, kRows, kBnC, b, m, kRelu6, y); }},
      {"bn_grad_sums", [=] { NhwcGradSums(ctx, a, b, b, m, kRelu6, m, kRows, kBnC, v, v + kBnC); }},
      {"bn_grad_apply", [=] { NhwcGradApply(ctx, a, b, b, m, kRelu6, b, m, b, kRows, kBnC, y); }},
      {"bn_grad_apply_in_place",
       [=] { NhwcGradApply(ctx, y, b, b, m, kRelu6, b, m, b, kRows, kBnC, y); }},
      // For scale: glibc's scalar tanhf, what a loop the compiler cannot vectorise costs.
      {"scalar_tanhf",
       [=] {
         for (int64_t i = 0; i < kN; ++i) y[i] = std::tanh(a[i]);
       }},
  };
}

}  // namespace

void SimdTargets() {
  const simd::CpuIsa saved = simd::MaxCpuIsa();
  Buffers w;
  for (simd::CpuIsa cap : {simd::CpuIsa::kSse4, simd::CpuIsa::kAvx2, simd::CpuIsa::kAvx512}) {
    if (cap > simd::HostCpuIsa()) {
      std::printf("simd_targets cap=%s skipped=cpu_lacks_it\n", simd::CpuIsaName(cap));
      continue;
    }
    simd::SetMaxCpuIsa(cap);
    std::string line = std::string("simd_targets cap=") + simd::CpuIsaName(cap) +
                       " target=" + simd::DispatchedTargetName();
    for (auto& [name, fn] : Families(&w)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s=%.3f", name.c_str(), NsPerElement(fn));
      line += buf;
    }
    std::printf("%s ns_per_element n=%lld repeats=%d\n", line.c_str(), static_cast<long long>(kN),
                kRepeats);
  }
  simd::SetMaxCpuIsa(saved);
}

void LstmGemm() {
  const simd::CpuIsa saved = simd::MaxCpuIsa();
  // An LSTM step's products for one thread's 32 rows of a batch of 64, 128 units: forward
  // [32, 128] x [128, 512] added to the gates, backward [32, 512] x [512, 128]^T.
  struct Product {
    const char* name;
    int64_t m, n, k;
    bool tb;
    float beta;
  };
  const Product products[] = {{"fwd", 32, 512, 128, false, 1.f}, {"bwd", 32, 128, 512, true, 0.f}};
  std::vector<float> a(32 * 512, 0.5f), b(512 * 512, 0.25f), c(32 * 512, 0.f);
  for (simd::CpuIsa cap : {simd::CpuIsa::kSse4, simd::CpuIsa::kAvx2, simd::CpuIsa::kAvx512}) {
    if (cap > simd::HostCpuIsa()) continue;
    simd::SetMaxCpuIsa(cap);
    std::string line = std::string("lstm_gemm cap=") + simd::CpuIsaName(cap) +
                       " onednn=" + simd::CpuIsaName(simd::OneDnnCpuIsa());
    for (const Product& p : products) {
      const int64_t ldb = p.tb ? p.k : p.n;
      const simd::PackedMatrix packed(b.data(), ldb, p.tb, p.k, p.n);
      const double sgemm = TimeMedian([&] {
        for (int r = 0; r < 50; ++r)
          Gemm(false, p.tb, p.m, p.n, p.k, a.data(), p.k, b.data(), ldb, p.beta, c.data(), p.n);
      });
      const double mine = TimeMedian([&] {
        for (int r = 0; r < 50; ++r)
          simd::GemmPacked(p.m, a.data(), p.k, packed, p.beta, c.data(), p.n);
      });
      const double flop = 2.0 * p.m * p.n * p.k * 50;
      char buf[160];
      std::snprintf(buf, sizeof buf, " %s_sgemm_us=%.1f %s_packed_us=%.1f %s_gflops=%.0f/%.0f",
                    p.name, sgemm / 50 * 1e6, p.name, mine / 50 * 1e6, p.name, flop / sgemm / 1e9,
                    flop / mine / 1e9);
      line += buf;
    }
    std::printf("%s repeats=%d\n", line.c_str(), kRepeats);
  }
  simd::SetMaxCpuIsa(saved);
}

}  // namespace pf::bench
