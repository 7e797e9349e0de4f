// The nn ops on the GPU: activations and their gradients (the generic elementwise kernels over
// the CPU's formulas in nn_functors.cuh) and BiasAdd. Softmax runs on cuDNN (nn_ops_gpu.cc).
#include "placeflow/ops/gpu/elementwise.cuh"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/nn/nn_launch.h"

namespace pf::gpu {
namespace {

template <typename T>
__global__ void BiasAddKernel(const T* x, const T* bias, T* out, int64_t n, int64_t c) {
  PF_GRID_LOOP(i, n) { out[i] = x[i] + bias[i % c]; }
}

}  // namespace

template <typename T>
void BiasAdd(const T* x, const T* bias, T* out, int64_t n, int64_t c, Stream s) {
  if (n > 0) BiasAddKernel<<<Blocks(n), kThreads, 0, s>>>(x, bias, out, n, c);
}

template void BiasAdd<float>(const float*, const float*, float*, int64_t, int64_t, Stream);
template void BiasAdd<double>(const double*, const double*, double*, int64_t, int64_t, Stream);
template void BiasAdd<int32_t>(const int32_t*, const int32_t*, int32_t*, int64_t, int64_t, Stream);
template void BiasAdd<int64_t>(const int64_t*, const int64_t*, int64_t*, int64_t, int64_t, Stream);

#define PF_GPU_NN(T)             \
  PF_GPU_UNARY(ReluF, T)         \
  PF_GPU_UNARY(SigmoidF, T)      \
  PF_GPU_UNARY(TanhF, T)         \
  PF_GPU_BINARY(ReluGradF, T)    \
  PF_GPU_BINARY(SigmoidGradF, T) \
  PF_GPU_BINARY(TanhGradF, T)
PF_GPU_NN(float)
PF_GPU_NN(double)

}  // namespace pf::gpu
