// Private helpers of the cuDNN wrappers (gpu_dnn.cc, gpu_dnn_pool_bn.cc; defined in
// gpu_dnn_util.cc and inline here): RAII descriptors,
// scratch from the device's caching allocator, checked calls whose errors name the shapes.
#pragma once

#include <cudnn.h>

#include <functional>
#include <string>

#include "placeflow/devices/cuda/cuda_check.h"
#include "placeflow/devices/cuda/gpu_dnn.h"
#include "placeflow/devices/cuda/gpu_dnn_launch.h"

namespace pf::dnn_util {

// Appends what the call was doing (the descriptor's shapes) to a failed call's Status.
struct CallSite {
  int device = 0;
  std::function<std::string()> what;
  // cuDNN's NOT_SUPPORTED and BAD_PARAM families become Unimplemented (else Internal): set where
  // a caller has another way to run (the convolutions' fallbacks, GpuConvFallsThrough).
  bool unsupported_is_unimplemented = false;
  Status Check(cudnnStatus_t e, const char* call, const char* file, int line) const {
    Status s = cuda::CheckCall(e, call, device, file, line);
    if (s.ok()) return s;
    const int family = CUDNN_STATUS_CATEGORY(static_cast<int>(e));
    if (unsupported_is_unimplemented &&
        (family == CUDNN_STATUS_NOT_SUPPORTED || family == CUDNN_STATUS_BAD_PARAM)) {
      s = Status(Code::kUnimplemented, s.message());
    }
    return s.WithSuffix(" for " + what());
  }
  Status Check(cudaError_t e, const char* call, const char* file, int line) const {
    Status s = cuda::CheckCall(e, call, device, file, line);
    return s.ok() ? s : s.WithSuffix(" for " + what());
  }
};

}  // namespace pf::dnn_util

#define PF_DNN_CALL(site, ...) \
  PF_RETURN_IF_ERROR((site).Check((__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__))

namespace pf::dnn_util {

// Convolution workspaces beyond this are not considered (TensorFlow's default scratch limit), by
// the legacy algorithm search and the graph API's plans alike.
constexpr size_t kMaxWorkspace = size_t{4} << 30;

// One cuDNN descriptor, destroyed with its owner.
template <typename H, cudnnStatus_t (*Create)(H*), cudnnStatus_t (*Destroy)(H)>
class Descriptor {
 public:
  Descriptor() = default;
  ~Descriptor() {
    if (h_ != nullptr) Destroy(h_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Status Init(const CallSite& site) {
    return site.Check(Create(&h_), "cudnnCreate", __FILE__, __LINE__);
  }
  H get() const { return h_; }

 private:
  H h_ = nullptr;
};
using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                            cudnnDestroyConvolutionDescriptor>;
using PoolDesc = Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                            cudnnDestroyPoolingDescriptor>;

// Device memory from the caching allocator, returned when the owner goes out of scope (safe:
// everything using it is ordered on the compute stream).
class Scratch {
 public:
  Scratch() = default;
  ~Scratch() { Release(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // ResourceExhausted naming `what` when the allocator cannot serve `bytes`.
  Status Allocate(GpuDevice* gpu, size_t bytes, const char* what);
  bool TryAllocate(GpuDevice* gpu, size_t bytes);
  void Release();
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  Allocator* allocator_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

inline cudnnDataType_t CudnnType(DType t) {
  return t == DT_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}
inline dnn::DType LaunchType(DType t) {
  return t == DT_DOUBLE ? dnn::DType::kF64 : dnn::DType::kF32;
}
// cuDNN's blending factors are host doubles for double data, host floats otherwise.
inline const void* One(DType t) {
  static const float f = 1.f;
  static const double d = 1.0;
  return t == DT_DOUBLE ? static_cast<const void*>(&d) : &f;
}
inline const void* Zero(DType t) {
  static const float f = 0.f;
  static const double d = 0.0;
  return t == DT_DOUBLE ? static_cast<const void*>(&d) : &f;
}
inline dnn::Dims4 Dims(const DnnTensor4& t) { return {t.dims[0], t.dims[1], t.dims[2], t.dims[3]}; }
inline bool IsNhwc(DnnLayout l) { return l == DnnLayout::kNHWC; }

Status SetTensor(const CallSite& site, const TensorDesc& desc, DType dtype, const DnnTensor4& t);

// Takes the device's cuDNN lock, makes the GPU current and binds the handle to the compute
// stream (it already is; this keeps the wrappers right if that ever changes).
struct DnnLock {
  std::unique_lock<std::mutex> lock;
  cudnnHandle_t handle = nullptr;
};
StatusOr<DnnLock> LockDnn(GpuDevice* gpu, const CallSite& site);

// A legacy convolution algorithm's name ("IMPLICIT_PRECOMP_GEMM", "ALGO_1"), "?" if unknown.
const char* CudnnAlgoName(GpuConvDirection dir, int algo);

}  // namespace pf::dnn_util
