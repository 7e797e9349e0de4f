// Shared kernel helpers: parallel elementwise loops and NumPy broadcasting.
#pragma once

#include <cmath>
#include <vector>

#include "placeflow/core/thread_pool.h"
#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/scope.h"

namespace pf {

inline ThreadPool* IntraOpPool(OpKernelContext* ctx) {
  return ctx->intra_op_pool() != nullptr ? ctx->intra_op_pool() : ThreadPool::Default();
}

// fn(i) for i in [begin, end), compiled for SSE2, AVX2 and AVX-512 and picked when the library
// loads (GCC's target_clones): a Debian build must run on any x86-64, yet elementwise loops on
// L2-resident tensors run 1.4-1.7x faster with the wider vectors (docs/benchmarks.md). The
// library compiles with -ffp-contract=off, so no clone fuses a multiply-add: every clone gives
// the same bits. Sanitizer builds and clang get the plain loop (ifunc resolvers run before the
// sanitizer runtimes start).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define PF_SIMD_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define PF_SIMD_CLONES
#endif
template <typename Fn>
PF_SIMD_CLONES void SimdFor(int64_t begin, int64_t end, const Fn& fn) {
  for (int64_t i = begin; i < end; ++i) fn(i);
}

// Runs fn(begin, end) over [0, n) on the intra-op pool.
template <typename Fn>
void ParallelFor(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit, Fn&& fn) {
  IntraOpPool(ctx)->ParallelFor(n, cost_per_unit, fn);
}

// out[i] = f(in[i]); the loops are simple enough for the compiler to vectorise.
template <typename TIn, typename TOut, typename F>
Status UnaryElementwise(OpKernelContext* ctx, F f, int64_t cost = 1) {
  PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
  const TIn* x = ctx->input(0).data<TIn>();
  TOut* y = out->data<TOut>();
  ParallelFor(ctx, out->num_elements(), cost,
              [&](int64_t b, int64_t e) { SimdFor(b, e, [&](int64_t i) { y[i] = f(x[i]); }); });
  return Status::OK();
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

// out = f(a, b) with NumPy broadcasting.
template <typename TIn, typename TOut, typename F>
Status BinaryElementwise(OpKernelContext* ctx, F f, int64_t cost = 1) {
  PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
  const Tensor& ta = ctx->input(0);
  const Tensor& tb = ctx->input(1);
  const TIn* a = ta.data<TIn>();
  const TIn* b = tb.data<TIn>();
  TOut* y = out->data<TOut>();
  const int64_t n = out->num_elements();
  if (n == 0) return Status::OK();
  BroadcastPlan p = MakeBroadcastPlan(ta.shape(), tb.shape(), out->shape());
  if (p.same_shape) {
    ParallelFor(ctx, n, cost, [&](int64_t s, int64_t e) {
      SimdFor(s, e, [&](int64_t i) { y[i] = f(a[i], b[i]); });
    });
  } else if (p.b_scalar) {
    const TIn bv = b[0];
    ParallelFor(ctx, n, cost, [&](int64_t s, int64_t e) {
      SimdFor(s, e, [&](int64_t i) { y[i] = f(a[i], bv); });
    });
  } else if (p.a_scalar) {
    const TIn av = a[0];
    ParallelFor(ctx, n, cost, [&](int64_t s, int64_t e) {
      SimdFor(s, e, [&](int64_t i) { y[i] = f(av, b[i]); });
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
        TOut* yr = y + r * inner;
        if (sa == 1 && sb == 1) {
          for (int64_t i = 0; i < inner; ++i) yr[i] = f(a[oa + i], b[ob + i]);
        } else if (sa == 1) {
          const TIn bv = b[ob];
          for (int64_t i = 0; i < inner; ++i) yr[i] = f(a[oa + i], bv);
        } else if (sb == 1) {
          const TIn av = a[oa];
          for (int64_t i = 0; i < inner; ++i) yr[i] = f(av, b[ob + i]);
        } else {
          for (int64_t i = 0; i < inner; ++i) yr[i] = f(a[oa], b[ob]);
        }
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

// Dtype lists used by registrations.
inline const std::vector<DType> kRealTypes = {DT_FLOAT, DT_DOUBLE};
inline const std::vector<DType> kNumberTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64};
inline const std::vector<DType> kIndexTypes = {DT_INT32, DT_INT64};
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
