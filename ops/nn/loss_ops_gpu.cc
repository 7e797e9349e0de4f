// GPU kernels for the losses of loss_ops.cc (device code in loss_ops.cu): softmax cross-entropy
// (dense and sparse labels, fused gradient), sigmoid cross-entropy, mean squared error and its
// gradient, L2Loss. The checks are the CPU kernels' (loss_ops.h); the elementwise terms run the
// CPU's functors (nn_functors.cuh, cwise_functors.cuh).
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/math/cwise_functors.cuh"
#include "placeflow/ops/math/cwise_launch.h"
#include "placeflow/ops/math/grad_ops.h"
#include "placeflow/ops/math/reduction_gpu.h"
#include "placeflow/ops/nn/loss_ops.h"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/nn/nn_launch.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

template <typename T>
class SoftmaxXentGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateSoftmaxXent(logits.shape(), labels.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * loss, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * backprop, ctx->AllocateOutput(1));
    gpu::SoftmaxXent<T>(logits.data<T>(), labels.data<T>(), loss->data<T>(), backprop->data<T>(),
                        logits.dim(0), logits.dim(1), gpu->compute_stream());
    return Status::OK();
  }
};

// Labels stay on the device, so they are not range-checked here: an out-of-range label gives
// a NaN loss and gradient for its row (TensorFlow's GPU kernel does the same).
template <typename T, typename Index>
class SparseSoftmaxXentGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateSparseSoftmaxXent(logits.shape(), labels.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * loss, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * backprop, ctx->AllocateOutput(1));
    gpu::SparseSoftmaxXent<T, Index>(logits.data<T>(), labels.data<Index>(), loss->data<T>(),
                                     backprop->data<T>(), logits.dim(0), logits.dim(1),
                                     gpu->compute_stream());
    return Status::OK();
  }
};

template <typename T>
class SigmoidXentGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    const Tensor& z = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateSigmoidXent(x.shape(), z.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::Binary<SigmoidXentF>(x.data<T>(), z.data<T>(), out->data<T>(), x.num_elements(),
                              GpuSameShape(), gpu->compute_stream());
    return Status::OK();
  }
};

// Reduces all of `t` into the scalar `out`, divided by `divisor`.
template <typename T>
Status SumAll(const Tensor& t, int64_t divisor, Tensor* out, GpuDevice* gpu) {
  PF_ASSIGN_OR_RETURN(gpu::ReduceDims d, GpuReduce(t.shape(), std::vector<bool>(t.rank(), true)));
  gpu::Reduce<T>(gpu::ReduceFn::kSum, t.data<T>(), out->data<T>(), d, divisor,
                 gpu->compute_stream());
  return Status::OK();
}

template <typename T>
class MseGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& p = ctx->input(0);
    const Tensor& l = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Shape full, BroadcastShapes(p.shape(), l.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor sq, GpuTemp(ctx, DataTypeOf<T>(), full));
    PF_ASSIGN_OR_RETURN(gpu::BroadcastDims d, GpuBroadcast(p.shape(), l.shape(), full));
    gpu::Binary<SquaredDiffF>(p.data<T>(), l.data<T>(), sq.data<T>(), full.num_elements(), d,
                              gpu->compute_stream());
    return SumAll<T>(sq, std::max<int64_t>(1, full.num_elements()), out, gpu);
  }
};

// +-2 g (p - l) / count over the broadcast shape, summed back to input `wrt`'s shape.
template <typename T>
class MseGradGpuOp : public GpuOpKernel {
 public:
  explicit MseGradGpuOp(const Node& n)
      : GpuOpKernel(n), wrt_(static_cast<int>(n.attr<int64_t>("wrt"))) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Tensor& p = ctx->input(1);
    const Tensor& l = ctx->input(2);
    PF_ASSIGN_OR_RETURN(Shape full, BroadcastShapes(p.shape(), l.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t count = std::max<int64_t>(1, full.num_elements());
    const T factor = (wrt_ == 0 ? T(2) : T(-2)) / static_cast<T>(count);
    GpuStream s = gpu->compute_stream();
    PF_ASSIGN_OR_RETURN(gpu::BroadcastDims d, GpuBroadcast(p.shape(), l.shape(), full));
    Tensor diff = *out;
    if (full != out->shape()) {
      PF_ASSIGN_OR_RETURN(diff, GpuTemp(ctx, DataTypeOf<T>(), full));
    }
    gpu::Binary<SubF>(p.data<T>(), l.data<T>(), diff.data<T>(), full.num_elements(), d, s);
    if (full != out->shape()) {
      PF_ASSIGN_OR_RETURN(std::vector<bool> reduced, SumToShapeDims(full, out->shape()));
      PF_RETURN_IF_ERROR(LaunchReduce<T>(gpu, gpu::ReduceFn::kSum, diff, reduced, false, out));
    }
    gpu::Scale<T>(out->data<T>(), T(0), g.data<T>(), out->data<T>(), out->num_elements(), s);
    gpu::Scale<T>(out->data<T>(), factor, nullptr, out->data<T>(), out->num_elements(), s);
    return Status::OK();
  }

 private:
  int wrt_;
};

template <typename T>
class L2LossGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor sq, GpuTemp(ctx, DataTypeOf<T>(), x.shape()));
    gpu::Unary<SquareF>(x.data<T>(), sq.data<T>(), x.num_elements(), gpu->compute_stream());
    return SumAll<T>(sq, 2, out, gpu);
  }
};

#define PF_GPU_REAL_KERNEL(op, Kernel)                  \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double>)
PF_GPU_REAL_KERNEL("SoftmaxCrossEntropyWithLogits", SoftmaxXentGpuOp);
PF_GPU_REAL_KERNEL("SigmoidCrossEntropyWithLogits", SigmoidXentGpuOp);
PF_GPU_REAL_KERNEL("MeanSquaredError", MseGpuOp);
PF_GPU_REAL_KERNEL("MeanSquaredErrorGrad", MseGradGpuOp);
PF_GPU_REAL_KERNEL("L2Loss", L2LossGpuOp);
#define PF_GPU_SPARSE_XENT(T, I)                                                 \
  PF_REGISTER_KERNEL(Gpu("SparseSoftmaxCrossEntropyWithLogits", DataTypeOf<T>()) \
                         .TypeConstraint("Tlabels", {DataTypeOf<I>()}),          \
                     SparseSoftmaxXentGpuOp<T, I>)
PF_GPU_SPARSE_XENT(float, int32_t);
PF_GPU_SPARSE_XENT(float, int64_t);
PF_GPU_SPARSE_XENT(double, int32_t);
PF_GPU_SPARSE_XENT(double, int64_t);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_REAL_KERNEL
#undef PF_GPU_SPARSE_XENT
