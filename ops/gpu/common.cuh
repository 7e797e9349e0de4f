// Device-side helpers shared by the .cu files (nvcc only; no project headers).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "placeflow/ops/gpu/launch.h"

namespace pf::gpu {

constexpr int kThreads = 256;

inline int Blocks(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b > 65535LL * 32) b = 65535LL * 32;  // grid-stride loops cover the rest
  return static_cast<int>(b < 1 ? 1 : b);
}

#define PF_GRID_LOOP(i, n)                                                               \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

template <typename T>
__device__ __forceinline__ T WarpSum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
template <typename T>
__device__ __forceinline__ T WarpMax(T v) {
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_down_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}
template <typename T>
__device__ __forceinline__ T WarpMin(T v) {
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_down_sync(0xffffffffu, v, o);
    v = w < v ? w : v;
  }
  return v;
}

// Block-wide reduction of one value per thread (blockDim.x a multiple of 32, at most 1024);
// the result is valid in every thread.
template <typename T, typename Op>
__device__ T BlockReduce(T v, Op op, T identity) {
  __shared__ char smem_raw[32 * sizeof(double)];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = op(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  T w = threadIdx.x < warps ? smem[threadIdx.x] : identity;
  if (warp == 0) w = op(w);
  __syncthreads();
  if (threadIdx.x == 0) smem[0] = w;
  __syncthreads();
  T r = smem[0];
  __syncthreads();
  return r;
}

}  // namespace pf::gpu
