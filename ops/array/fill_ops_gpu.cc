// GPU kernels for the ops of fill_ops.cc (device code in fill_ops.cu): Cast, Fill (dims in host
// memory, the value on the device), ZerosLike, OnesLike and OneHot.
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/array/fill_ops.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

class CastGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    if (in.dtype() == ctx->output_dtype(0)) return ctx->ForwardInput(0, 0);
    PF_ASSIGN_OR_RETURN(gpu::Type from, GpuTypeOf(in.dtype()));
    PF_ASSIGN_OR_RETURN(gpu::Type to, GpuTypeOf(ctx->output_dtype(0)));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::Cast(from, in.raw_data(), to, out->raw_data(), in.num_elements(), gpu->compute_stream());
    return Status::OK();
  }
};

class FillGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& value = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateFillValue(value.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    VisitDType(out->dtype(), [&](auto t) {
      using T = decltype(t);
      gpu::Fill<T>(out->data<T>(), out->num_elements(), T{}, value.data<T>(),
                   gpu->compute_stream());
    });
    return Status::OK();
  }
};

template <int kValue>
class ConstantLikeGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    VisitDType(out->dtype(), [&](auto t) {
      using T = decltype(t);
      gpu::Fill<T>(out->data<T>(), out->num_elements(), static_cast<T>(kValue), nullptr,
                   gpu->compute_stream());
    });
    return Status::OK();
  }
};

template <typename Index>
class OneHotGpuOp : public GpuOpKernel {
 public:
  explicit OneHotGpuOp(const Node& n)
      : GpuOpKernel(n), on_(n.attr<float>("on_value")), off_(n.attr<float>("off_value")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t depth = out->dim(out->rank() - 1);
    const Index* idx = ctx->input(0).template data<Index>();
    const int64_t n = ctx->input(0).num_elements();
    VisitDType(out->dtype(), [&](auto t) {
      using T = decltype(t);
      if constexpr (!std::is_same_v<T, bool>) {
        gpu::OneHot<T, Index>(idx, out->data<T>(), n, depth, static_cast<T>(on_),
                              static_cast<T>(off_), gpu->compute_stream());
      }
    });
    return Status::OK();
  }

 private:
  float on_, off_;
};

PF_REGISTER_KERNEL(KernelDef("Cast", kDeviceGpu)
                       .TypeConstraint("SrcT", kComputableTypes)
                       .TypeConstraint("DstT", kComputableTypes),
                   CastGpuOp);
PF_REGISTER_KERNEL(
    KernelDef("Fill", kDeviceGpu).TypeConstraint("T", kComputableTypes).HostMemory("dims"),
    FillGpuOp);
PF_REGISTER_KERNEL(KernelDef("ZerosLike", kDeviceGpu).TypeConstraint("T", kComputableTypes),
                   ConstantLikeGpuOp<0>);
PF_REGISTER_KERNEL(KernelDef("OnesLike", kDeviceGpu).TypeConstraint("T", kComputableTypes),
                   ConstantLikeGpuOp<1>);
PF_REGISTER_KERNEL(Gpu("OneHot", DT_INT32, "TI"), OneHotGpuOp<int32_t>);
PF_REGISTER_KERNEL(Gpu("OneHot", DT_INT64, "TI"), OneHotGpuOp<int64_t>);

}  // namespace
}  // namespace pf
