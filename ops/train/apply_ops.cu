// Fused optimizer updates on the GPU: one pass over the variable and its slots with the CPU's
// formulas (apply_functors.cuh); each thread builds the update from the scalars in device
// memory.
#include "placeflow/ops/gpu/common.cuh"
#include "placeflow/ops/train/apply_functors.cuh"
#include "placeflow/ops/train/apply_launch.h"

namespace pf::gpu {
namespace {

template <typename T>
__global__ void SgdKernel(T* var, const T* lr, const T* g, int64_t n) {
  const GradientDescentUpdate<T> update{*lr};
  PF_GRID_LOOP(i, n) { update(var[i], g[i]); }
}

template <typename T>
__global__ void MovingAverageKernel(T* var, const T* decay, const T* value, int64_t n) {
  const MovingAverageUpdate<T> update(*decay);
  PF_GRID_LOOP(i, n) { update(var[i], value[i]); }
}

template <typename T>
__global__ void MomentumKernel(T* var, T* accum, const T* lr, const T* g, const T* momentum,
                               bool nesterov, int64_t n) {
  const MomentumUpdate<T> update{*lr, *momentum, nesterov};
  PF_GRID_LOOP(i, n) { update(var[i], accum[i], g[i]); }
}

template <typename T>
__global__ void AdamKernel(T* var, T* m, T* v, const T* b1p, const T* b2p, const T* lr, const T* b1,
                           const T* b2, const T* eps, const T* g, int64_t n) {
  const AdamUpdate<T> update(*b1p, *b2p, *lr, *b1, *b2, *eps);
  PF_GRID_LOOP(i, n) { update(var[i], m[i], v[i], g[i]); }
}

template <typename T>
__global__ void RMSPropKernel(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum,
                              const T* eps, const T* g, int64_t n) {
  const RMSPropUpdate<T> update(*lr, *rho, *momentum, *eps);
  PF_GRID_LOOP(i, n) { update(var[i], ms[i], mom[i], g[i]); }
}

template <typename T>
__global__ void AdagradKernel(T* var, T* accum, const T* lr, const T* g, int64_t n) {
  const AdagradUpdate<T> update{*lr};
  PF_GRID_LOOP(i, n) { update(var[i], accum[i], g[i]); }
}

}  // namespace

template <typename T>
void ApplyGradientDescent(T* var, const T* lr, const T* grad, int64_t n, Stream s) {
  if (n > 0) SgdKernel<<<Blocks(n), kThreads, 0, s>>>(var, lr, grad, n);
}
template <typename T>
void ApplyMovingAverage(T* var, const T* decay, const T* value, int64_t n, Stream s) {
  if (n > 0) MovingAverageKernel<<<Blocks(n), kThreads, 0, s>>>(var, decay, value, n);
}
template <typename T>
void ApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum, bool nesterov,
                   int64_t n, Stream s) {
  if (n > 0)
    MomentumKernel<<<Blocks(n), kThreads, 0, s>>>(var, accum, lr, grad, momentum, nesterov, n);
}
template <typename T>
void ApplyAdam(T* var, T* m, T* v, const T* b1p, const T* b2p, const T* lr, const T* b1,
               const T* b2, const T* eps, const T* grad, int64_t n, Stream s) {
  if (n > 0)
    AdamKernel<<<Blocks(n), kThreads, 0, s>>>(var, m, v, b1p, b2p, lr, b1, b2, eps, grad, n);
}
template <typename T>
void ApplyRMSProp(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum, const T* eps,
                  const T* grad, int64_t n, Stream s) {
  if (n > 0)
    RMSPropKernel<<<Blocks(n), kThreads, 0, s>>>(var, ms, mom, lr, rho, momentum, eps, grad, n);
}
template <typename T>
void ApplyAdagrad(T* var, T* accum, const T* lr, const T* grad, int64_t n, Stream s) {
  if (n > 0) AdagradKernel<<<Blocks(n), kThreads, 0, s>>>(var, accum, lr, grad, n);
}

#define PF_APPLY_INSTANTIATE(T)                                                                \
  template void ApplyGradientDescent<T>(T*, const T*, const T*, int64_t, Stream);              \
  template void ApplyMovingAverage<T>(T*, const T*, const T*, int64_t, Stream);                \
  template void ApplyMomentum<T>(T*, T*, const T*, const T*, const T*, bool, int64_t, Stream); \
  template void ApplyAdam<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,     \
                             const T*, const T*, int64_t, Stream);                             \
  template void ApplyRMSProp<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,  \
                                int64_t, Stream);                                              \
  template void ApplyAdagrad<T>(T*, T*, const T*, const T*, int64_t, Stream);
PF_APPLY_INSTANTIATE(float)
PF_APPLY_INSTANTIATE(double)

}  // namespace pf::gpu
