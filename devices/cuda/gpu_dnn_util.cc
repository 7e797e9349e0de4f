// The cuDNN call helpers of gpu_dnn_util.h: scratch memory, tensor descriptors, the handle lock.
#include "placeflow/devices/cuda/gpu_dnn_util.h"

#include <iterator>

namespace pf {
namespace dnn_util {

Status Scratch::Allocate(GpuDevice* gpu, size_t bytes, const char* what) {
  if (TryAllocate(gpu, bytes)) return Status::OK();
  Allocator* a = gpu->GetAllocator();
  return errors::ResourceExhausted("OOM when allocating ", bytes, " bytes of cuDNN scratch (", what,
                                   ") by allocator ", a->Name(), ": ", a->DescribeFailure(bytes));
}

bool Scratch::TryAllocate(GpuDevice* gpu, size_t bytes) {
  Release();
  if (bytes == 0) return true;
  allocator_ = gpu->GetAllocator();
  ptr_ = allocator_->Allocate(bytes);
  bytes_ = ptr_ != nullptr ? bytes : 0;
  return ptr_ != nullptr;
}

void Scratch::Release() {
  if (ptr_ != nullptr) allocator_->Free(ptr_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Status SetTensor(const CallSite& site, const TensorDesc& desc, DType dtype, const DnnTensor4& t) {
  PF_DNN_CALL(site, cudnnSetTensor4dDescriptorEx(desc.get(), CudnnType(dtype), t.dims[0], t.dims[1],
                                                 t.dims[2], t.dims[3], t.strides[0], t.strides[1],
                                                 t.strides[2], t.strides[3]));
  return Status::OK();
}

StatusOr<DnnLock> LockDnn(GpuDevice* gpu, const CallSite& site) {
  PF_RETURN_IF_ERROR(gpu->Activate());
  DnnLock l;
  l.lock = gpu->LockDnn();
  l.handle = gpu->dnn();
  PF_DNN_CALL(site, cudnnSetStream(l.handle, gpu->compute_stream()));
  return l;
}

const char* CudnnAlgoName(GpuConvDirection dir, int algo) {
  static const char* const kForward[] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const kData[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                      "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const kFilter[] = {
      "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  auto pick = [algo](const char* const* names, int n) {
    return algo >= 0 && algo < n ? names[algo] : "?";
  };
  switch (dir) {
    case GpuConvDirection::kForward:
      return pick(kForward, std::size(kForward));
    case GpuConvDirection::kBackwardData:
      return pick(kData, std::size(kData));
    case GpuConvDirection::kBackwardFilter:
      return pick(kFilter, std::size(kFilter));
  }
  return "?";
}

}  // namespace dnn_util

}  // namespace pf
