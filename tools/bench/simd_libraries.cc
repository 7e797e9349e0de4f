// Highway (placeflow's kernels, ops/simd/vec_kernels.h) against xsimd and Eigen on float tanh,
// exp, log, sigmoid and add: ns per element on 4096 floats (L1-resident, one thread), the largest
// error in ulp against the function in double over a sweep, and a hash of the sweep's output bits
// (equal hashes across targets: the same bits). Built twice by simd_libraries.sh, once per target
// (-mavx2 -mfma, -mavx512f ...): xsimd and Eigen pick their vectors when compiled, Highway at run
// time under the cap this binary sets. A benchmark only: neither xsimd nor Eigen is a dependency.
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "placeflow/ops/simd/cpu_isa.h"
#include "placeflow/ops/simd/vec_kernels.h"

namespace {

using Kernel = std::function<void(const float*, const float*, float*, int64_t)>;

double NsPerElement(const Kernel& k, const float* a, const float* b, float* y, int64_t n) {
  std::vector<double> t;
  for (int r = 0; r < 9; ++r) {
    const int passes = 2000;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < passes; ++i) k(a, b, y, n);
    t.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
        passes / n);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class F>
void Xsimd(const float* a, float* y, int64_t n, F f) {
  using B = xsimd::batch<float>;
  int64_t i = 0;
  for (; i + int64_t(B::size) <= n; i += B::size)
    f(B::load_unaligned(a + i)).store_unaligned(y + i);
  for (; i < n; ++i) {
    alignas(64) float in[B::size] = {a[i]}, out[B::size];
    f(B::load_aligned(in)).store_aligned(out);
    y[i] = out[0];
  }
}

using EArr = Eigen::Map<const Eigen::ArrayXf>;
using EOut = Eigen::Map<Eigen::ArrayXf>;

struct Fn {
  const char* name;
  double (*exact)(double);
  float lo, hi;
  Kernel hwy, xs, eigen;
};

uint64_t Ulps(float got, double want) {
  const float w = static_cast<float>(want);
  if (std::isnan(got) || std::isnan(w)) return std::isnan(got) == std::isnan(w) ? 0 : ~0ull;
  int32_t gi, wi;
  std::memcpy(&gi, &got, 4);
  std::memcpy(&wi, &w, 4);
  if (gi < 0) gi = INT32_MIN - gi;
  if (wi < 0) wi = INT32_MIN - wi;
  return static_cast<uint64_t>(std::abs(int64_t(gi) - int64_t(wi)));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string target = argc > 1 ? argv[1] : "avx2";
  pf::simd::SetMaxCpuIsa(target == "avx512" ? pf::simd::CpuIsa::kAvx512 : pf::simd::CpuIsa::kAvx2);
  using pf::simd::UnaryFn;
  auto hwy = [](UnaryFn f) {
    return [f](const float* a, const float*, float* y, int64_t n) { pf::simd::Unary(f, a, y, n); };
  };
  std::vector<Fn> fns = {
      {"tanh", [](double x) { return std::tanh(x); }, -12, 12, hwy(UnaryFn::kTanh),
       [](const float* a, const float*, float* y, int64_t n) {
         Xsimd(a, y, n, [](auto x) { return xsimd::tanh(x); });
       },
       [](const float* a, const float*, float* y, int64_t n) { EOut(y, n) = EArr(a, n).tanh(); }},
      {"exp", [](double x) { return std::exp(x); }, -87, 88, hwy(UnaryFn::kExp),
       [](const float* a, const float*, float* y, int64_t n) {
         Xsimd(a, y, n, [](auto x) { return xsimd::exp(x); });
       },
       [](const float* a, const float*, float* y, int64_t n) { EOut(y, n) = EArr(a, n).exp(); }},
      {"log", [](double x) { return std::log(x); }, 1e-30f, 1e30f, hwy(UnaryFn::kLog),
       [](const float* a, const float*, float* y, int64_t n) {
         Xsimd(a, y, n, [](auto x) { return xsimd::log(x); });
       },
       [](const float* a, const float*, float* y, int64_t n) { EOut(y, n) = EArr(a, n).log(); }},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -30, 30, hwy(UnaryFn::kSigmoid),
       [](const float* a, const float*, float* y, int64_t n) {
         Xsimd(a, y, n, [](auto x) { return 1.f / (1.f + xsimd::exp(-x)); });
       },
       [](const float* a, const float*, float* y, int64_t n) {
         EOut(y, n) = EArr(a, n).logistic();
       }},
  };
  const int64_t kN = 4096;
  std::vector<float> a(kN), b(kN, 0.5f), y(kN);
  for (const Fn& f : fns) {
    for (int64_t i = 0; i < kN; ++i) a[i] = f.lo + (f.hi - f.lo) * ((i * 2654435761u) % kN) / kN;
    if (std::string(f.name) == "log")
      for (int64_t i = 0; i < kN; ++i) a[i] = std::exp(-60.f + 120.f * i / kN);
    // The sweep: 2^20 points spread over the range (log: over its exponents).
    const int64_t m = 1 << 20;
    std::vector<float> xs(m), out(m);
    for (int64_t i = 0; i < m; ++i) {
      const double t = double(i) / m;
      xs[i] = std::string(f.name) == "log" ? float(std::exp(-69.0 + 138.0 * t))
                                           : float(f.lo + (f.hi - f.lo) * t);
    }
    const std::pair<const char*, const Kernel*> libs[] = {
        {"highway", &f.hwy}, {"xsimd", &f.xs}, {"eigen", &f.eigen}};
    for (const auto& [lib, k] : libs) {
      (*k)(xs.data(), nullptr, out.data(), m);
      uint64_t worst = 0, hash = 1469598103934665603ull;
      for (int64_t i = 0; i < m; ++i) {
        worst = std::max(worst, Ulps(out[i], f.exact(xs[i])));
        uint32_t bits;
        std::memcpy(&bits, &out[i], 4);
        hash = (hash ^ bits) * 1099511628211ull;
      }
      std::printf(
          "simd_libraries target=%s fn=%s lib=%s ns_per_element=%.3f max_ulp=%llu "
          "bits=%016llx\n",
          target.c_str(), f.name, lib, NsPerElement(*k, a.data(), b.data(), y.data(), kN),
          static_cast<unsigned long long>(worst), static_cast<unsigned long long>(hash));
    }
  }
}
