// RandomUniform, RandomNormal, TruncatedNormal on the GPU (device code in random_ops.cu): the
// same key and per-call counter as the CPU kernels.

#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/random/philox_key.h"
#include "placeflow/ops/random/random_launch.h"

namespace pf {
namespace {

template <typename T, int kDist>
class RandomGpuOp : public GpuOpKernel {
 public:
  explicit RandomGpuOp(const Node& n) : GpuOpKernel(n), draws_(n) {}
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const uint32_t call = draws_.Next();
    gpu::RandomFill<T>(kDist, out->data<T>(), out->num_elements(), draws_.k0(), draws_.k1(), call,
                       gpu->compute_stream());
    return Status::OK();
  }

 private:
  PhiloxCalls draws_;
};

#define PF_GPU_RANDOM(op, dist)                                             \
  PF_REGISTER_KERNEL(Gpu(op, DT_FLOAT, "dtype"), RandomGpuOp<float, dist>); \
  PF_REGISTER_KERNEL(Gpu(op, DT_DOUBLE, "dtype"), RandomGpuOp<double, dist>)
PF_GPU_RANDOM("RandomUniform", 0);
PF_GPU_RANDOM("RandomNormal", 1);
PF_GPU_RANDOM("TruncatedNormal", 2);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_RANDOM
