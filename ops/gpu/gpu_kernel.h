// Host-side helpers for GPU OpKernels (ops/*/*_gpu.cc, compiled only in CUDA builds; CUDA-free
// themselves). A GPU kernel derives from GpuOpKernel and only enqueues work, here the generic
// elementwise launcher over the functor the CPU kernel runs (cwise_functors.cuh):
//
//   template <typename T>
//   class NegGpuOp : public pf::GpuOpKernel {
//     using GpuOpKernel::GpuOpKernel;
//     pf::Status ComputeOnGpu(pf::OpKernelContext* ctx, pf::GpuDevice* gpu) override {
//       PF_ASSIGN_OR_RETURN(pf::Tensor* out, ctx->AllocateOutput(0));
//       pf::gpu::Unary<pf::NegF>(ctx->input(0).data<T>(), out->data<T>(), out->num_elements(),
//                                gpu->compute_stream());
//       return pf::Status::OK();
//     }
//   };
#pragma once

#include <vector>

#include "placeflow/devices/cuda/gpu_device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/ops/gpu/launch.h"
#include "placeflow/ops/op_util.h"

namespace pf {

class GpuOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) final {
    auto* gpu = static_cast<GpuDevice*>(ctx->device());
    PF_RETURN_IF_ERROR(gpu->Activate());
    PF_RETURN_IF_ERROR(ComputeOnGpu(ctx, gpu));
    return gpu->CheckLaunch(name() + " (" + node().op() + ")");
  }
  // GPU kernels only enqueue: the executor runs them inline.
  bool IsExpensive() const override { return false; }

 protected:
  virtual Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) = 0;
};

// out = F(in), elementwise (activations, unary math): gpu::Unary<F, T, T> must be instantiated
// in the family's .cu (PF_GPU_UNARY).
template <typename T, typename F>
class UnaryGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::Unary<F>(ctx->input(0).data<T>(), out->data<T>(), out->num_elements(),
                  gpu->compute_stream());
    return Status::OK();
  }
};

inline KernelDef Gpu(const char* op, DType t, const char* attr = "T") {
  return KernelDef(op, kDeviceGpu).TypeConstraint(attr, {t});
}

template <typename T>
constexpr gpu::Type GpuTypeOf() {
  if constexpr (std::is_same_v<T, float>) return gpu::Type::kF32;
  if constexpr (std::is_same_v<T, double>) return gpu::Type::kF64;
  if constexpr (std::is_same_v<T, int32_t>) return gpu::Type::kI32;
  if constexpr (std::is_same_v<T, int64_t>) return gpu::Type::kI64;
  return gpu::Type::kBool;
}
StatusOr<gpu::Type> GpuTypeOf(DType t);

// The device-side broadcast plan of two inputs into `out` (at most gpu::kMaxDims dims).
StatusOr<gpu::BroadcastDims> GpuBroadcast(const Shape& a, const Shape& b, const Shape& out);
// The plan of two inputs of one shape (no index decoding; float32 may take the vectorised path).
inline gpu::BroadcastDims GpuSameShape() {
  gpu::BroadcastDims d;
  d.same_shape = true;
  return d;
}
// A scratch tensor on this GPU (freed to the caching allocator when it goes out of scope; safe
// because everything that uses it is ordered on the compute stream).
StatusOr<Tensor> GpuTemp(OpKernelContext* ctx, DType dtype, const Shape& shape);

}  // namespace pf
