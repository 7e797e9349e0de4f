// Error checks for CUDA, cuBLAS, cuDNN and NCCL calls (devices/cuda/ only: includes CUDA).
// A failed call becomes a Status naming the call, the decoded error, the device and file:line:
//
//   PF_GPU_RETURN_IF_ERROR(ordinal, cudaMemcpyAsync(dst, src, n, kind, stream));
//   -> Internal: cudaMemcpyAsync(dst, src, n, kind, stream) failed on GPU 0: an illegal memory
//      access was encountered (cudaErrorIllegalAddress) [devices/cuda/gpu_copy.cc:42]
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "placeflow/core/status.h"

namespace pf::cuda {

inline bool IsOk(cudaError_t e) { return e == cudaSuccess; }
inline bool IsOk(cublasStatus_t e) { return e == CUBLAS_STATUS_SUCCESS; }
inline bool IsOk(cudnnStatus_t e) { return e == CUDNN_STATUS_SUCCESS; }
inline bool IsOk(ncclResult_t e) { return e == ncclSuccess; }
std::string Describe(cudaError_t e);
std::string Describe(cublasStatus_t e);
std::string Describe(cudnnStatus_t e);
inline std::string Describe(ncclResult_t e) { return ncclGetErrorString(e); }

// Out-of-memory errors map to ResourceExhausted, everything else to Internal.
Status CallError(bool out_of_memory, const std::string& decoded, const char* call, int device,
                 const char* file, int line);

template <typename E>
Status CheckCall(E e, const char* call, int device, const char* file, int line) {
  if (IsOk(e)) return Status::OK();
  bool oom = false;
  if constexpr (std::is_same_v<E, cudaError_t>) {
    oom = e == cudaErrorMemoryAllocation;
    cudaGetLastError();  // clear a non-sticky error so later calls do not report it again
  }
  if constexpr (std::is_same_v<E, cublasStatus_t>) oom = e == CUBLAS_STATUS_ALLOC_FAILED;
  return CallError(oom, Describe(e), call, device, file, line);
}

}  // namespace pf::cuda

#define PF_GPU_RETURN_IF_ERROR(device, ...) \
  PF_RETURN_IF_ERROR(                       \
      ::pf::cuda::CheckCall((__VA_ARGS__), #__VA_ARGS__, (device), __FILE__, __LINE__))
