// MatMul: float32 on oneDNN's sgemm (JIT-compiled for the CPU it finds), float64 on a plain
// blocked loop (used by gradient checks, not for speed). oneDNN runs single-threaded inside
// each call; the output's rows, its columns or the sum over k are split across the intra-op pool
// instead (ChooseGemmSplit), so inter-op and intra-op parallelism share the same threads and
// never oversubscribe the cores.
#include "placeflow/ops/math/matmul.h"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

Status ValidateMatMul(const Shape& a, const Shape& b, bool ta, bool tb) {
  const Shape* in[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    if (!in[i]->unknown_rank() && in[i]->rank() != 2) {
      return errors::InvalidArgument("In[", i, "] is not a matrix. Instead it has shape ",
                                     in[i]->ToString());
    }
  }
  if (a.unknown_rank() || b.unknown_rank()) return Status::OK();
  const int64_t ka = a.dim(ta ? 0 : 1), kb = b.dim(tb ? 1 : 0);
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return errors::InvalidArgument(
        "Matrix size-incompatible: In[0]: ", a.ToString(), ", In[1]: ", b.ToString(),
        ta || tb ? fmt::format(" (transpose_a={}, transpose_b={})", ta, tb) : "");
  }
  return Status::OK();
}

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // oneDNN parallelises with OpenMP; this thread's share is already one shard of the pool.
  thread_local bool single = (omp_set_num_threads(1), true);
  (void)single;
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc);
}
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    double* ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) ci[j] = beta == 0 ? 0.0 : beta * ci[j];
    for (int64_t p = 0; p < k; ++p) {
      const double av = ta ? a[p * lda + i] : a[i * lda + p];
      if (tb) {
        for (int64_t j = 0; j < n; ++j) ci[j] += av * b[j * ldb + p];
      } else {
        const double* bp = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) ci[j] += av * bp[j];
      }
    }
  }
}

namespace {

// True when oneDNN runs its AVX2 (or older) kernels: on this CPU or under ONEDNN_MAX_CPU_ISA.
bool OneDnnBelowAvx512() {
  static const bool below =
      (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core;
  return below;
}

}  // namespace

GemmSplit ChooseGemmSplit(int64_t m, int64_t n, int64_t k, int threads, bool avx2_sgemm) {
  // One contiguous shard per thread, no smaller than ~20k multiply-adds (about a wake-up's
  // cost). Fewer, larger shards than the pool's usual four per thread: oneDNN's sgemm packs the
  // other operand once per call, and an AVX2 sgemm call below ~260 rows or columns takes its
  // no-copy kernel, 1.2-1.4x slower on 32-byte-aligned operands such as tensors (AMD EPYC,
  // Zen 4; docs/benchmarks.md).
  constexpr int64_t kMinShardMacs = 20'000;
  GemmSplit split;
  split.dim = m >= n ? GemmSplit::kRows : GemmSplit::kCols;
  const int64_t along = std::max(m, n);
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t most = std::max<int64_t>(1, std::min<int64_t>(threads, along));
  split.shards = std::clamp<int64_t>(
      static_cast<int64_t>(std::min(macs / kMinShardMacs, static_cast<double>(most))), 1, most);
  if (split.shards == 1 || !avx2_sgemm) return split;
  // oneDNN 2.6's AVX2 sgemm chooses no-copy when 1/m + 1/n >= 0.0038 (gemm_driver.cpp). Where
  // each row or column shard would take it but the whole product would not, split the sum over
  // k instead (each shard keeps m x n; a weight gradient's tall k): 7.1-7.6 -> 5.8-6.1 ms for
  // mlp_seed000's 600x512x2000 on 2 threads.
  auto no_copy = [](double rows, double cols) { return 1 / rows + 1 / cols >= 0.0038; };
  const double shard = static_cast<double>(along) / split.shards;
  const bool shard_no_copy = m >= n ? no_copy(shard, n) : no_copy(m, shard);
  constexpr int64_t kMinDepthPerShard = 256;
  if (shard_no_copy && !no_copy(m, n) && k >= split.shards * kMinDepthPerShard)
    split.dim = GemmSplit::kDepth;
  return split;
}

namespace {

Status MatMulShape(ShapeContext& c) {
  const Shape& a = c.input(0);
  const Shape& b = c.input(1);
  const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
  PF_RETURN_IF_ERROR(ValidateMatMul(a, b, ta, tb));
  const int64_t m = a.unknown_rank() ? -1 : a.dim(ta ? 1 : 0);
  const int64_t n = b.unknown_rank() ? -1 : b.dim(tb ? 0 : 1);
  c.set_output(0, Shape{m, n});
  return Status::OK();
}

template <typename T>
class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(const Node& n)
      : OpKernel(n), ta_(n.attr<bool>("transpose_a")), tb_(n.attr<bool>("transpose_b")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateMatMul(a.shape(), b.shape(), ta_, tb_));
    const int64_t k = a.dim(ta_ ? 0 : 1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t m = out->dim(0), n = out->dim(1);
    if (m == 0 || n == 0) return Status::OK();
    T* c = out->data<T>();
    if (k == 0) {
      std::fill(c, c + m * n, T(0));
      return Status::OK();
    }
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const int64_t lda = a.dim(1), ldb = b.dim(1);
    const GemmSplit split = ChooseGemmSplit(m, n, k, IntraOpPool(ctx)->num_threads(),
                                            std::is_same_v<T, float> && OneDnnBelowAvx512());
    const int64_t shards = split.shards;
    auto part = [&](int64_t size, int64_t s) { return size * s / shards; };  // shard s's start
    if (split.dim == GemmSplit::kDepth) {
      // Shard s multiplies its slice of k into C (s = 0) or its own partial product; the
      // partials are added to C after.
      Tensor partials(out->dtype(), Shape{shards - 1, m, n});
      ForEachShard(ctx, shards, [&](int64_t s) {
        const int64_t k0 = part(k, s), k1 = part(k, s + 1);
        T* cs = s == 0 ? c : partials.data<T>() + (s - 1) * m * n;
        Gemm(ta_, tb_, m, n, k1 - k0, ta_ ? pa + k0 * lda : pa + k0, lda,
             tb_ ? pb + k0 : pb + k0 * ldb, ldb, T(0), cs, n);
      });
      ParallelFor(ctx, m * n, shards, [&](int64_t i0, int64_t i1) {
        for (int64_t s = 0; s + 1 < shards; ++s)
          AddRow(partials.data<T>() + s * m * n + i0, c + i0, i1 - i0);
      });
    } else if (split.dim == GemmSplit::kRows) {
      ForEachShard(ctx, shards, [&](int64_t s) {
        const int64_t r0 = part(m, s), r1 = part(m, s + 1);
        const T* a0 = ta_ ? pa + r0 : pa + r0 * lda;
        Gemm(ta_, tb_, r1 - r0, n, k, a0, lda, pb, ldb, T(0), c + r0 * n, n);
      });
    } else {
      ForEachShard(ctx, shards, [&](int64_t s) {
        const int64_t c0 = part(n, s), c1 = part(n, s + 1);
        const T* b0 = tb_ ? pb + c0 * ldb : pb + c0;
        Gemm(ta_, tb_, m, c1 - c0, k, pa, lda, b0, ldb, T(0), c + c0, n);
      });
    }
    return Status::OK();
  }

 private:
  bool ta_, tb_;
};

// TensorFlow's _MatMulGrad: for C = op(A) op(B), dA and dB in the same transposed forms.
PF_GRAD(MatMulGrad) {
  const bool ta = n.attr<bool>("transpose_a"), tb = n.attr<bool>("transpose_b");
  const Output a = n.input(0), b = n.input(1);
  if (!ta && !tb)
    *dx = {ops::MatMul(s, g[0], b, false, true), ops::MatMul(s, a, g[0], true, false)};
  else if (!ta && tb)
    *dx = {ops::MatMul(s, g[0], b, false, false), ops::MatMul(s, g[0], a, true, false)};
  else if (ta && !tb)
    *dx = {ops::MatMul(s, b, g[0], false, true), ops::MatMul(s, a, g[0], false, false)};
  else
    *dx = {ops::MatMul(s, b, g[0], true, true), ops::MatMul(s, g[0], a, true, true)};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("MatMul")
                   .Input("a", "T")
                   .Input("b", "T")
                   .Output("product", "T")
                   .Attr("transpose_a", false)
                   .Attr("transpose_b", false)
                   .TypeAttr("T", kFloatingTypes)
                   .SetGradient(MatMulGrad)
                   .SetShapeFn(MatMulShape));
PF_REGISTER_KERNEL(KernelDef("MatMul", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   MatMulOp<float>);
PF_REGISTER_KERNEL(KernelDef("MatMul", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   MatMulOp<double>);

}  // namespace

namespace ops {
Output MatMul(const Scope& s, Output a, Output b, bool transpose_a, bool transpose_b) {
  return NodeBuilder(s, "MatMul")
      .Input(a)
      .Input(b)
      .Attr("transpose_a", transpose_a)
      .Attr("transpose_b", transpose_b)
      .Finalize();
}
}  // namespace ops
}  // namespace pf
