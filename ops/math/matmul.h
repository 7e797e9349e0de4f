// The check of MatMul (matmul.cc), shared by its shape function and its CPU and GPU kernels
// (matmul_gpu.cc). Unknown ranks and dims (shape functions at build time) pass.
#pragma once

#include <cstdint>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// op(a) op(b): two matrices whose inner dimensions agree.
Status ValidateMatMul(const Shape& a, const Shape& b, bool transpose_a, bool transpose_b);

// C[m,n] = op(A) op(B) + beta C, row-major with leading dimensions, on this thread alone (callers
// split the work over the intra-op pool): float on oneDNN's sgemm, double on a plain loop.
// beta 0 ignores C's old contents (NaNs too). k = 0 scales C by beta.
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// How MatMul splits one product over `threads` intra-op threads: the output's rows, its
// columns, or the sum over k (each shard a partial product, added after); `shards` contiguous
// pieces of equal size. `avx2_sgemm`: oneDNN's sgemm runs below AVX-512.
struct GemmSplit {
  enum Dim { kRows, kCols, kDepth } dim = kRows;
  int64_t shards = 1;
};
GemmSplit ChooseGemmSplit(int64_t m, int64_t n, int64_t k, int threads, bool avx2_sgemm);

}  // namespace pf
