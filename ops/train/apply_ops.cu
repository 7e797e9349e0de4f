// Fused optimizer updates on the GPU: one pass over the variable and its slots, the same
// formulas as the CPU kernels (apply_ops.cc); scalars are read from device memory.
#include <cmath>

#include "placeflow/ops/gpu/common.cuh"

namespace pf::gpu {
namespace {

template <typename T>
__global__ void SgdKernel(T* var, const T* lr, const T* g, int64_t n) {
  const T a = *lr;
  PF_GRID_LOOP(i, n) { var[i] -= a * g[i]; }
}

template <typename T>
__global__ void MomentumKernel(T* var, T* accum, const T* lr, const T* g, const T* momentum,
                               bool nesterov, int64_t n) {
  const T a = *lr, mu = *momentum;
  PF_GRID_LOOP(i, n) {
    const T acc = mu * accum[i] + g[i];
    accum[i] = acc;
    var[i] -= nesterov ? a * (g[i] + mu * acc) : a * acc;
  }
}

template <typename T>
__global__ void AdamKernel(T* var, T* m, T* v, const T* b1p, const T* b2p, const T* lr, const T* b1,
                           const T* b2, const T* eps, const T* g, int64_t n) {
  const T lr_t = *lr * sqrt(T(1) - *b2p) / (T(1) - *b1p);
  const T one_b1 = T(1) - *b1, one_b2 = T(1) - *b2, e = *eps;
  PF_GRID_LOOP(i, n) {
    const T gi = g[i];
    const T mi = m[i] + (gi - m[i]) * one_b1;
    const T vi = v[i] + (gi * gi - v[i]) * one_b2;
    m[i] = mi;
    v[i] = vi;
    var[i] -= lr_t * mi / (sqrt(vi) + e);
  }
}

template <typename T>
__global__ void RMSPropKernel(T* var, T* ms, T* mom, const T* lr, const T* rho, const T* momentum,
                              const T* eps, const T* g, int64_t n) {
  const T a = *lr, r = *rho, mu = *momentum, e = *eps;
  PF_GRID_LOOP(i, n) {
    const T gi = g[i];
    const T msi = ms[i] + (gi * gi - ms[i]) * (T(1) - r);
    const T mo = mu * mom[i] + a * gi / sqrt(msi + e);
    ms[i] = msi;
    mom[i] = mo;
    var[i] -= mo;
  }
}

template <typename T>
__global__ void AdagradKernel(T* var, T* accum, const T* lr, const T* g, int64_t n) {
  const T a = *lr;
  PF_GRID_LOOP(i, n) {
    const T acc = accum[i] + g[i] * g[i];
    accum[i] = acc;
    var[i] -= a * g[i] / sqrt(acc);
  }
}

}  // namespace

template <typename T>
void ApplyGradientDescent(T* var, const T* lr, const T* grad, int64_t n, Stream s) {
  if (n > 0) SgdKernel<<<Blocks(n), kThreads, 0, s>>>(var, lr, grad, n);
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
  template void ApplyMomentum<T>(T*, T*, const T*, const T*, const T*, bool, int64_t, Stream); \
  template void ApplyAdam<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,     \
                             const T*, const T*, int64_t, Stream);                             \
  template void ApplyRMSProp<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,  \
                                int64_t, Stream);                                              \
  template void ApplyAdagrad<T>(T*, T*, const T*, const T*, int64_t, Stream);
PF_APPLY_INSTANTIATE(float)
PF_APPLY_INSTANTIATE(double)

}  // namespace pf::gpu
