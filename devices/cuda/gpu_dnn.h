// cuDNN convolution, pooling and batch normalisation for the image ops' GPU kernels, behind a
// CUDA-free interface (plain descriptors from devices/gpu_dnn_plan.h, device pointers, Status).
// Everything is enqueued on the device's compute stream; scratch (padded inputs, transposed
// filters, workspaces) comes from the device's caching allocator and is freed when the call
// returns, which stream order makes safe. Empty tensors are a no-op.
//
//   pf::GpuConvDesc d{.dtype = pf::DT_FLOAT, .batch = 8, .in_h = 32, ...};
//   PF_RETURN_IF_ERROR(pf::GpuConvForward(gpu, d, x, filter_hwio, y));
//
// Filters are TensorFlow's HWIO on both sides of every call; the transposes to cuDNN's KRSC
// (NHWC) or KCRS (NCHW) happen inside. An asymmetric padding (SAME with an odd total, or
// EXPLICIT) runs on an explicitly padded scratch copy of the input with the symmetric remainder
// given to cuDNN, as TensorFlow does.
//
// A convolution cuDNN cannot run as asked (cuDNN 9 has almost no NHWC double algorithms) falls
// back: NHWC through NCHW copies, then direct CUDA kernels (GpuConvCandidates in
// devices/gpu_dnn_plan.h). The path and algorithm are chosen once per GPU, math mode, direction
// and GpuConvDesc, logged when a fallback was needed, and reported per call in `trace_label`
// (when not null) for the step trace: "conv backward data: cudnn NCHW via transpose algo=ALGO_1".
// PF_GPU_CONV_PATH=nchw or =direct starts the chain further down (tests of the fallbacks).
#pragma once

#include <string>

#include "placeflow/core/status.h"
#include "placeflow/devices/cuda/gpu_device.h"
#include "placeflow/devices/gpu_dnn_plan.h"

namespace pf {

// y = conv(x, filter). x [N,H,W,C] or [N,C,H,W] per d.layout; filter HWIO.
Status GpuConvForward(GpuDevice* gpu, const GpuConvDesc& d, const void* x, const void* filter,
                      void* y, std::string* trace_label = nullptr);
// dx = the gradient of conv with respect to its input (Conv2DBackpropInput).
Status GpuConvBackwardData(GpuDevice* gpu, const GpuConvDesc& d, const void* filter, const void* dy,
                           void* dx, std::string* trace_label = nullptr);
// dfilter (HWIO) = the gradient with respect to the filter (Conv2DBackpropFilter).
Status GpuConvBackwardFilter(GpuDevice* gpu, const GpuConvDesc& d, const void* x, const void* dy,
                             void* dfilter, std::string* trace_label = nullptr);

// Max pooling (CUDNN_POOLING_MAX_DETERMINISTIC, NaNs not propagated, as TensorFlow) or average
// pooling over the in-bounds elements (CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING).
Status GpuPoolForward(GpuDevice* gpu, const GpuPoolDesc& d, const void* x, void* y);
// dx from dy. Max pooling needs the forward's x and y (MaxPoolGrad's orig_input, orig_output);
// average pooling ignores them (nullptr is fine).
Status GpuPoolBackward(GpuDevice* gpu, const GpuPoolDesc& d, const void* x, const void* y,
                       const void* dy, void* dx);

// FusedBatchNorm, is_training = true (cudnnBatchNormalizationForwardTraining, spatial mode).
// scale, offset, mean_in, variance_in and the five [C] outputs have d.dtype. Writes:
//   batch_mean     = (1 - f) * mean_in + f * mean(x)            (f = exponential_avg_factor)
//   batch_variance = (1 - f) * variance_in + f * unbiased var(x)    (n / (n - 1), n = N*H*W;
//                                                                    1 when n == 1, as the CPU)
//   saved_mean     = mean(x)                                    (reserve_space_1)
//   saved_inv_std  = 1 / sqrt(biased var(x) + epsilon)          (reserve_space_2)
// With f == 1, mean_in and variance_in are not read (may be nullptr).
Status GpuBatchNormForwardTraining(GpuDevice* gpu, const GpuBatchNormDesc& d, const void* x,
                                   const void* scale, const void* offset, const void* mean_in,
                                   const void* variance_in, double exponential_avg_factor, void* y,
                                   void* batch_mean, void* batch_variance, void* saved_mean,
                                   void* saved_inv_std);
// FusedBatchNorm, is_training = false: y = scale * (x - mean) / sqrt(variance + eps) + offset.
// The optional outputs (nullptr: skipped) follow the CPU op: batch_mean = mean,
// batch_variance = variance, saved_mean = mean, saved_inv_std = 1 / sqrt(variance + eps).
Status GpuBatchNormForwardInference(GpuDevice* gpu, const GpuBatchNormDesc& d, const void* x,
                                    const void* scale, const void* offset, const void* mean,
                                    const void* variance, void* y, void* batch_mean,
                                    void* batch_variance, void* saved_mean, void* saved_inv_std);
// FusedBatchNormGrad. saved_mean / saved_inv_std are reserve_space_1 / _2 as above (in both
// modes). Training: cudnnBatchNormalizationBackward; inference: dx = dy * scale * inv_std,
// dscale = sum(dy * (x - mean) * inv_std), doffset = sum(dy) (a direct kernel).
Status GpuBatchNormBackward(GpuDevice* gpu, const GpuBatchNormDesc& d, bool is_training,
                            const void* dy, const void* x, const void* scale,
                            const void* saved_mean, const void* saved_inv_std, void* dx,
                            void* dscale, void* doffset);

// Whether PF_CUDNN_AUTOTUNE=1 (benchmark every algorithm once per shape) is set.
bool CudnnAutotuneEnabled();

}  // namespace pf
