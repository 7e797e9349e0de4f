// Reductions on the GPU: Sum/Mean/Max/Min over any axes, ArgMax, AddN and weighted sums. When
// the innermost input dim is reduced, one block reduces each output (coalesced reads, warp
// shuffles); otherwise each thread owns one output and walks the reduced dims (reads coalesced
// across threads).
#include <cfloat>
#include <climits>
#include <cmath>

#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/common.cuh"
#include "placeflow/ops/math/reduction_launch.h"

namespace pf::gpu {
namespace {

template <typename T>
__device__ __forceinline__ T Lowest() {
  if constexpr (std::is_floating_point_v<T>) {
    return -INFINITY;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return INT_MIN;
  } else {
    return LLONG_MIN;
  }
}
template <typename T>
__device__ __forceinline__ T Highest() {
  if constexpr (std::is_floating_point_v<T>) {
    return INFINITY;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return INT_MAX;
  } else {
    return LLONG_MAX;
  }
}

template <ReduceFn F, typename T>
__device__ __forceinline__ T Identity() {
  if constexpr (F == ReduceFn::kSum) return T(0);
  if constexpr (F == ReduceFn::kMax) return Lowest<T>();
  return Highest<T>();
}
template <ReduceFn F, typename T>
__device__ __forceinline__ T Combine(T a, T b) {
  if constexpr (F == ReduceFn::kSum) return a + b;
  if constexpr (F == ReduceFn::kMax) return b > a ? b : a;
  return b < a ? b : a;
}
template <ReduceFn F, typename T>
__device__ __forceinline__ T WarpReduce(T v) {
  if constexpr (F == ReduceFn::kSum) return WarpSum(v);
  if constexpr (F == ReduceFn::kMax) return WarpMax(v);
  return WarpMin(v);
}

__device__ __forceinline__ int64_t KeptOffset(const ReduceDims& d, int64_t o) {
  int64_t off = 0;
  for (int k = d.kept_rank - 1; k >= 0; --k) {
    off += (o % d.kept_dims[k]) * d.kept_strides[k];
    o /= d.kept_dims[k];
  }
  return off;
}
__device__ __forceinline__ int64_t ReducedOffset(const ReduceDims& d, int64_t r) {
  int64_t off = 0;
  for (int k = d.reduced_rank - 1; k >= 0; --k) {
    off += (r % d.reduced_dims[k]) * d.reduced_strides[k];
    r /= d.reduced_dims[k];
  }
  return off;
}

// Partial results combine in a tree (per thread, then warp shuffles, then across warps).
template <ReduceFn F, typename T>
__global__ void BlockPerOutput(const T* in, T* out, ReduceDims d, int64_t divisor) {
  for (int64_t o = blockIdx.x; o < d.num_out; o += gridDim.x) {
    const int64_t base = KeptOffset(d, o);
    T acc = Identity<F, T>();
    if (d.reduced_rank == 1 && d.reduced_strides[0] == 1) {
      for (int64_t r = threadIdx.x; r < d.num_reduced; r += blockDim.x)
        acc = Combine<F, T>(acc, in[base + r]);
    } else {
      for (int64_t r = threadIdx.x; r < d.num_reduced; r += blockDim.x) {
        acc = Combine<F, T>(acc, in[base + ReducedOffset(d, r)]);
      }
    }
    acc = BlockReduce(
        acc, [](T v) { return WarpReduce<F, T>(v); }, Identity<F, T>());
    if (threadIdx.x == 0) out[o] = F == ReduceFn::kSum ? acc / static_cast<T>(divisor) : acc;
  }
}

template <ReduceFn F, typename T>
__global__ void ThreadPerOutput(const T* in, T* out, ReduceDims d, int64_t divisor) {
  PF_GRID_LOOP(o, d.num_out) {
    const int64_t base = KeptOffset(d, o);
    T acc = Identity<F, T>();
    for (int64_t r = 0; r < d.num_reduced; ++r)
      acc = Combine<F, T>(acc, in[base + ReducedOffset(d, r)]);
    out[o] = F == ReduceFn::kSum ? acc / static_cast<T>(divisor) : acc;
  }
}

template <ReduceFn F, typename T>
void ReduceImpl(const T* in, T* out, const ReduceDims& d, int64_t divisor, Stream s) {
  const bool inner_reduced = d.reduced_rank > 0 && d.reduced_strides[d.reduced_rank - 1] == 1;
  if (inner_reduced || d.num_out < 1024) {
    const int64_t blocks = d.num_out < 65535 ? d.num_out : 65535;
    BlockPerOutput<F, T><<<static_cast<int>(blocks), kThreads, 0, s>>>(in, out, d, divisor);
  } else {
    ThreadPerOutput<F, T><<<Blocks(d.num_out), kThreads, 0, s>>>(in, out, d, divisor);
  }
}

template <typename T, typename Index>
__global__ void ArgMaxKernel(const T* in, Index* out, int64_t outer, int64_t axis, int64_t inner) {
  PF_GRID_LOOP(o, outer * inner) {
    const int64_t a = o / inner, b = o % inner;
    const T* p = in + a * axis * inner + b;
    Index best = 0;
    T v = p[0];
    for (int64_t k = 1; k < axis; ++k) {
      const T x = p[k * inner];
      if (x > v) {
        v = x;
        best = static_cast<Index>(k);
      }
    }
    out[o] = best;
  }
}

constexpr int kAddNChunk = 8;
template <typename T>
struct Pointers {
  const T* p[kAddNChunk];
};
struct Scales {
  double s[kAddNChunk];
};
template <typename T>
__global__ void AddNKernel(Pointers<T> in, int count, bool accumulate, T* out, int64_t n) {
  PF_GRID_LOOP(i, n) {
    T acc = accumulate ? out[i] : T(0);
    for (int k = 0; k < count; ++k) acc += in.p[k][i];
    out[i] = acc;
  }
}

template <typename T>
__global__ void WeightedSumKernel(Pointers<T> in, Scales sc, int count, bool accumulate, T* out,
                                  int64_t n) {
  PF_GRID_LOOP(i, n) {
    T acc = accumulate ? out[i] : T(0);
    for (int k = 0; k < count; ++k) acc += static_cast<T>(sc.s[k]) * in.p[k][i];
    out[i] = acc;
  }
}

}  // namespace

template <typename T>
void AddN(const T* const* inputs, int count, T* out, int64_t n, Stream s) {
  if (n == 0) return;
  for (int start = 0; start < count; start += kAddNChunk) {
    Pointers<T> p{};
    const int k = count - start < kAddNChunk ? count - start : kAddNChunk;
    for (int j = 0; j < k; ++j) p.p[j] = inputs[start + j];
    AddNKernel<<<Blocks(n), kThreads, 0, s>>>(p, k, start > 0, out, n);
  }
}

template <typename T>
void WeightedSum(const T* const* inputs, const double* scale, int count, T* out, int64_t n,
                 Stream s) {
  if (n == 0) return;
  for (int start = 0; start < count; start += kAddNChunk) {
    Pointers<T> p{};
    Scales sc{};
    const int k = count - start < kAddNChunk ? count - start : kAddNChunk;
    for (int j = 0; j < k; ++j) {
      p.p[j] = inputs[start + j];
      sc.s[j] = scale[start + j];
    }
    WeightedSumKernel<<<Blocks(n), kThreads, 0, s>>>(p, sc, k, start > 0, out, n);
  }
}

template <typename T>
void Reduce(ReduceFn f, const T* in, T* out, const ReduceDims& d, int64_t divisor, Stream s) {
  if (d.num_out == 0) return;
  if (d.num_reduced == 0) {
    Fill<T>(out, d.num_out, T(0), nullptr,
            s);  // an empty sum; Max/Min of nothing is rejected earlier
    return;
  }
  switch (f) {
    case ReduceFn::kSum:
      return ReduceImpl<ReduceFn::kSum, T>(in, out, d, divisor, s);
    case ReduceFn::kMax:
      return ReduceImpl<ReduceFn::kMax, T>(in, out, d, divisor, s);
    case ReduceFn::kMin:
      return ReduceImpl<ReduceFn::kMin, T>(in, out, d, divisor, s);
  }
}

template <typename T, typename Index>
void ArgMax(const T* in, Index* out, int64_t outer, int64_t axis, int64_t inner, Stream s) {
  if (outer * inner > 0)
    ArgMaxKernel<<<Blocks(outer * inner), kThreads, 0, s>>>(in, out, outer, axis, inner);
}

template void AddN<float>(const float* const*, int, float*, int64_t, Stream);
template void AddN<double>(const double* const*, int, double*, int64_t, Stream);
template void AddN<int32_t>(const int32_t* const*, int, int32_t*, int64_t, Stream);
template void AddN<int64_t>(const int64_t* const*, int, int64_t*, int64_t, Stream);
template void WeightedSum<float>(const float* const*, const double*, int, float*, int64_t, Stream);
template void WeightedSum<double>(const double* const*, const double*, int, double*, int64_t,
                                  Stream);
template void Reduce<float>(ReduceFn, const float*, float*, const ReduceDims&, int64_t, Stream);
template void Reduce<double>(ReduceFn, const double*, double*, const ReduceDims&, int64_t, Stream);
template void Reduce<int32_t>(ReduceFn, const int32_t*, int32_t*, const ReduceDims&, int64_t,
                              Stream);
template void Reduce<int64_t>(ReduceFn, const int64_t*, int64_t*, const ReduceDims&, int64_t,
                              Stream);
#define PF_ARGMAX(T)                                                                       \
  template void ArgMax<T, int32_t>(const T*, int32_t*, int64_t, int64_t, int64_t, Stream); \
  template void ArgMax<T, int64_t>(const T*, int64_t*, int64_t, int64_t, int64_t, Stream);
PF_ARGMAX(float)
PF_ARGMAX(double)
PF_ARGMAX(int32_t)
PF_ARGMAX(int64_t)

}  // namespace pf::gpu
