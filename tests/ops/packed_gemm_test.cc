// simd::GemmPacked (ops/simd/packed_gemm.h) against a product in double, under every ISA cap,
// for shapes that fill the register tile and shapes that leave partial rows and panels.
#include "placeflow/ops/simd/packed_gemm.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "placeflow/ops/simd/cpu_isa.h"

namespace pf::simd::packed_gemm_test {
namespace {

struct CapGuard {
  CpuIsa saved = MaxCpuIsa();
  ~CapGuard() { SetMaxCpuIsa(saved); }
};

std::vector<float> Random(int64_t size, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(size);
  for (float& x : v) x = u(gen);
  return v;
}

// C = A B + beta C0 for A [m, k] (row stride lda), B [k, n] or, transposed, [n, k]; checked
// elementwise against the sum in double within 1e-6 of the sum of |a b| (float rounding over k
// terms, with or without fused multiply-adds).
void Check(int64_t m, int64_t n, int64_t k, bool transposed, float beta) {
  CAPTURE(m, n, k, transposed, beta);
  const int64_t lda = k + 3, ldb = (transposed ? k : n) + 2, ldc = n + 5;
  const std::vector<float> a = Random(m * lda, 1), b = Random((transposed ? n : k) * ldb, 2);
  const std::vector<float> c0 = Random(m * ldc, 3);
  std::vector<float> c = c0;
  const PackedMatrix packed(b.data(), ldb, transposed, k, n);
  GemmPacked(m, a.data(), lda, packed, beta, c.data(), ldc);
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = beta * static_cast<double>(c0[i * ldc + j]), scale = std::fabs(sum);
      for (int64_t p = 0; p < k; ++p) {
        const double t = double(a[i * lda + p]) * (transposed ? b[j * ldb + p] : b[p * ldb + j]);
        sum += t;
        scale += std::fabs(t);
      }
      bad += std::fabs(c[i * ldc + j] - sum) > 1e-6 * scale + 1e-30;
    }
  }
  CHECK(bad == 0);
  // Past each row's n columns, C is untouched.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldc; ++j) CHECK(c[i * ldc + j] == c0[i * ldc + j]);
}

TEST_CASE("GemmPacked matches the product in double under every ISA cap", "[simd][nn]") {
  CapGuard guard;
  for (CpuIsa cap : {CpuIsa::kSse4, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (cap > HostCpuIsa()) continue;
    CAPTURE(CpuIsaName(cap));
    SetMaxCpuIsa(cap);
    for (int64_t m : {1, 5, 6, 7, 13, 32})
      for (int64_t n : {1, 7, 16, 17, 33, 64})
        for (int64_t k : {1, 4, 37}) Check(m, n, k, (m + n + k) % 2 == 0, m % 3 == 0 ? 0.f : 1.f);
    // An LSTM step's shapes: [32, 128] x [128, 512] and the backward [32, 512] x [512, 128]^T.
    Check(32, 512, 128, false, 1.f);
    Check(32, 128, 512, true, 0.f);
    Check(3, 20, 9, false, 0.5f);
  }
}

TEST_CASE("GemmPacked: a matrix packed under one ISA cap multiplies under another", "[simd]") {
  CapGuard guard;
  if (HostCpuIsa() < CpuIsa::kAvx2) return;  // one target only: nothing to switch
  const int64_t m = 7, n = 19, k = 11;
  const std::vector<float> a = Random(m * k, 4), b = Random(k * n, 5);
  SetMaxCpuIsa(CpuIsa::kSse4);
  const PackedMatrix narrow(b.data(), n, false, k, n);
  std::vector<float> want(m * n), got(m * n);
  GemmPacked(m, a.data(), k, narrow, 0.f, want.data(), n);
  SetMaxCpuIsa(HostCpuIsa());
  const PackedMatrix wide(b.data(), n, false, k, n);
  CHECK(wide.panel() > narrow.panel());
  GemmPacked(m, a.data(), k, narrow, 0.f, got.data(), n);  // packed for SSE4, run on the host's
  for (int64_t i = 0; i < m * n; ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));
}

}  // namespace
}  // namespace pf::simd::packed_gemm_test
