// GPU kernels for the gradient helper ops of grad_ops.cc: SumToShape (a reduction) and
// ReduceGrad (a scaled broadcast), with the checks of grad_ops.h the CPU kernels make. SliceGrad,
// ConcatGrad and GatherGrad are copies: ops/array/copy_ops_gpu.cc.
#include "placeflow/ops/math/cwise_launch.h"
#include "placeflow/ops/math/grad_ops.h"
#include "placeflow/ops/math/reduction_gpu.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

template <typename T>
class SumToShapeGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Shape& target = ctx->input(1).shape();
    if (g.shape() == target) return ctx->SetOutput(0, g);
    PF_ASSIGN_OR_RETURN(std::vector<bool> reduced, SumToShapeDims(g.shape(), target));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    return LaunchReduce<T>(gpu, gpu::ReduceFn::kSum, g, reduced, false, out);
  }
};

template <typename T>
class ReduceGradGpuOp : public GpuOpKernel {
 public:
  explicit ReduceGradGpuOp(const Node& n)
      : GpuOpKernel(n), axes_(n.attr<std::vector<int64_t>>("axes")), mean_(n.attr<bool>("mean")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Shape& x = ctx->input(1).shape();
    PF_ASSIGN_OR_RETURN(Shape kept, ReduceGradShape(g.shape(), x, axes_));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const T scale = mean_ && g.num_elements() > 0
                        ? T(1) / static_cast<T>(x.num_elements() / g.num_elements())
                        : T(1);
    PF_ASSIGN_OR_RETURN(gpu::BroadcastDims d, GpuBroadcast(kept, x, x));
    gpu::BroadcastScaled<T>(g.data<T>(), scale, out->data<T>(), out->num_elements(), d,
                            gpu->compute_stream());
    return Status::OK();
  }

 private:
  std::vector<int64_t> axes_;
  bool mean_;
};

#define PF_GPU_REAL_KERNEL(op, Kernel)                  \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double>)
PF_GPU_REAL_KERNEL("SumToShape", SumToShapeGpuOp);
PF_GPU_REAL_KERNEL("ReduceGrad", ReduceGradGpuOp);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_REAL_KERNEL
