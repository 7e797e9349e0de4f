// Dropout on the GPU (device code in dropout_ops.cu): the CPU kernel's key, per-call counter
// and scale, so a seeded Dropout drops the same elements on either device.
#include <array>
#include <mutex>

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
  explicit DropoutGpuOp(const Node& n)
      : GpuOpKernel(n), key_(PhiloxKey(n)), rate_(n.attr<float>("rate")) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_RETURN_IF_ERROR(ValidateDropoutRate(rate_));
    const Tensor& x = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * mask, ctx->AllocateOutput(1));
    uint32_t call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      call = calls_++;
    }
    const T scale = T(1) / (T(1) - static_cast<T>(rate_));
    gpu::Dropout<T>(x.data<T>(), out->data<T>(), mask->data<T>(), x.num_elements(), rate_, scale,
                    key_[0], key_[1], call, gpu->compute_stream());
    return Status::OK();
  }

 private:
  std::array<uint32_t, 2> key_;
  float rate_;
  std::mutex mu_;
  uint32_t calls_ = 0;
};

PF_REGISTER_KERNEL(Gpu("Dropout", DT_FLOAT), DropoutGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("Dropout", DT_DOUBLE), DropoutGpuOp<double>);

}  // namespace
}  // namespace pf
