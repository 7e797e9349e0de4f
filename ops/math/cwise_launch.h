// Launchers of the math family's elementwise device code (cwise_ops.cu) besides the generic
// Unary/Binary of ops/gpu/launch.h, which cwise_ops.cu instantiates for the functors of
// cwise_functors.cuh (Add ... Pow, Equal/Less/Greater, Neg ... Floor).
#pragma once

#include "placeflow/ops/gpu/launch.h"

namespace pf::gpu {

// out = scale * x (scale read from device memory when `scale_on_device` is set).
template <typename T>
void Scale(const T* x, T scale, const T* scale_on_device, T* out, int64_t n, Stream stream);
// out[i] = scale * a[broadcast offset of i] (b's strides are ignored).
template <typename T>
void BroadcastScaled(const T* a, T scale, T* out, int64_t n, const BroadcastDims& dims,
                     Stream stream);

}  // namespace pf::gpu
