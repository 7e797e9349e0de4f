// _FusedMatMul (TensorFlow's name): MatMul, then BiasAdd, then optionally Relu, in one kernel.
// Nobody builds it: the session's remapper (executor/remapper.h) puts it in place of
// MatMul -> BiasAdd [-> Relu] at prepare time, after placement and gradients, so it has no
// gradient. The bias is [N], or a scalar (an Add of a scalar the remapper read as a bias, as the
// seed models' `x*w + b` with a scalar b). float32 runs one oneDNN matmul primitive with the bias
// and an eltwise_relu post-op (the bias and the activation are applied while the output tile is
// still in registers); float64 runs loops (the gradient checker runs with the rewrite on, too).
// bfloat16 MatMul and _FusedMatMul (mixed precision, docs/mixed_precision.md) run the same
// primitive in bfloat16 on a CPU with native bfloat16 math (AVX512-BF16, AMX), else in float32
// through ops/half_via_float.h.
//
// Threading: the output's rows are split over the intra-op pool as MatMul does (matmul.cc), each
// shard a primitive at one OpenMP thread. PF_FUSED_MATMUL_OMP=1 instead runs one primitive on
// the whole output with oneDNN's own OpenMP threads: faster for a GEMM alone, but 1.2-1.6x
// slower for a whole mnist_mlp step on an idle machine, where the OpenMP team and the pool's
// threads fight over the cores (docs/benchmarks.md), as batch norm's oneDNN path did.
#include <omp.h>

#include <array>
#include <cstdlib>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "placeflow/core/logging.h"
#include "placeflow/ops/half_via_float.h"
#include "placeflow/ops/math/matmul.h"
#include "placeflow/ops/nn/dnnl_util.h"
#include "placeflow/ops/nn/nn_ops.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

using dnnl::memory;

// The post-ops this kernel knows, in the order they apply after the product.
Status ParseFusedOps(const std::vector<std::string>& fused_ops, bool* relu) {
  const bool bias = !fused_ops.empty() && fused_ops[0] == "BiasAdd";
  *relu = fused_ops.size() == 2 && fused_ops[1] == "Relu";
  if (!bias || fused_ops.size() > 2 || (fused_ops.size() == 2 && !*relu)) {
    return errors::Unimplemented("_FusedMatMul supports fused_ops [BiasAdd] and [BiasAdd, Relu], ",
                                 "got [", fmt::format("{}", fmt::join(fused_ops, ", ")), "]");
  }
  return Status::OK();
}

// A scalar broadcasts over the whole product; otherwise BiasAdd's rule ([N] for [M, N]).
Status ValidateBias(const Shape& product, const Shape& bias) {
  if (!bias.unknown_rank() && bias.rank() == 0) return Status::OK();
  return ValidateBiasAdd(product, bias);
}

Status FusedMatMulShape(ShapeContext& c) {
  bool relu = false;
  PF_RETURN_IF_ERROR(ParseFusedOps(c.attr<std::vector<std::string>>("fused_ops"), &relu));
  const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
  const Shape& a = c.input(0);
  const Shape& b = c.input(1);
  PF_RETURN_IF_ERROR(ValidateMatMul(a, b, ta, tb));
  const Shape out{a.unknown_rank() ? -1 : a.dim(ta ? 1 : 0),
                  b.unknown_rank() ? -1 : b.dim(tb ? 0 : 1)};
  PF_RETURN_IF_ERROR(ValidateBias(out, c.input(2)));
  c.set_output(0, out);
  return Status::OK();
}

bool MatMulUseOmp() {
  static const bool omp = EnvSwitchOn("PF_FUSED_MATMUL_OMP");
  return omp;
}

struct MatMulPrim {
  dnnl::matmul prim;
  memory::desc src, wei, bias, dst, scratch;
};

// rows, n, k, lda, ldb, transpose_a, transpose_b, with a bias (0 or 1), bfloat16 (0 or 1)
using MatMulKey = std::array<int64_t, 9>;

std::unique_ptr<MatMulPrim> MakePrim(const MatMulKey& key, bool relu) {
  const auto [rows, n, k, lda, ldb, ta, tb, bias, bf16] = key;
  const auto dt = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  auto p = std::make_unique<MatMulPrim>();
  p->src = memory::desc({rows, k}, dt, ta ? memory::dims{1, lda} : memory::dims{lda, 1});
  p->wei = memory::desc({k, n}, dt, tb ? memory::dims{1, ldb} : memory::dims{ldb, 1});
  // Always [1, N]: a [1, 1] bias makes oneDNN 2.7 fall back to its reference matmul, hundreds
  // of times slower; a scalar is spread into a row first.
  if (bias) p->bias = memory::desc({1, n}, dt, memory::dims{n, 1});
  p->dst = memory::desc({rows, n}, dt, memory::dims{n, 1});
  dnnl::primitive_attr attr;
  // Shards run the same primitive at once: each brings its own scratchpad (the library's
  // shared one is not safe for concurrent calls in Debian's oneDNN build).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(po);
  }
  std::unique_lock<std::mutex> lock = LockDnnlCreation();
  dnnl::matmul::primitive_desc pd(bias ? dnnl::matmul::desc(p->src, p->wei, p->bias, p->dst)
                                       : dnnl::matmul::desc(p->src, p->wei, p->dst),
                                  attr, DnnlEngine());
  // oneDNN's reference kernels are correct but hundreds of times slower: say so (once per
  // shape, as primitives are cached).
  if (std::string impl = pd.impl_info_str(); impl.rfind("ref", 0) == 0) {
    PF_LOG_WARN("_FusedMatMul: oneDNN chose its reference matmul ({}) for [{}, {}] x [{}, {}]",
                impl, rows, k, k, n);
  }
  p->prim = dnnl::matmul(pd);
  p->scratch = pd.scratchpad_desc();
  return p;
}

// The attrs and the checks every dtype's kernel shares. MatMul (bfloat16) has no bias.
class FusedMatMulBase : public OpKernel {
 public:
  explicit FusedMatMulBase(const Node& n)
      : OpKernel(n),
        ta_(n.attr<bool>("transpose_a")),
        tb_(n.attr<bool>("transpose_b")),
        fused_(n.op() == "_FusedMatMul") {
    if (fused_) ThrowIfError(ParseFusedOps(n.attr<std::vector<std::string>>("fused_ops"), &relu_));
  }

 protected:
  // Checks a, b and the bias against each other, then allocates the output.
  StatusOr<Tensor*> CheckAndAllocate(OpKernelContext* ctx) {
    const Tensor& a = ctx->input(0);
    PF_RETURN_IF_ERROR(ValidateMatMul(a.shape(), ctx->input(1).shape(), ta_, tb_));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (fused_) PF_RETURN_IF_ERROR(ValidateBias(out->shape(), ctx->input(2).shape()));
    return out;
  }

  bool ta_, tb_, fused_, relu_ = false;
};

// The [m, n] output of an empty reduction (k = 0): the bias (zeros without one), maybe through
// Relu.
template <typename T>
void BiasOnly(int64_t m, int64_t n, const T* bias, bool relu, T* c) {
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const float v = bias != nullptr ? ToFloat(bias[j]) : 0.f;
      c[r * n + j] = FromFloat<T>(relu ? std::max(v, 0.f) : v);
    }
  }
}

// How many row shards: one per pool thread, but a shard below ~1 MFLOP costs more in wake-ups
// than it saves (MatMul's ParallelFor rule).
int64_t RowShards(int64_t m, int64_t n, int64_t k, int64_t threads) {
  constexpr double kMinFlopsPerShard = 1e6;
  const int64_t shards = std::min<int64_t>(m, threads);
  return std::min<int64_t>(
      shards, std::max<int64_t>(1, static_cast<int64_t>(2.0 * m * n * k / kMinFlopsPerShard)));
}

// One oneDNN matmul primitive per row shard: float32 _FusedMatMul, and bfloat16 MatMul and
// _FusedMatMul where the CPU multiplies bfloat16 natively (accumulating in float32, rounding the
// output once).
template <typename T>
class DnnlMatMulOp : public FusedMatMulBase {
 public:
  using FusedMatMulBase::FusedMatMulBase;

  Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, CheckAndAllocate(ctx));
    const int64_t m = out->dim(0), n = out->dim(1), k = a.dim(ta_ ? 0 : 1);
    if (m == 0 || n == 0) return Status::OK();
    T* c = out->data<T>();
    const T* pbias = fused_ ? ctx->input(2).data<T>() : nullptr;
    std::vector<T> bias_row;
    if (fused_ && ctx->input(2).rank() == 0) {
      bias_row.assign(n, pbias[0]);
      pbias = bias_row.data();
    }
    if (k == 0) {  // oneDNN rejects empty reductions: the product is zero
      BiasOnly(m, n, pbias, relu_, c);
      return Status::OK();
    }
    if constexpr (std::is_same_v<T, BFloat16>) {
      if (ctx->tracing()) ctx->SetTraceLabel("oneDNN bfloat16 matmul");
    }
    return Run(ctx, a, b, pbias, c);
  }

 private:
  Status Run(OpKernelContext* ctx, const Tensor& a, const Tensor& b, const T* pbias, T* c) {
    const int64_t m = ctx->output_shape(0).dim(0), n = ctx->output_shape(0).dim(1);
    const int64_t k = a.dim(ta_ ? 0 : 1);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const int64_t lda = a.dim(1), ldb = b.dim(1);
    ThreadPool* pool = IntraOpPool(ctx);
    const int64_t threads = std::max(1, pool->num_threads());
    const bool omp = MatMulUseOmp();
    const int64_t shards = omp ? 1 : RowShards(m, n, k, threads);
    const int64_t q = m / shards, r = m % shards;
    const int64_t bf16 = std::is_same_v<T, BFloat16> ? 1 : 0;
    Status err;
    std::mutex err_mu;
    auto run_shard = [&](int64_t s) {
      const int64_t rows = q + (s < r ? 1 : 0);
      const int64_t r0 = s * q + std::min(s, r);
      try {
        const MatMulPrim& p = Get({rows, n, k, lda, ldb, ta_, tb_, fused_ ? 1 : 0, bf16});
        const T* a0 = ta_ ? pa + r0 : pa + r0 * lda;
        auto mem = [](const memory::desc& d, const T* ptr) {
          return memory(d, DnnlEngine(), const_cast<T*>(ptr));
        };
        thread_local dnnl::stream stream(DnnlEngine());
        thread_local std::vector<uint8_t> scratch;
        scratch.resize(std::max(scratch.size(), p.scratch.get_size()));
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_SRC, mem(p.src, a0)},
            {DNNL_ARG_WEIGHTS, mem(p.wei, pb)},
            {DNNL_ARG_DST, mem(p.dst, c + r0 * n)},
            {DNNL_ARG_SCRATCHPAD, memory(p.scratch, DnnlEngine(), scratch.data())}};
        if (fused_) args.emplace(DNNL_ARG_BIAS, mem(p.bias, pbias));
        p.prim.execute(stream, args);
        stream.wait();
      } catch (const dnnl::error& e) {
        std::lock_guard<std::mutex> lock(err_mu);
        if (err.ok()) {
          err = errors::Internal("oneDNN matmul failed in ", node().name(), " (", node().op(),
                                 "): ", e.what(), "; a: ", a.shape().ToString(),
                                 ", b: ", b.shape().ToString());
        }
      }
    };
    if (omp) {
      omp_set_num_threads(static_cast<int>(threads));
      run_shard(0);
      omp_set_num_threads(1);
    } else {
      // oneDNN parallelises with OpenMP; each pool thread's share is already one shard.
      OneOmpThread();
      ForEachShard(ctx, shards, [&](int64_t s) {
        OneOmpThread();
        run_shard(s);
      });
    }
    return err;
  }

  const MatMulPrim& Get(const MatMulKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<MatMulPrim>& slot = prims_[key];
    // Creation (JIT code generation) under the lock: each shard shape is built once.
    if (slot == nullptr) slot = MakePrim(key, relu_);
    return *slot;
  }

  std::mutex mu_;
  std::map<MatMulKey, std::unique_ptr<MatMulPrim>> prims_;
};

// float64: the same maths in plain loops, for the gradient checker.
class FusedMatMulDoubleOp : public FusedMatMulBase {
 public:
  using FusedMatMulBase::FusedMatMulBase;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    PF_ASSIGN_OR_RETURN(Tensor * out, CheckAndAllocate(ctx));
    const int64_t m = out->dim(0), n = out->dim(1), k = a.dim(ta_ ? 0 : 1);
    const int64_t lda = a.dim(1), ldb = b.dim(1);
    const double* pa = a.data<double>();
    const double* pb = b.data<double>();
    const double* pbias = bias.data<double>();
    const bool scalar_bias = bias.rank() == 0;
    double* c = out->data<double>();
    ParallelFor(ctx, m, 2 * n * k, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        double* ci = c + i * n;
        std::fill(ci, ci + n, 0.0);
        for (int64_t p = 0; p < k; ++p) {
          const double av = ta_ ? pa[p * lda + i] : pa[i * lda + p];
          for (int64_t j = 0; j < n; ++j) ci[j] += av * (tb_ ? pb[j * ldb + p] : pb[p * ldb + j]);
        }
        for (int64_t j = 0; j < n; ++j) {
          ci[j] += pbias[scalar_bias ? 0 : j];
          if (relu_) ci[j] = std::max(ci[j], 0.0);
        }
      }
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("_FusedMatMul")
                   .SetNoGradient()  // made after the gradient builder ran
                   .Input("a", "T")
                   .Input("b", "T")
                   .Input("bias", "T")
                   .Output("product", "T")
                   .Attr("transpose_a", false)
                   .Attr("transpose_b", false)
                   .Attr("fused_ops", std::vector<std::string>{"BiasAdd"})
                   .TypeAttr("T", kFloatingTypes)
                   .SetShapeFn(FusedMatMulShape));
PF_REGISTER_KERNEL(KernelDef("_FusedMatMul", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   DnnlMatMulOp<float>);
PF_REGISTER_KERNEL(KernelDef("_FusedMatMul", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   FusedMatMulDoubleOp);

// bfloat16 on oneDNN where the CPU has native bfloat16 (DnnlNativeBf16), else through float32
// (ops/half_via_float.h).
std::unique_ptr<OpKernel> NewBf16MatMul(const Node& n) {
  if (DnnlNativeBf16()) return std::make_unique<DnnlMatMulOp<BFloat16>>(n);
  return NewHalfViaFloatKernel(n);
}
const KernelRegistrar kBf16MatMul(
    KernelDef("MatMul", kDeviceCpu).TypeConstraint("T", {DT_BFLOAT16}), NewBf16MatMul);
const KernelRegistrar kBf16FusedMatMul(
    KernelDef("_FusedMatMul", kDeviceCpu).TypeConstraint("T", {DT_BFLOAT16}), NewBf16MatMul);

}  // namespace
}  // namespace pf
