// GPU kernels for reductions and the kernels gradients build from them: Sum Mean Max Min,
// ArgMax, BiasAddGrad, SumToShape, ReduceGrad; and Fill, ZerosLike, OnesLike.
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

std::vector<bool> ReducedFromAxes(const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    if (a >= -rank && a < rank) reduced[a < 0 ? a + rank : a] = true;
  }
  return reduced;
}

template <typename T>
Status LaunchReduce(OpKernelContext* ctx, GpuDevice* gpu, gpu::ReduceFn f, const Tensor& in,
                    const std::vector<bool>& reduced, bool mean, Tensor* out) {
  PF_ASSIGN_OR_RETURN(gpu::ReduceDims d, GpuReduce(in.shape(), reduced));
  const int64_t divisor = mean && d.num_reduced > 0 ? d.num_reduced : 1;
  gpu::Reduce<T>(f, in.data<T>(), out->data<T>(), d, divisor, gpu->compute_stream());
  return Status::OK();
}

template <typename T, gpu::ReduceFn F, bool kMean>
class ReduceGpuOp : public GpuOpKernel {
 public:
  explicit ReduceGpuOp(const Node& n)
      : GpuOpKernel(n), axes_(n.attr<std::vector<int64_t>>("axes")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    for (int64_t a : axes_) {
      if (a < -in.rank() || a >= in.rank()) {
        return errors::InvalidArgument("Invalid reduction dimension (", a, " for input with ",
                                       in.rank(), " dimension(s)");
      }
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    return LaunchReduce<T>(ctx, gpu, F, in, ReducedFromAxes(axes_, in.rank()), kMean, out);
  }

 private:
  std::vector<int64_t> axes_;
};

template <typename T, typename Index>
class ArgMaxGpuOp : public GpuOpKernel {
 public:
  explicit ArgMaxGpuOp(const Node& n) : GpuOpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + in.rank() : axis_);
    if (in.dim(axis) == 0)
      return errors::InvalidArgument("Reduction axis ", axis, " is empty in shape ",
                                     in.shape().ToString());
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    gpu::ArgMax<T, Index>(in.data<T>(), out->data<Index>(), outer, in.dim(axis), inner,
                          gpu->compute_stream());
    return Status::OK();
  }

 private:
  int64_t axis_;
};

template <typename T>
class BiasAddGradGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    std::vector<bool> reduced(g.rank(), true);
    reduced.back() = false;
    return LaunchReduce<T>(ctx, gpu, gpu::ReduceFn::kSum, g, reduced, false, out);
  }
};

template <typename T>
class SumToShapeGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& g = ctx->input(0);
    const Shape& target = ctx->input(1).shape();
    if (g.shape() == target) return ctx->SetOutput(0, g);
    const int shift = g.rank() - target.rank();
    if (shift < 0)
      return errors::InvalidArgument("SumToShape: ", g.shape().ToString(), " has lower rank than ",
                                     target.ToString());
    std::vector<bool> reduced(g.rank(), false);
    for (int d = 0; d < g.rank(); ++d) {
      if (d < shift) {
        reduced[d] = true;
      } else if (target.dim(d - shift) == 1 && g.dim(d) != 1) {
        reduced[d] = true;
      } else if (target.dim(d - shift) != g.dim(d)) {
        return errors::InvalidArgument("SumToShape: ", g.shape().ToString(),
                                       " does not broadcast from ", target.ToString());
      }
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    return LaunchReduce<T>(ctx, gpu, gpu::ReduceFn::kSum, g, reduced, false, out);
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
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    std::vector<bool> reduced = ReducedFromAxes(axes_, x.rank());
    Shape kept;
    for (int d = 0; d < x.rank(); ++d) kept.AddDim(reduced[d] ? 1 : x.dim(d));
    if (kept.num_elements() != g.num_elements()) {
      return errors::InvalidArgument("ReduceGrad: gradient ", g.shape().ToString(),
                                     " does not match input ", x.ToString());
    }
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

// Fill(dims, value): dims in host memory, the value on the device.
class FillGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& value = ctx->input(1);
    if (value.num_elements() != 1)
      return errors::InvalidArgument("value must be a scalar, got shape ",
                                     value.shape().ToString());
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

#define PF_GPU_REDUCE(op, F, mean)                                      \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), ReduceGpuOp<float, F, mean>);   \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), ReduceGpuOp<double, F, mean>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT32), ReduceGpuOp<int32_t, F, mean>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT64), ReduceGpuOp<int64_t, F, mean>)
PF_GPU_REDUCE("Sum", gpu::ReduceFn::kSum, false);
PF_GPU_REDUCE("Mean", gpu::ReduceFn::kSum, true);
PF_GPU_REDUCE("Max", gpu::ReduceFn::kMax, false);
PF_GPU_REDUCE("Min", gpu::ReduceFn::kMin, false);

#define PF_GPU_ARGMAX(T)                                                                       \
  PF_REGISTER_KERNEL(Gpu("ArgMax", DataTypeOf<T>()).TypeConstraint("output_type", {DT_INT32}), \
                     ArgMaxGpuOp<T, int32_t>);                                                 \
  PF_REGISTER_KERNEL(Gpu("ArgMax", DataTypeOf<T>()).TypeConstraint("output_type", {DT_INT64}), \
                     ArgMaxGpuOp<T, int64_t>)
PF_GPU_ARGMAX(float);
PF_GPU_ARGMAX(double);
PF_GPU_ARGMAX(int32_t);
PF_GPU_ARGMAX(int64_t);

#define PF_GPU_REAL_KERNEL(op, Kernel)                  \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double>)
PF_GPU_REAL_KERNEL("BiasAddGrad", BiasAddGradGpuOp);
PF_GPU_REAL_KERNEL("SumToShape", SumToShapeGpuOp);
PF_GPU_REAL_KERNEL("ReduceGrad", ReduceGradGpuOp);

const std::vector<DType> kFillTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL};
PF_REGISTER_KERNEL(KernelDef("Fill", kDeviceGpu).TypeConstraint("T", kFillTypes).HostMemory("dims"),
                   FillGpuOp);
PF_REGISTER_KERNEL(KernelDef("ZerosLike", kDeviceGpu).TypeConstraint("T", kFillTypes),
                   ConstantLikeGpuOp<0>);
PF_REGISTER_KERNEL(KernelDef("OnesLike", kDeviceGpu).TypeConstraint("T", kFillTypes),
                   ConstantLikeGpuOp<1>);

}  // namespace
}  // namespace pf
