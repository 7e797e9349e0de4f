// Shared kernel helpers: parallel elementwise loops and NumPy broadcasting.
#pragma once

#include <cmath>
#include <type_traits>
#include <vector>

#include "placeflow/core/thread_pool.h"
#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/scope.h"
#include "placeflow/ops/simd/cpu_isa.h"
#include "placeflow/ops/simd/functor_map.h"

namespace pf {

inline ThreadPool* IntraOpPool(OpKernelContext* ctx) {
  return ctx->intra_op_pool() != nullptr ? ctx->intra_op_pool() : ThreadPool::Default();
}

// SimdFor: fn(i) for i in [begin, end), compiled for baseline x86-64 (SSE2), AVX2 and AVX-512
// and run as the widest that the CPU has and PF_MAX_CPU_ISA allows (ops/simd/cpu_isa.h): the
// straight-line loops (sums, optimizer updates, copies) vectorise in each, 1.4-1.7x faster with the
// wider vectors on L2-resident tensors (docs/benchmarks.md). The library compiles with
// -ffp-contract=off, so no copy fuses a multiply-add and every copy gives the same bits. What the
// compiler cannot vectorise (branches, exp, tanh) runs Highway kernels instead (vec_kernels.h).
// `pf-bench simd_targets` prints each family's ns per element under each cap, so scalar code
// cannot hide in one.
#if defined(__x86_64__)
template <typename Fn>
__attribute__((target("avx2"))) auto SimdCallAvx2(const Fn& fn) {
  return fn();
}
template <typename Fn>
__attribute__((target("avx512f"))) auto SimdCallAvx512(const Fn& fn) {
  return fn();
}
#endif
// fn(), its body inlined into the copy for the active ISA: for kernels whose loops are more
// than one SimdFor (interleaved sums).
template <typename Fn>
auto SimdCall(const Fn& fn) {
#if defined(__x86_64__)
  switch (simd::ActiveCpuIsa()) {
    case simd::CpuIsa::kAvx512:
      return SimdCallAvx512(fn);
    case simd::CpuIsa::kAvx2:
      return SimdCallAvx2(fn);
    case simd::CpuIsa::kSse4:
      break;
  }
#endif
  return fn();
}
template <typename Fn>
void SimdFor(int64_t begin, int64_t end, const Fn& fn) {
  SimdCall([&] {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

// Runs fn(begin, end) over [0, n) on the intra-op pool. Work too small to split (the pool
// splits from 80,000 cost units up: core/thread_pool.cc) runs here at once, without making the
// pool's std::function (a heap allocation for most lambdas): a scalar op costs a few hundred
// instructions less.
template <typename Fn>
void ParallelFor(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit, Fn&& fn) {
  constexpr int64_t kInlineWork = 40'000;
  if (n <= 0) return;
  if (n * std::max<int64_t>(cost_per_unit, 1) < kInlineWork) return fn(int64_t{0}, n);
  IntraOpPool(ctx)->ParallelFor(n, cost_per_unit, fn);
}

// fn(s) for each of `shards` whole pieces of work, each its own task on the intra-op pool (the
// caller runs one): for kernels that split their work themselves (a oneDNN call or a GEMM per
// shard).
template <typename Fn>
void ForEachShard(OpKernelContext* ctx, int64_t shards, Fn&& fn) {
  // A cost this high makes the pool give each unit its own task.
  ParallelFor(ctx, shards, int64_t{1} << 40, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) fn(s);
  });
}

// y[k] += x[k]: the Highway kernel for float (simd::Axpy), a loop for double (row sums of the
// LSTM's and the loop gradients' kernels).
inline void AddRow(const float* x, float* y, int64_t n) { simd::Axpy(1.f, x, y, n); }
inline void AddRow(const double* x, double* y, int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] += x[k];
}

// True when F on float has a Highway kernel (ops/simd/functor_map.h).
template <typename T, typename F>
inline constexpr bool kHasSimdUnary = std::is_same_v<T, float>&& simd::kUnaryFnOf<F>.has_value();
template <typename T, typename F>
inline constexpr bool kHasSimdBinary = std::is_same_v<T, float>&& simd::kBinaryFnOf<F>.has_value();

// out[i] = f(in[i]): a Highway kernel for float where F has one, else SimdFor's loop. The output
// takes over the input's buffer when nothing else holds it (ForwardInputOrAllocateOutput).
template <typename TIn, typename TOut, typename F>
Status UnaryElementwise(OpKernelContext* ctx, F f, int64_t cost = 1) {
  PF_ASSIGN_OR_RETURN(Tensor * out, ctx->ForwardInputOrAllocateOutput({0}, 0));
  const TIn* x = ctx->input(0).data<TIn>();
  TOut* y = out->data<TOut>();
  ParallelFor(ctx, out->num_elements(), cost, [&](int64_t b, int64_t e) {
    if constexpr (kHasSimdUnary<TIn, F> && std::is_same_v<TOut, float>) {
      simd::Unary(*simd::kUnaryFnOf<F>, x + b, y + b, e - b);
    } else {
      SimdFor(b, e, [&](int64_t i) { y[i] = f(x[i]); });
    }
  });
  return Status::OK();
}

// y[0, n) = f(a[i], b[i]), f(a[i], b[0]) or f(a[0], b[i]) (a_step, b_step: 1 or 0).
template <typename TIn, typename TOut, typename F>
void BinaryRun(F f, const TIn* a, int64_t a_step, const TIn* b, int64_t b_step, TOut* y,
               int64_t n) {
  if constexpr (kHasSimdBinary<TIn, F> && std::is_same_v<TOut, float>) {
    constexpr simd::BinaryFn fn = *simd::kBinaryFnOf<F>;
    if (a_step == 1 && b_step == 1) return simd::Binary(fn, a, b, y, n);
    if (a_step == 1) return simd::BinaryScalarB(fn, a, *b, y, n);
    if (b_step == 1) return simd::BinaryScalarA(fn, *a, b, y, n);
  }
  if (a_step == 1 && b_step == 1) {
    SimdFor(0, n, [&](int64_t i) { y[i] = f(a[i], b[i]); });
  } else if (a_step == 1) {
    const TIn bv = *b;
    SimdFor(0, n, [&](int64_t i) { y[i] = f(a[i], bv); });
  } else if (b_step == 1) {
    const TIn av = *a;
    SimdFor(0, n, [&](int64_t i) { y[i] = f(av, b[i]); });
  } else {
    const TOut v = f(*a, *b);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

// Broadcast plan for two inputs into the output: dims collapsed where possible, per-input
// strides (0 on broadcast dims).
struct BroadcastPlan {
  std::vector<int64_t> out_dims;
  std::vector<int64_t> a_strides;
  std::vector<int64_t> b_strides;
  bool same_shape = false;
  bool a_scalar = false;
  bool b_scalar = false;
};
BroadcastPlan MakeBroadcastPlan(const Shape& a, const Shape& b, const Shape& out);

// out = f(a, b) with NumPy broadcasting. The output takes over an input's buffer when nothing
// else holds it: an input with the output's element count is not broadcast, so element i of it
// is element i of the output.
template <typename TIn, typename TOut, typename F>
Status BinaryElementwise(OpKernelContext* ctx, F f, int64_t cost = 1) {
  PF_ASSIGN_OR_RETURN(Tensor * out, ctx->ForwardInputOrAllocateOutput({0, 1}, 0));
  const Tensor& ta = ctx->input(0);
  const Tensor& tb = ctx->input(1);
  const TIn* a = ta.data<TIn>();
  const TIn* b = tb.data<TIn>();
  TOut* y = out->data<TOut>();
  const int64_t n = out->num_elements();
  if (n == 0) return Status::OK();
  BroadcastPlan p = MakeBroadcastPlan(ta.shape(), tb.shape(), out->shape());
  if (p.same_shape || p.a_scalar || p.b_scalar) {
    const int64_t sa = p.a_scalar ? 0 : 1, sb = p.b_scalar ? 0 : 1;
    ParallelFor(ctx, n, cost, [&](int64_t s, int64_t e) {
      BinaryRun(f, a + s * sa, sa, b + s * sb, sb, y + s, e - s);
    });
  } else {
    // Rows of the innermost dim; the offsets of each row come from the outer index.
    const int rank = static_cast<int>(p.out_dims.size());
    const int64_t inner = p.out_dims[rank - 1];
    const int64_t sa = p.a_strides[rank - 1], sb = p.b_strides[rank - 1];
    const int64_t rows = n / inner;
    ParallelFor(ctx, rows, inner * cost, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        int64_t oa = 0, ob = 0, rem = r;
        for (int d = rank - 2; d >= 0; --d) {
          int64_t idx = rem % p.out_dims[d];
          rem /= p.out_dims[d];
          oa += idx * p.a_strides[d];
          ob += idx * p.b_strides[d];
        }
        BinaryRun(f, a + oa, sa, b + ob, sb, y + r * inner, inner);
      }
    });
  }
  return Status::OK();
}

// f(a, b) over the broadcast shape `full` into a fresh host tensor, for kernels that need a
// broadcast temporary (the general paths of the fused MSE loss and its gradient).
template <typename T, typename F>
StatusOr<Tensor> BroadcastTemporary(OpKernelContext* ctx, const Tensor& a, const Tensor& b,
                                    const Shape& full, F f) {
  Tensor out(DataTypeOf<T>(), full);
  const Tensor in[2] = {a, b};
  const DType dt = DataTypeOf<T>();
  OpKernelContext::Params params;
  params.inputs = in;
  params.num_inputs = 2;
  params.output_shapes = &full;
  params.outputs = &out;
  params.num_outputs = 1;
  params.output_dtypes = &dt;
  params.intra_op_pool = ctx->intra_op_pool();
  OpKernelContext sub(params);
  Status s = BinaryElementwise<T, T>(&sub, f);
  if (!s.ok()) return s;
  return out;
}

// F on 16-bit floats (the elementwise kernels of half and bfloat16): the operands as floats, a T
// result rounded to nearest even (a bool one, from a comparison, as it is).
template <typename T, typename F>
struct ViaFloat {
  template <typename... A>
  auto operator()(A... a) const {
    const auto r = F()(ToFloat(a)...);
    if constexpr (std::is_same_v<std::remove_cv_t<decltype(r)>, bool>)
      return r;
    else
      return FromFloat<T>(r);
  }
};

// Dtype lists used by registrations.
inline const std::vector<DType> kRealTypes = {DT_FLOAT, DT_DOUBLE};
inline const std::vector<DType> kNumberTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64};
// kNumberTypes with half and bfloat16, for ops whose 16-bit CPU kernels compute in float
// (ops/half_via_float.cc).
inline const std::vector<DType> kNumberAndHalfTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32,
                                                       DT_INT64, DT_HALF,   DT_BFLOAT16};
inline const std::vector<DType> kIndexTypes = {DT_INT32, DT_INT64};
// Every dtype but string: what GPU memory holds (Identity, _Send/_Recv kernels on a GPU).
inline const std::vector<DType> kNonStringTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32,    DT_INT64,
                                                   DT_BOOL,  DT_HALF,   DT_BFLOAT16, DT_UINT8,
                                                   DT_INT8,  DT_INT16};
// The dtypes most kernels compute on (VisitDType's).
inline const std::vector<DType> kComputableTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64,
                                                    DT_BOOL};
// TF's real number types that placeflow stores: the dtypes of the elementwise math and the
// reductions (docs/api.md "Dtypes"); half and bfloat16 compute in float.
inline const std::vector<DType> kRealNumberTypes = {
    DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8};
// The floating-point dtypes.
inline const std::vector<DType> kFloatingTypes = {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16};

// Reads an int attr or an int tensor's values.
std::vector<int64_t> ToInt64(const Tensor& t);

}  // namespace pf
