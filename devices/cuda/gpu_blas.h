// cuBLAS and cuDNN calls for GPU kernels, behind a CUDA-free interface.
//
//   // C[m,n] = op(A) * op(B), row-major, on gpu's compute stream.
//   PF_RETURN_IF_ERROR(pf::GpuGemm(gpu, pf::DT_FLOAT, ta, tb, m, n, k, a, b, c));
#pragma once

#include <cstdint>

#include "placeflow/core/dtype.h"
#include "placeflow/core/status.h"
#include "placeflow/devices/cuda/gpu_device.h"

namespace pf {

// Row-major C[m,n] = op(A)[m,k] * op(B)[k,n]; A is [m,k] ([k,m] when transposed), B [k,n]
// ([n,k] when transposed). float32 uses TF32 tensor cores only when the device allows it.
Status GpuGemm(GpuDevice* gpu, DType dtype, bool transpose_a, bool transpose_b, int64_t m,
               int64_t n, int64_t k, const void* a, const void* b, void* c);

// Softmax (or log-softmax) over the last axis of a [rows, cols] tensor, with cuDNN.
Status GpuSoftmax(GpuDevice* gpu, DType dtype, bool log, int64_t rows, int64_t cols, const void* x,
                  void* y);

}  // namespace pf
