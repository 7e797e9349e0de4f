// Relu6, LeakyRelu, Softplus and their gradients on the GPU: the generic elementwise kernels
// over the CPU's functors (nn_functors.cuh); LeakyRelu's functors carry alpha, so they launch
// with a functor object.
#include "placeflow/ops/gpu/elementwise.cuh"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/nn/nn_launch.h"

namespace pf::gpu {

template <typename T>
void LeakyRelu(const T* x, T* y, int64_t n, float alpha, Stream s) {
  if (n > 0) {
    elementwise_internal::UnaryKernel<<<Blocks(n), kThreads, 0, s>>>(LeakyReluF{alpha}, x, y, n);
  }
}

template <typename T>
void LeakyReluGrad(const T* g, const T* x, T* out, int64_t n, float alpha, Stream s) {
  BroadcastDims same;
  same.same_shape = true;
  elementwise_internal::LaunchBinary(LeakyReluGradF{alpha}, g, x, out, n, same, s);
}

#define PF_GPU_ACTIVATIONS(T)                                       \
  PF_GPU_UNARY(Relu6F, T)                                           \
  PF_GPU_UNARY(SoftplusF, T)                                        \
  PF_GPU_BINARY(Relu6GradF, T)                                      \
  PF_GPU_BINARY(SoftplusGradF, T)                                   \
  template void LeakyRelu<T>(const T*, T*, int64_t, float, Stream); \
  template void LeakyReluGrad<T>(const T*, const T*, T*, int64_t, float, Stream);
PF_GPU_ACTIVATIONS(float)
PF_GPU_ACTIVATIONS(double)

}  // namespace pf::gpu
