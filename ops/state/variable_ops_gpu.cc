// GPU kernels for AssignAdd/AssignSub (in place on the compute stream, the math family's AddF /
// SubF) and Const (the value is copied to the GPU once, on first use, and shared by every step).
#include <mutex>

#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/device_set.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/math/cwise_functors.cuh"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/state/variable_ops.h"

namespace pf {
namespace {

template <typename T, typename F>
class AssignUpdateGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    VarState* var = ctx->ref_input(0);
    if (var == nullptr)
      return errors::Internal(node().op(), ": input 0 is not a variable reference");
    const Tensor& value = ctx->input(1);
    std::lock_guard<std::mutex> lock(var->mu);
    if (!var->initialized()) {
      return errors::UninitializedValue(ReferencedVariable(node().input(0))->name());
    }
    PF_RETURN_IF_ERROR(ValidateAssignUpdate(var->value.shape(), value.shape()));
    T* dst = var->value.data<T>();
    gpu::Binary<F>(dst, value.data<T>(), dst, value.num_elements(), GpuSameShape(),
                   gpu->compute_stream());
    *ctx->mutable_output(0) = var->value;
    return Status::OK();
  }
};

class ConstGpuOp : public GpuOpKernel {
 public:
  explicit ConstGpuOp(const Node& n) : GpuOpKernel(n), value_(n.attr<Tensor>("value")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!on_device_.IsInitialized()) {
      PF_ASSIGN_OR_RETURN(on_device_,
                          CopyRegistry::Global()->Copy(value_, ctx->devices()->host(), gpu));
    }
    return ctx->SetOutput(0, on_device_);
  }

 private:
  Tensor value_;
  std::mutex mu_;
  Tensor on_device_;
};

#define PF_GPU_ASSIGN_UPDATE(op, F)                                     \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), AssignUpdateGpuOp<float, F>);   \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), AssignUpdateGpuOp<double, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT32), AssignUpdateGpuOp<int32_t, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT64), AssignUpdateGpuOp<int64_t, F>)
PF_GPU_ASSIGN_UPDATE("AssignAdd", AddF);
PF_GPU_ASSIGN_UPDATE("AssignSub", SubF);
PF_REGISTER_KERNEL(KernelDef("Const", kDeviceGpu)
                       .TypeConstraint("dtype", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL}),
                   ConstGpuOp);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_ASSIGN_UPDATE
