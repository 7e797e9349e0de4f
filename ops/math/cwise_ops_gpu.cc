// GPU kernels for elementwise math (device code in cwise_ops.cu): the binary ops with
// broadcasting, comparisons, unary math, activations and their gradients, Floor, Cast,
// BiasAdd and AddN.
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Binary ops (F a gpu::BinaryFn, output T) and comparisons (F a gpu::CompareFn, output bool).
template <typename T, auto F>
class BroadcastGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(gpu::BroadcastDims d, GpuBroadcast(a.shape(), b.shape(), out->shape()));
    if constexpr (std::is_same_v<decltype(F), gpu::BinaryFn>) {
      gpu::Binary<T>(F, a.data<T>(), b.data<T>(), out->data<T>(), out->num_elements(), d,
                     gpu->compute_stream());
    } else {
      gpu::Compare<T>(F, a.data<T>(), b.data<T>(), out->data<bool>(), out->num_elements(), d,
                      gpu->compute_stream());
    }
    return Status::OK();
  }
};

template <typename T, gpu::UnaryFn F>
class UnaryGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::Unary<T>(F, ctx->input(0).data<T>(), out->data<T>(), out->num_elements(),
                  gpu->compute_stream());
    return Status::OK();
  }
};

template <typename T, gpu::ActivationGradFn F>
class ActivationGradGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    if (ctx->input(0).shape() != ctx->input(1).shape()) {
      return errors::InvalidArgument(
          node().op(), ": gradients and outputs must have the same shape, got ",
          ctx->input(0).shape().ToString(), " and ", ctx->input(1).shape().ToString());
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::ActivationGrad<T>(F, ctx->input(0).data<T>(), ctx->input(1).data<T>(), out->data<T>(),
                           out->num_elements(), gpu->compute_stream());
    return Status::OK();
  }
};

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

template <typename T>
class BiasAddGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    if (x.rank() < 1 || bias.rank() != 1 || bias.dim(0) != x.dim(x.rank() - 1)) {
      return errors::InvalidArgument(
          "Must provide as many biases as the last dimension of the input tensor: ",
          bias.shape().ToString(), " vs. ", x.shape().ToString());
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::BiasAdd<T>(x.data<T>(), bias.data<T>(), out->data<T>(), x.num_elements(), bias.dim(0),
                    gpu->compute_stream());
    return Status::OK();
  }
};

template <typename T>
class AddNGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    std::vector<const T*> in;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (ctx->input(i).shape() != out->shape()) {
        return errors::InvalidArgument("AddN: input ", i, " has shape ",
                                       ctx->input(i).shape().ToString(), " but the output has ",
                                       out->shape().ToString());
      }
      in.push_back(ctx->input(i).data<T>());
    }
    gpu::AddN<T>(in.data(), static_cast<int>(in.size()), out->data<T>(), out->num_elements(),
                 gpu->compute_stream());
    return Status::OK();
  }
};

#define PF_GPU_NUMBER(op, Kernel, F)                         \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float, F>);   \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT32), Kernel<int32_t, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT64), Kernel<int64_t, F>)
#define PF_GPU_REAL(op, Kernel, F)                         \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double, F>)

using gpu::ActivationGradFn;
using gpu::BinaryFn;
using gpu::CompareFn;
using gpu::UnaryFn;
PF_GPU_NUMBER("Add", BroadcastGpuOp, BinaryFn::kAdd);
PF_GPU_NUMBER("Sub", BroadcastGpuOp, BinaryFn::kSub);
PF_GPU_NUMBER("Mul", BroadcastGpuOp, BinaryFn::kMul);
PF_GPU_REAL("Div", BroadcastGpuOp,
            BinaryFn::kDiv);  // integer division stays on the CPU (it checks for zero)
PF_GPU_NUMBER("Maximum", BroadcastGpuOp, BinaryFn::kMax);
PF_GPU_NUMBER("Minimum", BroadcastGpuOp, BinaryFn::kMin);
PF_GPU_REAL("Pow", BroadcastGpuOp, BinaryFn::kPow);
PF_GPU_NUMBER("Equal", BroadcastGpuOp, CompareFn::kEqual);
PF_GPU_NUMBER("Less", BroadcastGpuOp, CompareFn::kLess);
PF_GPU_NUMBER("Greater", BroadcastGpuOp, CompareFn::kGreater);
PF_GPU_NUMBER("Neg", UnaryGpuOp, UnaryFn::kNeg);
PF_GPU_NUMBER("Square", UnaryGpuOp, UnaryFn::kSquare);
PF_GPU_REAL("Sqrt", UnaryGpuOp, UnaryFn::kSqrt);
PF_GPU_REAL("Rsqrt", UnaryGpuOp, UnaryFn::kRsqrt);
PF_GPU_REAL("Exp", UnaryGpuOp, UnaryFn::kExp);
PF_GPU_REAL("Log", UnaryGpuOp, UnaryFn::kLog);
PF_GPU_REAL("Floor", UnaryGpuOp, UnaryFn::kFloor);
PF_GPU_REAL("Relu", UnaryGpuOp, UnaryFn::kRelu);
PF_GPU_REAL("Sigmoid", UnaryGpuOp, UnaryFn::kSigmoid);
PF_GPU_REAL("Tanh", UnaryGpuOp, UnaryFn::kTanh);
PF_GPU_REAL("ReluGrad", ActivationGradGpuOp, ActivationGradFn::kRelu);
PF_GPU_REAL("SigmoidGrad", ActivationGradGpuOp, ActivationGradFn::kSigmoid);
PF_GPU_REAL("TanhGrad", ActivationGradGpuOp, ActivationGradFn::kTanh);
PF_REGISTER_KERNEL(KernelDef("Cast", kDeviceGpu)
                       .TypeConstraint("SrcT", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL})
                       .TypeConstraint("DstT", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL}),
                   CastGpuOp);
PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_FLOAT), BiasAddGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_DOUBLE), BiasAddGpuOp<double>);
PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_INT32), BiasAddGpuOp<int32_t>);
PF_REGISTER_KERNEL(Gpu("BiasAdd", DT_INT64), BiasAddGpuOp<int64_t>);
PF_REGISTER_KERNEL(Gpu("AddN", DT_FLOAT), AddNGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("AddN", DT_DOUBLE), AddNGpuOp<double>);
PF_REGISTER_KERNEL(Gpu("AddN", DT_INT32), AddNGpuOp<int32_t>);
PF_REGISTER_KERNEL(Gpu("AddN", DT_INT64), AddNGpuOp<int64_t>);

}  // namespace
}  // namespace pf
