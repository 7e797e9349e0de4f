// Launchers of the fused optimizer updates (apply_ops.cu, the formulas of apply_functors.cuh);
// scalars (lr, decay rates) are read from device memory.
#pragma once

#include "placeflow/ops/gpu/launch.h"

namespace pf::gpu {

template <typename T>
void ApplyGradientDescent(T* var, const T* lr, const T* grad, int64_t n, Stream stream);
template <typename T>
void ApplyMovingAverage(T* var, const T* decay, const T* value, int64_t n, Stream stream);
template <typename T>
void ApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum, bool nesterov,
                   int64_t n, Stream stream);
template <typename T>
void ApplyAdam(T* var, T* m, T* v, const T* beta1_power, const T* beta2_power, const T* lr,
               const T* beta1, const T* beta2, const T* epsilon, const T* grad, int64_t n,
               Stream stream);
template <typename T>
void ApplyRMSProp(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum,
                  const T* epsilon, const T* grad, int64_t n, Stream stream);
template <typename T>
void ApplyAdagrad(T* var, T* accum, const T* lr, const T* grad, int64_t n, Stream stream);

}  // namespace pf::gpu
