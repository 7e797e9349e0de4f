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

// out[i] = scale * a[broadcast offset of i]: reads only `a` (a binary launch with `a` passed
// twice would index the second operand by the output's shape, past `a`'s end, which the
// compiler only hides by dropping the unused load).
template <typename T>
__global__ void BroadcastScaledKernel(const T* a, T scale, T* out, int64_t n, BroadcastDims d) {
  PF_GRID_LOOP(i, n) {
    int64_t oa = i, unused;
    if (d.a_scalar) {
      oa = 0;
    } else if (!d.same_shape && !d.b_scalar) {
      elementwise_internal::Offsets(d, i, &oa, &unused);
    }
    out[i] = a[oa] * scale;
  }
}

}  // namespace

template <typename T>
void Scale(const T* x, T scale, const T* scale_dev, T* out, int64_t n, Stream s) {
  if (n > 0) ScaleKernel<<<Blocks(n), kThreads, 0, s>>>(x, scale, scale_dev, out, n);
}

template <typename T>
void BroadcastScaled(const T* a, T scale, T* out, int64_t n, const BroadcastDims& d, Stream s) {
  if (n > 0) BroadcastScaledKernel<<<Blocks(n), kThreads, 0, s>>>(a, scale, out, n, d);
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
  PF_GPU_COMPARE(NotEqualF, T)                                        \
  PF_GPU_COMPARE(LessEqualF, T)                                       \
  PF_GPU_COMPARE(GreaterEqualF, T)                                    \
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
