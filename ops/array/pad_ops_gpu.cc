// Pad and PadGrad on the GPU: Pad's own kernel (pad_ops.cu); PadGrad is a strided box copy of
// the gradient's centre (copy_ops.cu). paddings stays in host memory: the kernels read it on
// the host, with the CPU kernels' checks (pad_ops.h).
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/array/pad_ops.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

class PadGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    PF_RETURN_IF_ERROR(ValidatePad(in.shape(), ctx->input(1).shape()));
    PF_ASSIGN_OR_RETURN(PadAmounts p, ReadPaddings(ctx->input(1)));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (in.rank() > gpu::kMaxDims)
      return errors::Unimplemented("GPU Pad supports up to ", gpu::kMaxDims, " dims");
    gpu::PadDims d;
    d.rank = in.rank();
    for (int k = 0; k < d.rank; ++k) {
      d.in_dims[k] = in.dim(k);
      d.out_dims[k] = out->dim(k);
      d.before[k] = p.before[k];
    }
    gpu::Pad(static_cast<int>(DTypeSize(in.dtype())), in.raw_data(), out->raw_data(), d,
             gpu->compute_stream());
    return Status::OK();
  }
};

class PadGradGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    PF_RETURN_IF_ERROR(ValidatePad(g.shape(), ctx->input(1).shape()));
    PF_ASSIGN_OR_RETURN(PadAmounts p, ReadPaddings(ctx->input(1)));
    PF_RETURN_IF_ERROR(ValidatePadGrad(g.shape(), p));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (g.rank() > gpu::kMaxDims)
      return errors::Unimplemented("GPU PadGrad supports up to ", gpu::kMaxDims, " dims");
    // The box of out's shape inside g, at `before`; both row-major.
    gpu::StridedBox b;
    b.rank = g.rank();
    int64_t g_stride = 1, out_stride = 1;
    for (int k = b.rank - 1; k >= 0; --k) {
      b.dims[k] = out->dim(k);
      b.in_strides[k] = g_stride;
      b.out_strides[k] = out_stride;
      b.in_offset += p.before[k] * g_stride;
      g_stride *= g.dim(k);
      out_stride *= out->dim(k);
    }
    gpu::StridedCopy(static_cast<int>(DTypeSize(g.dtype())), g.raw_data(), out->raw_data(), b,
                     gpu->compute_stream());
    return Status::OK();
  }
};

PF_REGISTER_KERNEL(
    KernelDef("Pad", kDeviceGpu).TypeConstraint("T", kComputableTypes).HostMemory("paddings"),
    PadGpuOp);
PF_REGISTER_KERNEL(
    KernelDef("PadGrad", kDeviceGpu).TypeConstraint("T", kComputableTypes).HostMemory("paddings"),
    PadGradGpuOp);

}  // namespace
}  // namespace pf
