#include "placeflow/devices/cuda/gpu_blas.h"

#include <climits>

#include "placeflow/devices/cuda/cuda_check.h"

namespace pf {

Status GpuGemm(GpuDevice* gpu, DType dtype, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const void* a, const void* b, void* c) {
  if (m == 0 || n == 0) return Status::OK();
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    return errors::Unimplemented("GEMM dimensions beyond 2^31 are not supported: m=", m, " n=", n,
                                 " k=", k);
  }
  cublasHandle_t h = gpu->blas();
  // cuBLAS is column-major: a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T,
  // i.e. the same buffers with the operands swapped.
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = static_cast<int>(ta ? m : k);
  const int ldb = static_cast<int>(tb ? k : n);
  const int ldc = static_cast<int>(n);
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  if (dtype == DT_FLOAT) {
    const float alpha = 1.f, beta = 0.f;
    PF_GPU_RETURN_IF_ERROR(
        gpu->ordinal(),
        cublasSgemm(h, op_b, op_a, N, M, K, &alpha, static_cast<const float*>(b), ldb,
                    static_cast<const float*>(a), lda, &beta, static_cast<float*>(c), ldc));
  } else if (dtype == DT_DOUBLE) {
    const double alpha = 1.0, beta = 0.0;
    PF_GPU_RETURN_IF_ERROR(
        gpu->ordinal(),
        cublasDgemm(h, op_b, op_a, N, M, K, &alpha, static_cast<const double*>(b), ldb,
                    static_cast<const double*>(a), lda, &beta, static_cast<double*>(c), ldc));
  } else {
    return errors::Unimplemented("GpuGemm: no GEMM for ", DTypeName(dtype));
  }
  return Status::OK();
}

Status GpuSoftmax(GpuDevice* gpu, DType dtype, bool log, int64_t rows, int64_t cols, const void* x,
                  void* y) {
  if (rows == 0 || cols == 0) return Status::OK();
  if (rows > INT_MAX || cols > INT_MAX)
    return errors::Unimplemented("Softmax of more than 2^31 rows or columns");
  const int dev = gpu->ordinal();
  cudnnTensorDescriptor_t desc;
  PF_GPU_RETURN_IF_ERROR(dev, cudnnCreateTensorDescriptor(&desc));
  const cudnnDataType_t type = dtype == DT_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  // [rows, cols] as NCHW [rows, cols, 1, 1]: softmax per instance over the channels.
  Status s = cuda::CheckCall(
      cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, type, static_cast<int>(rows),
                                 static_cast<int>(cols), 1, 1),
      "cudnnSetTensor4dDescriptor", dev, __FILE__, __LINE__);
  if (s.ok()) {
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.f, zero_f = 0.f;
    const void* one = dtype == DT_DOUBLE ? static_cast<const void*>(&one_d) : &one_f;
    const void* zero = dtype == DT_DOUBLE ? static_cast<const void*>(&zero_d) : &zero_f;
    auto lock = gpu->LockDnn();
    s = cuda::CheckCall(
        cudnnSoftmaxForward(gpu->dnn(), log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                            CUDNN_SOFTMAX_MODE_INSTANCE, one, desc, x, zero, desc, y),
        "cudnnSoftmaxForward", dev, __FILE__, __LINE__);
  }
  cudnnDestroyTensorDescriptor(desc);
  return s;
}

}  // namespace pf
