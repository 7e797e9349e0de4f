// Checks and layout of FusedBatchNorm and FusedBatchNormGrad (batch_norm_ops.cc), shared by the
// shape functions, the CPU kernels and future cuDNN kernels. Unknown ranks and dims pass.
//
// Conventions both devices follow (cuDNN's, so its saved statistics can be used directly):
//  - training normalises with the batch mean and the biased batch variance; the batch_variance
//    output is the unbiased one (n/(n-1), n = N*H*W; 1 when n == 1), as TensorFlow returns;
//  - exponential_avg_factor f != 1 (training): batch_mean = (1-f)*mean + f*batch mean, and
//    batch_variance = (1-f)*variance + f*unbiased batch variance;
//  - inference: batch_mean and batch_variance are the mean and variance inputs;
//  - reserve_space_1 = the mean used and reserve_space_2 = 1/sqrt(variance used + epsilon), in
//    both modes (TensorFlow's CPU kernel keeps the variance in inference; here it never does).
#pragma once

#include <string>
#include <string_view>

#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"

namespace pf {

// x viewed as [outer, channels, inner]: NHWC is [N*H*W, C, 1], NCHW is [N, C, H*W]. -1 where
// unknown.
struct BatchNormGeometry {
  bool nchw = false;
  int64_t outer = -1, channels = -1, inner = -1;
  // Elements per channel (n of the formulas).
  int64_t count() const { return outer < 0 || inner < 0 ? -1 : outer * inner; }
};

// FusedBatchNorm(x, scale, offset, mean, variance): x 4-D, the others 1-D with x's channel count
// (mean and variance may have any length, [0] included, when training with f == 1).
Status ValidateFusedBatchNorm(const Shape& x, const Shape& scale, const Shape& offset,
                              const Shape& mean, const Shape& variance, bool is_training,
                              float exponential_avg_factor, const std::string& data_format,
                              BatchNormGeometry* geo);
// FusedBatchNormGrad(y_backprop, x, scale, reserve_space_1, reserve_space_2): y_backprop of x's
// shape, the others 1-D with x's channel count.
Status ValidateFusedBatchNormGrad(const Shape& y_backprop, const Shape& x, const Shape& scale,
                                  const Shape& reserve_space_1, const Shape& reserve_space_2,
                                  const std::string& data_format, BatchNormGeometry* geo);

}  // namespace pf
