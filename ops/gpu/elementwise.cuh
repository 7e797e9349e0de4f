// The device side of the generic elementwise launchers (Unary, Binary in ops/gpu/launch.h): one
// grid-stride kernel per functor; same-shape float32 takes a 16-byte vectorised path and
// broadcasting decodes each output index into both input offsets. A family's .cu instantiates
// the (functor, type) pairs its GPU kernels launch, inside namespace pf::gpu:
//
//   #include "placeflow/ops/gpu/elementwise.cuh"
//   #include "placeflow/ops/nn/nn_functors.cuh"
//   namespace pf::gpu {
//   PF_GPU_UNARY(ReluF, float)
//   PF_GPU_BINARY(ReluGradF, float)
//   }
#pragma once

#include <type_traits>

#include "placeflow/ops/gpu/common.cuh"

namespace pf::gpu {
namespace elementwise_internal {

struct alignas(16) Float4 {
  float v[4];
};

inline bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

__device__ __forceinline__ void Offsets(const BroadcastDims& d, int64_t i, int64_t* oa,
                                        int64_t* ob) {
  int64_t a = 0, b = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    const int64_t idx = i % d.dims[k];
    i /= d.dims[k];
    a += idx * d.a_strides[k];
    b += idx * d.b_strides[k];
  }
  *oa = a;
  *ob = b;
}

template <typename F, typename T, typename TOut>
__global__ void UnaryKernel(F f, const T* x, TOut* y, int64_t n) {
  PF_GRID_LOOP(i, n) { y[i] = f(x[i]); }
}

template <typename F, typename T, typename TOut>
__global__ void BinaryKernel(F f, const T* a, const T* b, TOut* out, int64_t n, BroadcastDims d) {
  PF_GRID_LOOP(i, n) {
    if (d.same_shape) {
      out[i] = f(a[i], b[i]);
    } else if (d.b_scalar) {
      out[i] = f(a[i], b[0]);
    } else if (d.a_scalar) {
      out[i] = f(a[0], b[i]);
    } else {
      int64_t oa, ob;
      Offsets(d, i, &oa, &ob);
      out[i] = f(a[oa], b[ob]);
    }
  }
}

template <typename F>
__global__ void BinaryFloat4Kernel(F f, const float* a, const float* b, float* out, int64_t n4) {
  PF_GRID_LOOP(i, n4) {
    const Float4 x = reinterpret_cast<const Float4*>(a)[i];
    const Float4 y = reinterpret_cast<const Float4*>(b)[i];
    Float4 z;
#pragma unroll
    for (int k = 0; k < 4; ++k) z.v[k] = f(x.v[k], y.v[k]);
    reinterpret_cast<Float4*>(out)[i] = z;
  }
}

// Launches `f` (a functor object, so it may carry parameters) over a binary broadcast.
template <typename F, typename T, typename TOut>
void LaunchBinary(F f, const T* a, const T* b, TOut* out, int64_t n, const BroadcastDims& d,
                  Stream s) {
  if (n == 0) return;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<TOut, float>) {
    if (d.same_shape && n % 4 == 0 && Aligned16(a) && Aligned16(b) && Aligned16(out)) {
      BinaryFloat4Kernel<<<Blocks(n / 4), kThreads, 0, s>>>(f, a, b, out, n / 4);
      return;
    }
  }
  BinaryKernel<<<Blocks(n), kThreads, 0, s>>>(f, a, b, out, n, d);
}

}  // namespace elementwise_internal

template <typename F, typename T, typename TOut>
void Unary(const T* x, TOut* y, int64_t n, Stream s) {
  if (n > 0) elementwise_internal::UnaryKernel<<<Blocks(n), kThreads, 0, s>>>(F(), x, y, n);
}

template <typename F, typename T, typename TOut>
void Binary(const T* a, const T* b, TOut* out, int64_t n, const BroadcastDims& d, Stream s) {
  elementwise_internal::LaunchBinary(F(), a, b, out, n, d, s);
}

}  // namespace pf::gpu

// Explicit instantiations, written inside namespace pf::gpu of the family's .cu.
#define PF_GPU_UNARY(F, T) template void Unary<F, T, T>(const T*, T*, int64_t, Stream);
#define PF_GPU_BINARY(F, T) \
  template void Binary<F, T, T>(const T*, const T*, T*, int64_t, const BroadcastDims&, Stream);
#define PF_GPU_COMPARE(F, T)                                                                 \
  template void Binary<F, T, bool>(const T*, const T*, bool*, int64_t, const BroadcastDims&, \
                                   Stream);
