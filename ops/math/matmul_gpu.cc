// MatMul on the GPU: one cuBLAS GEMM on the device's compute stream (devices/cuda/gpu_blas.cc).
#include "placeflow/devices/cuda/gpu_blas.h"
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/math/matmul.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

class MatMulGpuOp : public GpuOpKernel {
 public:
  explicit MatMulGpuOp(const Node& n)
      : GpuOpKernel(n), ta_(n.attr<bool>("transpose_a")), tb_(n.attr<bool>("transpose_b")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateMatMul(a.shape(), b.shape(), ta_, tb_));
    const int64_t m = ta_ ? a.dim(1) : a.dim(0), k = ta_ ? a.dim(0) : a.dim(1);
    const int64_t n = tb_ ? b.dim(0) : b.dim(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (k == 0) {
      VisitDType(out->dtype(), [&](auto t) {
        using T = decltype(t);
        gpu::Fill<T>(out->data<T>(), out->num_elements(), T(0), nullptr, gpu->compute_stream());
      });
      return Status::OK();
    }
    return GpuGemm(gpu, a.dtype(), ta_, tb_, m, n, k, a.raw_data(), b.raw_data(), out->raw_data());
  }

 private:
  bool ta_, tb_;
};

PF_REGISTER_KERNEL(Gpu("MatMul", DT_FLOAT), MatMulGpuOp);
PF_REGISTER_KERNEL(Gpu("MatMul", DT_DOUBLE), MatMulGpuOp);

}  // namespace
}  // namespace pf
