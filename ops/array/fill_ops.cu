// Cast, Fill and OneHot on the GPU: one thread per output element.
#include "placeflow/ops/array/array_launch.h"
#include "placeflow/ops/gpu/common.cuh"

namespace pf::gpu {
namespace {

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t n) {
  PF_GRID_LOOP(i, n) { y[i] = static_cast<To>(x[i]); }
}

template <typename From>
void CastFrom(const From* x, Type to, void* y, int64_t n, Stream s) {
  switch (to) {
    case Type::kF32:
      CastKernel<<<Blocks(n), kThreads, 0, s>>>(x, static_cast<float*>(y), n);
      break;
    case Type::kF64:
      CastKernel<<<Blocks(n), kThreads, 0, s>>>(x, static_cast<double*>(y), n);
      break;
    case Type::kI32:
      CastKernel<<<Blocks(n), kThreads, 0, s>>>(x, static_cast<int32_t*>(y), n);
      break;
    case Type::kI64:
      CastKernel<<<Blocks(n), kThreads, 0, s>>>(x, static_cast<int64_t*>(y), n);
      break;
    case Type::kBool:
      CastKernel<<<Blocks(n), kThreads, 0, s>>>(x, static_cast<bool*>(y), n);
      break;
  }
}

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value, const T* value_dev) {
  const T v = value_dev ? *value_dev : value;
  PF_GRID_LOOP(i, n) { out[i] = v; }
}

template <typename T, typename Index>
__global__ void OneHotKernel(const Index* idx, T* out, int64_t n, int64_t depth, T on, T off) {
  PF_GRID_LOOP(i, n * depth) {
    out[i] = static_cast<int64_t>(idx[i / depth]) == i % depth ? on : off;
  }
}

}  // namespace

void Cast(Type from, const void* x, Type to, void* y, int64_t n, Stream s) {
  if (n == 0) return;
  switch (from) {
    case Type::kF32:
      return CastFrom(static_cast<const float*>(x), to, y, n, s);
    case Type::kF64:
      return CastFrom(static_cast<const double*>(x), to, y, n, s);
    case Type::kI32:
      return CastFrom(static_cast<const int32_t*>(x), to, y, n, s);
    case Type::kI64:
      return CastFrom(static_cast<const int64_t*>(x), to, y, n, s);
    case Type::kBool:
      return CastFrom(static_cast<const bool*>(x), to, y, n, s);
  }
}

template <typename T>
void Fill(T* out, int64_t n, T value, const T* value_dev, Stream s) {
  if (n > 0) FillKernel<<<Blocks(n), kThreads, 0, s>>>(out, n, value, value_dev);
}

template <typename T, typename Index>
void OneHot(const Index* idx, T* out, int64_t n, int64_t depth, T on, T off, Stream s) {
  if (n * depth > 0)
    OneHotKernel<<<Blocks(n * depth), kThreads, 0, s>>>(idx, out, n, depth, on, off);
}

template void Fill<float>(float*, int64_t, float, const float*, Stream);
template void Fill<double>(double*, int64_t, double, const double*, Stream);
template void Fill<int32_t>(int32_t*, int64_t, int32_t, const int32_t*, Stream);
template void Fill<int64_t>(int64_t*, int64_t, int64_t, const int64_t*, Stream);
template void Fill<bool>(bool*, int64_t, bool, const bool*, Stream);
#define PF_ONE_HOT(T)                                                                   \
  template void OneHot<T, int32_t>(const int32_t*, T*, int64_t, int64_t, T, T, Stream); \
  template void OneHot<T, int64_t>(const int64_t*, T*, int64_t, int64_t, T, T, Stream);
PF_ONE_HOT(float)
PF_ONE_HOT(double)
PF_ONE_HOT(int32_t)
PF_ONE_HOT(int64_t)

}  // namespace pf::gpu
