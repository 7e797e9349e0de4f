// Elementwise device code: broadcasting binary ops, comparisons, unary math and activations,
// activation gradients, Cast, Fill, BiasAdd, AddN and Scale. Same-shape inputs take a
// vectorised path (4 elements per thread); broadcasting decodes the output index once.
#include <cmath>

#include "placeflow/ops/gpu/common.cuh"

namespace pf::gpu {
namespace {

template <typename T>
struct Vec4;
template <>
struct alignas(16) Vec4<float> {
  float v[4];
};

template <BinaryFn F, typename T>
__device__ __forceinline__ T Apply(T a, T b) {
  if constexpr (F == BinaryFn::kAdd) return a + b;
  if constexpr (F == BinaryFn::kSub) return a - b;
  if constexpr (F == BinaryFn::kMul) return a * b;
  if constexpr (F == BinaryFn::kDiv) return a / b;
  if constexpr (F == BinaryFn::kMax) return a > b ? a : b;
  if constexpr (F == BinaryFn::kMin) return a < b ? a : b;
  if constexpr (F == BinaryFn::kPow)
    return static_cast<T>(pow(static_cast<double>(a), static_cast<double>(b)));
  if constexpr (F == BinaryFn::kSquaredDiff) return (a - b) * (a - b);
  if constexpr (F == BinaryFn::kSigmoidXent && std::is_floating_point_v<T>) {
    // max(x, 0) - x z + log(1 + exp(-|x|)), with a = logits x, b = labels z
    return (a > T(0) ? a : T(0)) - a * b + log1p(exp(-fabs(a)));
  }
  return T();
}

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

template <typename TOut, typename T, typename Fn>
__global__ void BinaryKernel(const T* a, const T* b, TOut* out, int64_t n, BroadcastDims d, Fn fn) {
  PF_GRID_LOOP(i, n) {
    if (d.same_shape) {
      out[i] = fn(a[i], b[i]);
    } else if (d.b_scalar) {
      out[i] = fn(a[i], b[0]);
    } else if (d.a_scalar) {
      out[i] = fn(a[0], b[i]);
    } else {
      int64_t oa, ob;
      Offsets(d, i, &oa, &ob);
      out[i] = fn(a[oa], b[ob]);
    }
  }
}

template <BinaryFn F>
__global__ void BinaryVec4(const float* a, const float* b, float* out, int64_t n4) {
  PF_GRID_LOOP(i, n4) {
    Vec4<float> x = reinterpret_cast<const Vec4<float>*>(a)[i];
    Vec4<float> y = reinterpret_cast<const Vec4<float>*>(b)[i];
    Vec4<float> z;
#pragma unroll
    for (int k = 0; k < 4; ++k) z.v[k] = Apply<F, float>(x.v[k], y.v[k]);
    reinterpret_cast<Vec4<float>*>(out)[i] = z;
  }
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

template <BinaryFn F, typename T>
void BinaryImpl(const T* a, const T* b, T* out, int64_t n, const BroadcastDims& d, Stream s) {
  if constexpr (std::is_same_v<T, float>) {
    if (d.same_shape && n % 4 == 0 && Aligned16(a) && Aligned16(b) && Aligned16(out)) {
      BinaryVec4<F><<<Blocks(n / 4), kThreads, 0, s>>>(a, b, out, n / 4);
      return;
    }
  }
  auto fn = [] __device__(T x, T y) { return Apply<F, T>(x, y); };
  BinaryKernel<T><<<Blocks(n), kThreads, 0, s>>>(a, b, out, n, d, fn);
}

template <UnaryFn F, typename T>
__device__ __forceinline__ T ApplyUnary(T x) {
  if constexpr (F == UnaryFn::kNeg) return -x;
  if constexpr (F == UnaryFn::kSquare) return x * x;
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (F == UnaryFn::kSqrt) return sqrt(x);
    if constexpr (F == UnaryFn::kRsqrt) return T(1) / sqrt(x);
    if constexpr (F == UnaryFn::kExp) return exp(x);
    if constexpr (F == UnaryFn::kLog) return log(x);
    if constexpr (F == UnaryFn::kFloor) return floor(x);
    if constexpr (F == UnaryFn::kSigmoid) return T(1) / (T(1) + exp(-x));
    if constexpr (F == UnaryFn::kTanh) return tanh(x);
  }
  if constexpr (F == UnaryFn::kRelu) return x > T(0) ? x : T(0);
  return x;
}

template <UnaryFn F, typename T>
__global__ void UnaryKernel(const T* x, T* y, int64_t n) {
  PF_GRID_LOOP(i, n) { y[i] = ApplyUnary<F, T>(x[i]); }
}

template <typename T>
__global__ void ActGradKernel(ActivationGradFn f, const T* g, const T* y, T* out, int64_t n) {
  PF_GRID_LOOP(i, n) {
    const T v = y[i];
    if (f == ActivationGradFn::kRelu) {
      out[i] = v > T(0) ? g[i] : T(0);
    } else if (f == ActivationGradFn::kSigmoid) {
      out[i] = g[i] * v * (T(1) - v);
    } else {
      out[i] = g[i] * (T(1) - v * v);
    }
  }
}

template <typename T>
__global__ void ScaleKernel(const T* x, T scale, const T* scale_dev, T* out, int64_t n) {
  const T s = scale_dev ? *scale_dev : scale;
  PF_GRID_LOOP(i, n) { out[i] = s * x[i]; }
}

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

template <typename T>
__global__ void BiasAddKernel(const T* x, const T* bias, T* out, int64_t n, int64_t c) {
  PF_GRID_LOOP(i, n) { out[i] = x[i] + bias[i % c]; }
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
void Binary(BinaryFn f, const T* a, const T* b, T* out, int64_t n, const BroadcastDims& d,
            Stream s) {
  if (n == 0) return;
  switch (f) {
    case BinaryFn::kAdd:
      return BinaryImpl<BinaryFn::kAdd>(a, b, out, n, d, s);
    case BinaryFn::kSub:
      return BinaryImpl<BinaryFn::kSub>(a, b, out, n, d, s);
    case BinaryFn::kMul:
      return BinaryImpl<BinaryFn::kMul>(a, b, out, n, d, s);
    case BinaryFn::kDiv:
      return BinaryImpl<BinaryFn::kDiv>(a, b, out, n, d, s);
    case BinaryFn::kMax:
      return BinaryImpl<BinaryFn::kMax>(a, b, out, n, d, s);
    case BinaryFn::kMin:
      return BinaryImpl<BinaryFn::kMin>(a, b, out, n, d, s);
    case BinaryFn::kPow:
      return BinaryImpl<BinaryFn::kPow>(a, b, out, n, d, s);
    case BinaryFn::kSquaredDiff:
      return BinaryImpl<BinaryFn::kSquaredDiff>(a, b, out, n, d, s);
    case BinaryFn::kSigmoidXent:
      return BinaryImpl<BinaryFn::kSigmoidXent>(a, b, out, n, d, s);
  }
}

template <typename T>
void Compare(CompareFn f, const T* a, const T* b, bool* out, int64_t n, const BroadcastDims& d,
             Stream s) {
  if (n == 0) return;
  switch (f) {
    case CompareFn::kEqual:
      BinaryKernel<bool><<<Blocks(n), kThreads, 0, s>>>(a, b, out, n, d,
                                                        [] __device__(T x, T y) { return x == y; });
      break;
    case CompareFn::kLess:
      BinaryKernel<bool><<<Blocks(n), kThreads, 0, s>>>(a, b, out, n, d,
                                                        [] __device__(T x, T y) { return x < y; });
      break;
    case CompareFn::kGreater:
      BinaryKernel<bool><<<Blocks(n), kThreads, 0, s>>>(a, b, out, n, d,
                                                        [] __device__(T x, T y) { return x > y; });
      break;
  }
}

template <typename T>
void Unary(UnaryFn f, const T* x, T* y, int64_t n, Stream s) {
  if (n == 0) return;
#define PF_UNARY_CASE(F)                                                \
  case UnaryFn::F:                                                      \
    UnaryKernel<UnaryFn::F, T><<<Blocks(n), kThreads, 0, s>>>(x, y, n); \
    break;
  switch (f) {
    PF_UNARY_CASE(kNeg)
    PF_UNARY_CASE(kSquare)
    PF_UNARY_CASE(kSqrt)
    PF_UNARY_CASE(kRsqrt)
    PF_UNARY_CASE(kExp)
    PF_UNARY_CASE(kLog)
    PF_UNARY_CASE(kFloor)
    PF_UNARY_CASE(kRelu)
    PF_UNARY_CASE(kSigmoid)
    PF_UNARY_CASE(kTanh)
  }
#undef PF_UNARY_CASE
}

template <typename T>
void ActivationGrad(ActivationGradFn f, const T* g, const T* y, T* out, int64_t n, Stream s) {
  if (n > 0) ActGradKernel<<<Blocks(n), kThreads, 0, s>>>(f, g, y, out, n);
}

template <typename T>
void BroadcastScaled(const T* a, T scale, T* out, int64_t n, const BroadcastDims& d, Stream s) {
  if (n == 0) return;
  BinaryKernel<T><<<Blocks(n), kThreads, 0, s>>>(a, a, out, n, d,
                                                 [scale] __device__(T x, T) { return x * scale; });
}

template <typename T>
void Scale(const T* x, T scale, const T* scale_dev, T* out, int64_t n, Stream s) {
  if (n > 0) ScaleKernel<<<Blocks(n), kThreads, 0, s>>>(x, scale, scale_dev, out, n);
}

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

template <typename T>
void BiasAdd(const T* x, const T* bias, T* out, int64_t n, int64_t c, Stream s) {
  if (n > 0) BiasAddKernel<<<Blocks(n), kThreads, 0, s>>>(x, bias, out, n, c);
}

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

#define PF_INSTANTIATE_NUMBER(T)                                                                \
  template void Binary<T>(BinaryFn, const T*, const T*, T*, int64_t, const BroadcastDims&,      \
                          Stream);                                                              \
  template void Compare<T>(CompareFn, const T*, const T*, bool*, int64_t, const BroadcastDims&, \
                           Stream);                                                             \
  template void Unary<T>(UnaryFn, const T*, T*, int64_t, Stream);                               \
  template void Scale<T>(const T*, T, const T*, T*, int64_t, Stream);                           \
  template void BroadcastScaled<T>(const T*, T, T*, int64_t, const BroadcastDims&, Stream);     \
  template void Fill<T>(T*, int64_t, T, const T*, Stream);                                      \
  template void BiasAdd<T>(const T*, const T*, T*, int64_t, int64_t, Stream);                   \
  template void AddN<T>(const T* const*, int, T*, int64_t, Stream);
PF_INSTANTIATE_NUMBER(float)
PF_INSTANTIATE_NUMBER(double)
PF_INSTANTIATE_NUMBER(int32_t)
PF_INSTANTIATE_NUMBER(int64_t)
template void Fill<bool>(bool*, int64_t, bool, const bool*, Stream);
template void WeightedSum<float>(const float* const*, const double*, int, float*, int64_t, Stream);
template void WeightedSum<double>(const double* const*, const double*, int, double*, int64_t,
                                  Stream);
template void ActivationGrad<float>(ActivationGradFn, const float*, const float*, float*, int64_t,
                                    Stream);
template void ActivationGrad<double>(ActivationGradFn, const double*, const double*, double*,
                                     int64_t, Stream);

}  // namespace pf::gpu
