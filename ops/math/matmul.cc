// MatMul: float32 on oneDNN's sgemm (JIT-compiled for the CPU it finds), float64 on a plain
// blocked loop (used by gradient checks, not for speed). oneDNN runs single-threaded inside
// each call; the output's rows (or columns) are split across the intra-op pool instead, so
// inter-op and intra-op parallelism share the same threads and never oversubscribe the cores.
#include "placeflow/ops/math/matmul.h"

#include <dnnl.h>
#include <omp.h>

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
    // Split the larger output dimension across the pool; each shard is one BLAS call.
    const int64_t cost_per_row = 2 * n * k;
    if (m >= n) {
      ParallelFor(ctx, m, cost_per_row, [&](int64_t r0, int64_t r1) {
        const T* a0 = ta_ ? pa + r0 : pa + r0 * lda;
        Gemm(ta_, tb_, r1 - r0, n, k, a0, lda, pb, ldb, T(0), c + r0 * n, n);
      });
    } else {
      ParallelFor(ctx, n, 2 * m * k, [&](int64_t c0, int64_t c1) {
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
