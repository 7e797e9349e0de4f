// A float GEMM whose right-hand matrix is packed once and then multiplied many times: an LSTM's
// recurrent weights, the same in every step of a sequence (BlockLSTM, ops/nn/lstm_ops.cc).
//
// oneDNN 2.6's sgemm packs B again in every call, and its matmul primitive prepacks weights only
// on AVX-512 (brgemm); on AVX2 a step's [32, 128] x [128, 512] product ran at about half the
// core's peak. This one is written with Google Highway's portable vectors for every x86 target,
// dispatched at run time under PF_MAX_CPU_ISA (cpu_isa.h): a register tile of 6 rows by two
// vectors of columns, B in panels of two vectors' width, k-major, so a panel stays in L1 while
// every row block of A passes over it. It uses fused multiply-adds where the target has them, so
// (as oneDNN's sgemm) the bits may differ between targets; the tests state the tolerance.
#ifndef PLACEFLOW_OPS_SIMD_PACKED_GEMM_H_
#define PLACEFLOW_OPS_SIMD_PACKED_GEMM_H_

#include <cstdint>
#include <vector>

namespace pf::simd {

// B ([k, n], or B^T given as [n, k] when `transposed`), packed for the dispatched target.
class PackedMatrix {
 public:
  PackedMatrix(const float* b, int64_t ldb, bool transposed, int64_t k, int64_t n);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t panel() const { return panel_; }                      // columns per panel
  const float* data() const { return data_.data() + offset_; }  // 64-byte aligned

 private:
  int64_t k_, n_, panel_;
  std::vector<float> data_;  // panels of k x panel floats, zero-padded, from offset_
  int64_t offset_ = 0;
};

// C[m, n] = A[m, k] B + beta C (beta 0: C is only written), A row-major with row stride lda.
void GemmPacked(int64_t m, const float* a, int64_t lda, const PackedMatrix& b, float beta, float* c,
                int64_t ldc);

}  // namespace pf::simd

#endif  // PLACEFLOW_OPS_SIMD_PACKED_GEMM_H_
