// float32 batch normalization on oneDNN for the CPU kernels of batch_norm_ops.cc. Kept apart so
// that only batch_norm_onednn.cc includes dnnl.hpp.
#pragma once

#include <memory>

#include "placeflow/graph/kernel.h"
#include "placeflow/ops/nn/batch_norm_ops.h"

namespace pf {

// One per kernel: caches the primitives per shape. x, y, dy and dx are [N,C,H,W] in the
// tensor's own layout (nhwc or nchw); the per-channel arrays have C elements. Shapes must be
// fully known with no empty tensor.
class DnnlBatchNorm {
 public:
  DnnlBatchNorm();
  ~DnnlBatchNorm();
  // Training: writes the batch mean and the biased batch variance into mean and variance.
  // Inference: normalises with mean and variance as given.
  Status Forward(OpKernelContext* ctx, const Shape& x_shape, bool nchw, bool training,
                 float epsilon, const float* x, const float* scale, const float* offset,
                 float* mean, float* variance, float* y);
  // dx (training: through the batch statistics; inference: dy * scale * inv_std), dscale and
  // doffset from the saved mean and inverse standard deviation.
  Status Backward(OpKernelContext* ctx, const Shape& x_shape, bool nchw, bool training,
                  const float* dy, const float* x, const float* scale, const float* mean,
                  const float* inv_std, float* dx, float* dscale, float* doffset);

 private:
  struct Cache;
  std::unique_ptr<Cache> cache_;
};

// Whether PF_BATCHNORM_ONEDNN=1 asks the float32 NHWC kernels for oneDNN instead of the direct
// loops. Off by default: one oneDNN call spans the batch on OpenMP threads, which stalls when
// towers or other kernels hold the cores (mobilenet_v2_small on 2 towers, 2 cores: 393
// examples/s against 859 with the loops; alone, one tower: the same 175 ms/step). ctest runs
// the [batchnorm] cases both ways.
bool BatchNormUseOneDnn();

}  // namespace pf
