// GPU kernels for the nn ops of nn_ops.cc: BiasAdd and BiasAddGrad, the activations and their
// gradients (device code in nn_ops.cu, the CPU's functors of nn_functors.cuh), and Softmax /
// LogSoftmax on cuDNN. The checks are the CPU kernels' (nn_ops.h).
#include "placeflow/devices/cuda/gpu_blas.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/math/reduction_gpu.h"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/nn/nn_launch.h"
#include "placeflow/ops/nn/nn_ops.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

template <typename T>
class BiasAddGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateBiasAdd(x.shape(), bias.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::BiasAdd<T>(x.data<T>(), bias.data<T>(), out->data<T>(), x.num_elements(), bias.dim(0),
                    gpu->compute_stream());
    return Status::OK();
  }
};

// g summed over every dim but the last.
template <typename T>
class BiasAddGradGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    std::vector<bool> reduced(g.rank(), true);
    reduced.back() = false;
    return LaunchReduce<T>(gpu, gpu::ReduceFn::kSum, g, reduced, false, out);
  }
};

// ReluGrad(gradients, outputs), SigmoidGrad and TanhGrad(y, dy): F takes the inputs in order.
template <typename T, typename F>
class ActivationGradGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Tensor& y = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateActivationGrad(node().op(), g.shape(), y.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::Binary<F>(g.data<T>(), y.data<T>(), out->data<T>(), out->num_elements(), GpuSameShape(),
                   gpu->compute_stream());
    return Status::OK();
  }
};

template <bool kLog>
class SoftmaxGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t c = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
    if (c == 0) return Status::OK();
    return GpuSoftmax(gpu, x.dtype(), kLog, x.num_elements() / c, c, x.raw_data(), out->raw_data());
  }
};

#define PF_GPU_REAL(op, Kernel, F)                         \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double, F>)

PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_FLOAT), BiasAddGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_DOUBLE), BiasAddGpuOp<double>);
PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_INT32), BiasAddGpuOp<int32_t>);
PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_INT64), BiasAddGpuOp<int64_t>);
PF_REGISTER_KERNEL(Gpu("BiasAddGrad", DT_FLOAT), BiasAddGradGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("BiasAddGrad", DT_DOUBLE), BiasAddGradGpuOp<double>);
PF_GPU_REAL("Relu", UnaryGpuOp, ReluF);
PF_GPU_REAL("Sigmoid", UnaryGpuOp, SigmoidF);
PF_GPU_REAL("Tanh", UnaryGpuOp, TanhF);
PF_GPU_REAL("ReluGrad", ActivationGradGpuOp, ReluGradF);
PF_GPU_REAL("SigmoidGrad", ActivationGradGpuOp, SigmoidGradF);
PF_GPU_REAL("TanhGrad", ActivationGradGpuOp, TanhGradF);
PF_REGISTER_KERNEL(KernelDef("Softmax", kDeviceGpu).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}),
                   SoftmaxGpuOp<false>);
PF_REGISTER_KERNEL(KernelDef("LogSoftmax", kDeviceGpu).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE}),
                   SoftmaxGpuOp<true>);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_REAL
