// pf-bench's SIMD guard figure (tools/simd_bench.cc).
#pragma once

namespace pf::bench {

// simd_targets: ns per element of every CPU kernel family (the Highway kernels of
// ops/simd/vec_kernels.h and SimdFor's straight-line loops) under each ISA cap the CPU allows,
// one thread, on 4096-element arrays (L1-resident): a family that falls to scalar code under a
// cap shows as a jump in its row.
void SimdTargets();

// lstm_gemm: an LSTM step's two recurrent products, oneDNN's sgemm (at oneDNN's ISA) against
// simd::GemmPacked (B packed once) under each ISA cap the CPU allows: us per product and
// GFLOP/s (sgemm/packed), one thread.
void LstmGemm();

}  // namespace pf::bench
