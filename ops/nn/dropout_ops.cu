// Dropout on the GPU: the CPU kernel's draw (dropout_ops.cc), element i of call `call` from
// Philox counter (i, call, 0) under the node's key, one element per thread.
#include "placeflow/ops/gpu/common.cuh"
#include "placeflow/ops/nn/nn_launch.h"
#include "placeflow/ops/random/philox.cuh"

namespace pf::gpu {
namespace {

template <typename T>
__global__ void DropoutKernel(const T* x, T* out, T* mask, int64_t n, float rate, T scale,
                              uint32_t k0, uint32_t k1, uint32_t call) {
  PF_GRID_LOOP(i, n) {
    const float u = Philox4x32::Uniform(static_cast<uint64_t>(i), call, k0, k1);
    const T m = u >= rate ? scale : T(0);
    mask[i] = m;
    out[i] = x[i] * m;
  }
}

}  // namespace

template <typename T>
void Dropout(const T* x, T* out, T* mask, int64_t n, float rate, T scale, uint32_t key0,
             uint32_t key1, uint32_t call, Stream s) {
  if (n > 0) {
    DropoutKernel<<<Blocks(n), kThreads, 0, s>>>(x, out, mask, n, rate, scale, key0, key1, call);
  }
}

template void Dropout<float>(const float*, float*, float*, int64_t, float, float, uint32_t,
                             uint32_t, uint32_t, Stream);
template void Dropout<double>(const double*, double*, double*, int64_t, float, double, uint32_t,
                              uint32_t, uint32_t, Stream);

}  // namespace pf::gpu
