// The kernels of packed_gemm.h, compiled once per Highway target (foreach_target.h includes this
// file again for each) and dispatched at run time under the ISA cap, as vec_kernels.cc.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "placeflow/ops/simd/packed_gemm.cc"
#include "placeflow/ops/simd/packed_gemm.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "placeflow/ops/simd/cpu_isa.h"

HWY_BEFORE_NAMESPACE();
namespace pf::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kRows = 6;  // rows of the register tile: 6 x 2 accumulators, + 2 B + 1 A vector

int64_t PanelImpl() { return 2 * static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>())); }

// Rows [0, R) of C's tile at (c, columns [0, w)) from A's R rows and one panel of B.
template <int R>
HWY_INLINE void Tile(int64_t k, const float* HWY_RESTRICT a, int64_t lda,
                     const float* HWY_RESTRICT p, float beta, float* HWY_RESTRICT c, int64_t ldc,
                     int64_t w) {
  const hn::ScalableTag<float> d;
  const int64_t L = hn::Lanes(d);
  hn::Vec<decltype(d)> lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = hn::Zero(d);
  for (int64_t kk = 0; kk < k; ++kk) {
    const auto b0 = hn::Load(d, p + kk * 2 * L);
    const auto b1 = hn::Load(d, p + kk * 2 * L + L);
    for (int r = 0; r < R; ++r) {
      const auto ar = hn::Set(d, a[r * lda + kk]);
      lo[r] = hn::MulAdd(ar, b0, lo[r]);
      hi[r] = hn::MulAdd(ar, b1, hi[r]);
    }
  }
  const auto vb = hn::Set(d, beta);
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    if (w == 2 * L) {
      if (beta != 0.f) {
        lo[r] = hn::MulAdd(vb, hn::LoadU(d, cr), lo[r]);
        hi[r] = hn::MulAdd(vb, hn::LoadU(d, cr + L), hi[r]);
      }
      hn::StoreU(lo[r], d, cr);
      hn::StoreU(hi[r], d, cr + L);
      continue;
    }
    // The last panel, narrower than two vectors: through a buffer.
    HWY_ALIGN float tile[2 * HWY_MAX_BYTES / sizeof(float)];
    hn::Store(lo[r], d, tile);
    hn::Store(hi[r], d, tile + L);
    for (int64_t j = 0; j < w; ++j) cr[j] = beta == 0.f ? tile[j] : tile[j] + beta * cr[j];
  }
}

// The last `rows` (< kRows) rows of a row block: Tile<rows>, found by counting down from R.
template <int R>
HWY_INLINE void TailTile(int64_t rows, int64_t k, const float* a, int64_t lda, const float* p,
                         float beta, float* c, int64_t ldc, int64_t w) {
  if (rows == R) return Tile<R>(k, a, lda, p, beta, c, ldc, w);
  if constexpr (R > 1) TailTile<R - 1>(rows, k, a, lda, p, beta, c, ldc, w);
}

void GemmPackedImpl(int64_t m, const float* a, int64_t lda, const float* packed, int64_t k,
                    int64_t n, float beta, float* c, int64_t ldc) {
  const int64_t panel = PanelImpl();
  // Panel by panel (it stays in L1), every row block of A over it.
  for (int64_t j = 0; j < n; j += panel) {
    const float* p = packed + (j / panel) * k * panel;
    const int64_t w = std::min(panel, n - j);
    int64_t i = 0;
    for (; i + kRows <= m; i += kRows)
      Tile<kRows>(k, a + i * lda, lda, p, beta, c + i * ldc + j, ldc, w);
    if (i < m) TailTile<kRows - 1>(m - i, k, a + i * lda, lda, p, beta, c + i * ldc + j, ldc, w);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace pf::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pf::simd {

HWY_EXPORT(PanelImpl);
HWY_EXPORT(GemmPackedImpl);

PackedMatrix::PackedMatrix(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n)
    : k_(k), n_(n) {
  ActiveCpuIsa();
  panel_ = HWY_DYNAMIC_DISPATCH(PanelImpl)();
  const int64_t panels = (n + panel_ - 1) / panel_;
  data_.resize(panels * k * panel_ + 16);
  const auto address = reinterpret_cast<uintptr_t>(data_.data());
  offset_ = static_cast<int64_t>((64 - address % 64) % 64 / sizeof(float));
  float* out = data_.data() + offset_;
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t j = 0; j < panel_; ++j) {
        const int64_t col = p * panel_ + j;
        *out++ = col >= n ? 0.f : transposed ? b[col * ldb + kk] : b[kk * ldb + col];
      }
    }
  }
}

void GemmPacked(int64_t m, const float* a, int64_t lda, const PackedMatrix& b, float beta, float* c,
                int64_t ldc) {
  if (m == 0 || b.n() == 0) return;
  ActiveCpuIsa();
  const int64_t panel = b.panel(), k = b.k();
  if (panel == HWY_DYNAMIC_DISPATCH(PanelImpl)()) {
    HWY_DYNAMIC_DISPATCH(GemmPackedImpl)(m, a, lda, b.data(), k, b.n(), beta, c, ldc);
    return;
  }
  // Packed for another target (SetMaxCpuIsa changed the cap since): plain loops over the panels.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < b.n(); ++j) {
      const float* p = b.data() + (j / panel) * k * panel + j % panel;
      float sum = 0.f;
      for (int64_t kk = 0; kk < k; ++kk) sum += a[i * lda + kk] * p[kk * panel];
      c[i * ldc + j] = beta == 0.f ? sum : sum + beta * c[i * ldc + j];
    }
  }
}

}  // namespace pf::simd
#endif  // HWY_ONCE
