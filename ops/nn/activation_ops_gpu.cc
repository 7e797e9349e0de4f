// GPU kernels of activation_ops.cc: Relu6, LeakyRelu, Softplus and their gradient ops (device
// code in activation_ops.cu, the CPU's functors of nn_functors.cuh). The checks are the CPU
// kernels' (activation_ops.h).
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/nn/activation_ops.h"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/nn/nn_launch.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

template <typename T, typename F>
class FeaturesGradGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Tensor& x = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateFeaturesGrad(node().op(), g.shape(), x.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::Binary<F>(g.data<T>(), x.data<T>(), out->data<T>(), out->num_elements(), GpuSameShape(),
                   gpu->compute_stream());
    return Status::OK();
  }
};

template <typename T>
class LeakyReluGpuOp : public GpuOpKernel {
 public:
  explicit LeakyReluGpuOp(const Node& n) : GpuOpKernel(n), alpha_(n.attr<float>("alpha")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::LeakyRelu<T>(ctx->input(0).data<T>(), out->data<T>(), out->num_elements(), alpha_,
                      gpu->compute_stream());
    return Status::OK();
  }

 private:
  float alpha_;
};

template <typename T>
class LeakyReluGradGpuOp : public GpuOpKernel {
 public:
  explicit LeakyReluGradGpuOp(const Node& n) : GpuOpKernel(n), alpha_(n.attr<float>("alpha")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Tensor& x = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateFeaturesGrad(node().op(), g.shape(), x.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::LeakyReluGrad<T>(g.data<T>(), x.data<T>(), out->data<T>(), out->num_elements(), alpha_,
                          gpu->compute_stream());
    return Status::OK();
  }

 private:
  float alpha_;
};

#define PF_GPU_REAL(op, Kernel, F)                         \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double, F>)
PF_GPU_REAL("Relu6", UnaryGpuOp, Relu6F);
PF_GPU_REAL("Softplus", UnaryGpuOp, SoftplusF);
PF_GPU_REAL("Relu6Grad", FeaturesGradGpuOp, Relu6GradF);
PF_GPU_REAL("SoftplusGrad", FeaturesGradGpuOp, SoftplusGradF);
PF_REGISTER_KERNEL(Gpu("LeakyRelu", DT_FLOAT), LeakyReluGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("LeakyRelu", DT_DOUBLE), LeakyReluGpuOp<double>);
PF_REGISTER_KERNEL(Gpu("LeakyReluGrad", DT_FLOAT), LeakyReluGradGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("LeakyReluGrad", DT_DOUBLE), LeakyReluGradGpuOp<double>);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_REAL
