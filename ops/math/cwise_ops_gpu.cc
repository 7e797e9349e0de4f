// GPU kernels for elementwise math (device code in cwise_ops.cu): the binary ops with
// broadcasting, comparisons and unary math, each running the functor its CPU kernel runs
// (cwise_functors.cuh).
#include <type_traits>

#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/math/cwise_functors.cuh"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Binary ops (output T) and comparisons (output bool): out = F()(a, b) with broadcasting.
template <typename T, typename F>
class BroadcastGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    using TOut = std::invoke_result_t<F, T, T>;
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(gpu::BroadcastDims d, GpuBroadcast(a.shape(), b.shape(), out->shape()));
    gpu::Binary<F>(a.data<T>(), b.data<T>(), out->data<TOut>(), out->num_elements(), d,
                   gpu->compute_stream());
    return Status::OK();
  }
};

// The dtypes registered here are the ones cwise_ops.cu instantiates for each functor.
#define PF_GPU_NUMBER(op, Kernel, F)                         \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float, F>);   \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT32), Kernel<int32_t, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_INT64), Kernel<int64_t, F>)
#define PF_GPU_REAL(op, Kernel, F)                         \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT), Kernel<float, F>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE), Kernel<double, F>)

PF_GPU_NUMBER("Add", BroadcastGpuOp, AddF);
PF_GPU_NUMBER("Sub", BroadcastGpuOp, SubF);
PF_GPU_NUMBER("Mul", BroadcastGpuOp, MulF);
PF_GPU_REAL("Div", BroadcastGpuOp, DivF);  // integer division stays on the CPU (it checks for 0)
PF_GPU_NUMBER("Maximum", BroadcastGpuOp, MaxF);
PF_GPU_NUMBER("Minimum", BroadcastGpuOp, MinF);
PF_GPU_REAL("Pow", BroadcastGpuOp, PowF);
PF_GPU_NUMBER("Equal", BroadcastGpuOp, EqualF);
PF_GPU_NUMBER("Less", BroadcastGpuOp, LessF);
PF_GPU_NUMBER("Greater", BroadcastGpuOp, GreaterF);
PF_GPU_NUMBER("NotEqual", BroadcastGpuOp, NotEqualF);
PF_GPU_NUMBER("LessEqual", BroadcastGpuOp, LessEqualF);
PF_GPU_NUMBER("GreaterEqual", BroadcastGpuOp, GreaterEqualF);
PF_GPU_NUMBER("Neg", UnaryGpuOp, NegF);
PF_GPU_NUMBER("Square", UnaryGpuOp, SquareF);
PF_GPU_REAL("Sqrt", UnaryGpuOp, SqrtF);
PF_GPU_REAL("Rsqrt", UnaryGpuOp, RsqrtF);
PF_GPU_REAL("Exp", UnaryGpuOp, ExpF);
PF_GPU_REAL("Log", UnaryGpuOp, LogF);
PF_GPU_REAL("Floor", UnaryGpuOp, FloorF);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_NUMBER
#undef PF_GPU_REAL
