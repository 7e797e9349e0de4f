// Dropout on the GPU (device code in dropout_ops.cu): the CPU kernel's key, per-call counter
// and scale, so a seeded Dropout drops the same elements on either device.

#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/nn/dropout_ops.h"
#include "placeflow/ops/nn/nn_launch.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/random/philox_key.h"

namespace pf {
namespace {

template <typename T>
class DropoutGpuOp : public GpuOpKernel {
 public:
  explicit DropoutGpuOp(const Node& n) : GpuOpKernel(n), draws_(n), rate_(n.attr<float>("rate")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_RETURN_IF_ERROR(ValidateDropoutRate(rate_));
    const Tensor& x = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * mask, ctx->AllocateOutput(1));
    const uint32_t call = draws_.Next();
    const T scale = T(1) / (T(1) - static_cast<T>(rate_));
    gpu::Dropout<T>(x.data<T>(), out->data<T>(), mask->data<T>(), x.num_elements(), rate_, scale,
                    draws_.k0(), draws_.k1(), call, gpu->compute_stream());
    return Status::OK();
  }

 private:
  PhiloxCalls draws_;
  float rate_;
};

PF_REGISTER_KERNEL(Gpu("Dropout", DT_FLOAT), DropoutGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("Dropout", DT_DOUBLE), DropoutGpuOp<double>);

}  // namespace
}  // namespace pf
