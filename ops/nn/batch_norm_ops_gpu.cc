// GPU kernels of FusedBatchNorm and FusedBatchNormGrad (batch_norm_ops.cc) on cuDNN through
// devices/cuda/gpu_dnn.h, with the CPU kernels' checks (batch_norm_ops.h) and conventions, which
// are cuDNN's own: batch_variance unbiased, reserve_space_1 = the mean used, reserve_space_2 =
// 1/sqrt(variance used + epsilon) in both modes; inference copies mean and variance into
// batch_mean and batch_variance. Training with exponential_avg_factor == 1 never reads the mean
// and variance inputs (they may be empty [0]); otherwise they are blended as on the CPU.
#include <algorithm>

#include "placeflow/devices/cuda/gpu_dnn.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/nn/batch_norm_ops.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

GpuBatchNormDesc BnDesc(DType dtype, const Shape& x, const BatchNormGeometry& g, float epsilon) {
  GpuBatchNormDesc d;
  d.dtype = dtype;
  d.layout = g.nchw ? DnnLayout::kNCHW : DnnLayout::kNHWC;
  d.batch = x.dim(0);
  d.height = x.dim(g.nchw ? 2 : 1);
  d.width = x.dim(g.nchw ? 3 : 2);
  d.channels = g.channels;
  // The CPU adds the float attr converted to T: the same value in both precisions.
  d.epsilon = static_cast<double>(epsilon);
  return d;
}

template <typename T>
class FusedBatchNormGpuOp : public GpuOpKernel {
 public:
  explicit FusedBatchNormGpuOp(const Node& n)
      : GpuOpKernel(n),
        epsilon_(n.attr<float>("epsilon")),
        factor_(n.attr<float>("exponential_avg_factor")),
        is_training_(n.attr<bool>("is_training")),
        data_format_(n.attr<std::string>("data_format")) {}

  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& x = ctx->input(0);
    BatchNormGeometry g;
    PF_RETURN_IF_ERROR(ValidateFusedBatchNorm(
        x.shape(), ctx->input(1).shape(), ctx->input(2).shape(), ctx->input(3).shape(),
        ctx->input(4).shape(), is_training_, factor_, data_format_, &g));
    void* out[5];
    for (int i = 0; i < 5; ++i) {
      PF_ASSIGN_OR_RETURN(Tensor * t, ctx->AllocateOutput(i));
      out[i] = t->raw_data();
    }
    if (g.channels == 0) return Status::OK();  // every output is empty
    const GpuBatchNormDesc d = BnDesc(DataTypeOf<T>(), x.shape(), g, epsilon_);
    const void* scale = ctx->input(1).raw_data();
    const void* offset = ctx->input(2).raw_data();
    if (is_training_) {
      // The same float comparison as ValidateFusedBatchNorm's: with f == 1 the statistics
      // inputs may be [0] and are not read (nullptr tells the wrapper so).
      const bool blend = factor_ != 1.f;
      const void* mean_in = blend ? ctx->input(3).raw_data() : nullptr;
      const void* variance_in = blend ? ctx->input(4).raw_data() : nullptr;
      return GpuBatchNormForwardTraining(gpu, d, x.raw_data(), scale, offset, mean_in, variance_in,
                                         static_cast<double>(factor_), out[0], out[1], out[2],
                                         out[3], out[4]);
    }
    return GpuBatchNormForwardInference(gpu, d, x.raw_data(), scale, offset,
                                        ctx->input(3).raw_data(), ctx->input(4).raw_data(), out[0],
                                        out[1], out[2], out[3], out[4]);
  }

 private:
  float epsilon_, factor_;
  bool is_training_;
  std::string data_format_;
};

// Like the CPU kernel, epsilon is unused: reserve_space_2 already holds the inverse std (cuDNN's
// backward reads the saved statistics when given them). reserve_space_3 and _4 are empty [0].
template <typename T>
class FusedBatchNormGradGpuOp : public GpuOpKernel {
 public:
  explicit FusedBatchNormGradGpuOp(const Node& n)
      : GpuOpKernel(n),
        epsilon_(n.attr<float>("epsilon")),
        is_training_(n.attr<bool>("is_training")),
        data_format_(n.attr<std::string>("data_format")) {}

  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    BatchNormGeometry g;
    PF_RETURN_IF_ERROR(ValidateFusedBatchNormGrad(dy.shape(), x.shape(), ctx->input(2).shape(),
                                                  ctx->input(3).shape(), ctx->input(4).shape(),
                                                  data_format_, &g));
    void* out[5];
    for (int i = 0; i < 5; ++i) {
      PF_ASSIGN_OR_RETURN(Tensor * t, ctx->AllocateOutput(i));
      out[i] = t->raw_data();
    }
    if (g.channels == 0) return Status::OK();  // every output is empty
    // The wrappers refuse a negative epsilon; unused here, so it is not an error (as on the CPU).
    const GpuBatchNormDesc d = BnDesc(DataTypeOf<T>(), x.shape(), g, std::max(epsilon_, 0.f));
    return GpuBatchNormBackward(gpu, d, is_training_, dy.raw_data(), x.raw_data(),
                                ctx->input(2).raw_data(), ctx->input(3).raw_data(),
                                ctx->input(4).raw_data(), out[0], out[1], out[2]);
  }

 private:
  float epsilon_;
  bool is_training_;
  std::string data_format_;
};

PF_REGISTER_KERNEL(Gpu("FusedBatchNorm", DT_FLOAT).TypeConstraint("U", {DT_FLOAT}),
                   FusedBatchNormGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("FusedBatchNorm", DT_DOUBLE).TypeConstraint("U", {DT_DOUBLE}),
                   FusedBatchNormGpuOp<double>);
PF_REGISTER_KERNEL(Gpu("FusedBatchNormGrad", DT_FLOAT).TypeConstraint("U", {DT_FLOAT}),
                   FusedBatchNormGradGpuOp<float>);
PF_REGISTER_KERNEL(Gpu("FusedBatchNormGrad", DT_DOUBLE).TypeConstraint("U", {DT_DOUBLE}),
                   FusedBatchNormGradGpuOp<double>);

}  // namespace
}  // namespace pf
