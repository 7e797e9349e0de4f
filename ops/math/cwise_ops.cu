// Elementwise math on the GPU: the generic kernels of ops/gpu/elementwise.cuh instantiated for
// the formulas the CPU kernels run (cwise_functors.cuh), and Scale / BroadcastScaled, which the
// loss and gradient kernels use.
#include "placeflow/ops/gpu/elementwise.cuh"
#include "placeflow/ops/math/cwise_functors.cuh"
#include "placeflow/ops/math/cwise_launch.h"

namespace pf::gpu {
namespace {

template <typename T>
__global__ void ScaleKernel(const T* x, T scale, const T* scale_dev, T* out, int64_t n) {
  const T s = scale_dev ? *scale_dev : scale;
  PF_GRID_LOOP(i, n) { out[i] = s * x[i]; }
}

// x * scale for BroadcastScaled (which reads only the first operand).
template <typename T>
struct ScaleFirst {
  T scale;
  __device__ T operator()(T x, T) const { return x * scale; }
};

}  // namespace

template <typename T>
void Scale(const T* x, T scale, const T* scale_dev, T* out, int64_t n, Stream s) {
  if (n > 0) ScaleKernel<<<Blocks(n), kThreads, 0, s>>>(x, scale, scale_dev, out, n);
}

template <typename T>
void BroadcastScaled(const T* a, T scale, T* out, int64_t n, const BroadcastDims& d, Stream s) {
  elementwise_internal::LaunchBinary(ScaleFirst<T>{scale}, a, a, out, n, d, s);
}

// The (formula, type) pairs cwise_ops_gpu.cc registers; also used by other families (AssignAdd
// and AssignSub use AddF/SubF, the MSE gradient SubF, L2Loss SquareF).
#define PF_GPU_CWISE_NUMBER(T)                                        \
  PF_GPU_BINARY(AddF, T)                                              \
  PF_GPU_BINARY(SubF, T)                                              \
  PF_GPU_BINARY(MulF, T)                                              \
  PF_GPU_BINARY(MaxF, T)                                              \
  PF_GPU_BINARY(MinF, T)                                              \
  PF_GPU_COMPARE(EqualF, T)                                           \
  PF_GPU_COMPARE(LessF, T)                                            \
  PF_GPU_COMPARE(GreaterF, T)                                         \
  PF_GPU_UNARY(NegF, T)                                               \
  PF_GPU_UNARY(SquareF, T)                                            \
  template void Scale<T>(const T*, T, const T*, T*, int64_t, Stream); \
  template void BroadcastScaled<T>(const T*, T, T*, int64_t, const BroadcastDims&, Stream);
#define PF_GPU_CWISE_REAL(T) \
  PF_GPU_BINARY(DivF, T)     \
  PF_GPU_BINARY(PowF, T)     \
  PF_GPU_UNARY(SqrtF, T)     \
  PF_GPU_UNARY(RsqrtF, T)    \
  PF_GPU_UNARY(ExpF, T)      \
  PF_GPU_UNARY(LogF, T)      \
  PF_GPU_UNARY(FloorF, T)
PF_GPU_CWISE_NUMBER(float)
PF_GPU_CWISE_NUMBER(double)
PF_GPU_CWISE_NUMBER(int32_t)
PF_GPU_CWISE_NUMBER(int64_t)
PF_GPU_CWISE_REAL(float)
PF_GPU_CWISE_REAL(double)

}  // namespace pf::gpu
