// TopKV2 (tf.math.top_k, with its gradient: the values' gradient scattered back to the chosen
// positions) and InTopKV2 (tf.math.in_top_k).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// The dtypes these kernels are instantiated for (not op_util.h's lists, which may grow).

// ---- TopKV2 ----
Status ValidateTopK(const Shape& input, int64_t k) {
  if (k < 0) return errors::InvalidArgument("Need k >= 0, got ", k);
  if (input.unknown_rank()) return Status::OK();
  if (input.rank() < 1) {
    return errors::InvalidArgument("input must be at least 1-dimensional, got shape ",
                                   input.ToString());
  }
  const int64_t last = input.dim(input.rank() - 1);
  if (last >= 0 && last < k) {
    return errors::InvalidArgument("input must have last dimension >= k = ", k, " but is ", last,
                                   " (input shape ", input.ToString(), ")");
  }
  return Status::OK();
}

Status TopKShape(ShapeContext& c) {
  PF_RETURN_IF_ERROR(c.WithRank(1, 0));
  PF_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1));
  const Tensor* kt = c.input_tensor(1);
  const int64_t k = kt != nullptr ? kt->AsInt64Vector()[0] : -1;
  if (kt != nullptr) PF_RETURN_IF_ERROR(ValidateTopK(c.input(0), k));
  Shape out = c.input(0);
  if (!out.unknown_rank()) out.set_dim(out.rank() - 1, k);
  c.set_output(0, out);
  c.set_output(1, out);
  return Status::OK();
}

// a before b: larger first, NaN largest (a strict weak order), ties to the lower index.
template <typename T>
bool Before(const T* x, int32_t a, int32_t b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = std::isnan(x[a]), nb = std::isnan(x[b]);
    if (na || nb) return na && (!nb || a < b);
  }
  return x[a] > x[b] || (x[a] == x[b] && a < b);
}

template <typename T>
class TopKOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const int64_t k = ctx->input(1).AsInt64Vector()[0];
    PF_RETURN_IF_ERROR(ValidateTopK(in.shape(), k));
    PF_ASSIGN_OR_RETURN(Tensor * values, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * indices, ctx->AllocateOutput(1));
    const int64_t n = in.dim(in.rank() - 1);
    if (n > std::numeric_limits<int32_t>::max())
      return errors::InvalidArgument("TopK: last dimension ", n, " does not fit int32 indices");
    const int64_t rows = n == 0 ? 0 : in.num_elements() / n;
    const T* x = in.data<T>();
    T* v = values->data<T>();
    int32_t* idx = indices->data<int32_t>();
    ParallelFor(ctx, rows, n * 4, [&](int64_t b, int64_t e) {
      std::vector<int32_t> order(n);
      for (int64_t r = b; r < e; ++r) {
        const T* row = x + r * n;
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int32_t a, int32_t c) { return Before(row, a, c); });
        for (int64_t j = 0; j < k; ++j) {
          idx[r * k + j] = order[j];
          v[r * k + j] = row[order[j]];
        }
      }
    });
    return Status::OK();
  }
};

// grad [..., k] added at indices [..., k] into zeros like the input [..., n].
template <typename T>
class TopKGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor &grad = ctx->input(0), &indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    T* y = out->data<T>();
    std::fill(y, y + out->num_elements(), T(0));
    const int64_t n = out->rank() == 0 ? 0 : out->dim(out->rank() - 1);
    const int64_t k = grad.rank() == 0 ? 0 : grad.dim(grad.rank() - 1);
    if (n == 0 || k == 0) return Status::OK();
    const int64_t rows = out->num_elements() / n;
    if (grad.shape() != indices.shape() || grad.num_elements() != rows * k) {
      return errors::InvalidArgument("TopKV2Grad: grad ", grad.shape(), " and indices ",
                                     indices.shape(), " do not fit the input ", out->shape());
    }
    const T* dy = grad.data<T>();
    const int32_t* idx = indices.data<int32_t>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < k; ++j) {
        const int32_t i = idx[r * k + j];
        if (i < 0 || i >= n)
          return errors::InvalidArgument("TopKV2Grad: index ", i, " is not in [0, ", n, ")");
        y[r * n + i] += dy[r * k + j];
      }
    }
    return Status::OK();
  }
};

PF_GRAD(TopKGradFn) {
  *dx = {NodeBuilder(s, "TopKV2Grad").Input(g[0]).Input(Out(n, 1)).Input(n.input(0)).Finalize(),
         Output()};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("TopKV2")
                   .Input("input", "T")
                   .Input("k", "int32")
                   .Output("values", "T")
                   .Output("indices", "int32")
                   .Attr("sorted", true)
                   .TypeAttr("T", kNumberTypes)
                   .SetGradient(TopKGradFn)
                   .SetShapeFn(TopKShape));
PF_REGISTER_OP(OpDef("TopKV2Grad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("indices", "int32")
                   .Input("like", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kNumberTypes)
                   .SetShapeOnlyInput(2)
                   .SetShapeFn([](ShapeContext& c) { return ShapeOfInput(c, 2); }));
#define PF_TOPK_KERNELS(T)                                                                       \
  PF_REGISTER_KERNEL(KernelDef("TopKV2", kDeviceCpu).TypeConstraint("T", {DataTypeOf<T>()}),     \
                     TopKOp<T>);                                                                 \
  PF_REGISTER_KERNEL(KernelDef("TopKV2Grad", kDeviceCpu).TypeConstraint("T", {DataTypeOf<T>()}), \
                     TopKGradOp<T>)
PF_TOPK_KERNELS(float);
PF_TOPK_KERNELS(double);
PF_TOPK_KERNELS(int32_t);
PF_TOPK_KERNELS(int64_t);

// ---- InTopKV2 ----
Status InTopKShape(ShapeContext& c) {
  const Shape &p = c.input(0), &t = c.input(1);
  if (!p.unknown_rank() && p.rank() != 2) {
    return errors::InvalidArgument("predictions must be 2-dimensional, got shape ", p.ToString());
  }
  if (!t.unknown_rank() && t.rank() != 1)
    return errors::InvalidArgument("targets must be 1-dimensional, got shape ", t.ToString());
  PF_RETURN_IF_ERROR(c.WithRank(2, 0));
  const int64_t batch = p.unknown_rank() ? -1 : p.dim(0), len = t.unknown_rank() ? -1 : t.dim(0);
  if (batch >= 0 && len >= 0 && batch != len) {
    return errors::InvalidArgument("First dimension of predictions ", batch,
                                   " must match length of targets ", len);
  }
  c.set_output(0, Shape{batch >= 0 ? batch : len});
  return Status::OK();
}

template <typename T, typename Index>
class InTopKOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor &p = ctx->input(0), &targets = ctx->input(1);
    const int64_t k = ctx->input(2).AsInt64Vector()[0];
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t batch = p.dim(0), classes = p.dim(1);
    const T* x = p.data<T>();
    const Index* target = targets.data<Index>();
    bool* y = out->data<bool>();
    for (int64_t b = 0; b < batch; ++b) {
      const T* row = x + b * classes;
      const Index t = target[b];
      bool cannot_say = t < 0 || t >= classes || !std::isfinite(row[t]);
      int64_t more = 0;
      for (int64_t i = 0; i < classes && !cannot_say; ++i) {
        cannot_say = !std::isfinite(row[i]);
        more += row[i] > row[t];
      }
      y[b] = !cannot_say && more < k;
    }
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("InTopKV2")
                   .Input("predictions", "float")
                   .Input("targets", "T")
                   .Input("k", "T")
                   .Output("precision", "bool")
                   .TypeAttr("T", kIndexTypes, DT_INT32)
                   .SetNotDifferentiable()
                   .SetShapeFn(InTopKShape));
PF_REGISTER_KERNEL(KernelDef("InTopKV2", kDeviceCpu).TypeConstraint("T", {DT_INT32}),
                   InTopKOp<float, int32_t>);
PF_REGISTER_KERNEL(KernelDef("InTopKV2", kDeviceCpu).TypeConstraint("T", {DT_INT64}),
                   InTopKOp<float, int64_t>);

}  // namespace

namespace ops {

TopKOutputs TopK(const Scope& s, Output input, Output k, bool sorted) {
  Node* n = NodeBuilder(s, "TopKV2").Input(input).Input(k).Attr("sorted", sorted).Finalize();
  return {Output(n, 0), Output(n, 1)};
}
TopKOutputs TopK(const Scope& s, Output input, int k, bool sorted) {
  return TopK(s, input, ConstInt(s.NewSubScope("").WithOpName("k"), k), sorted);
}
Output InTopK(const Scope& s, Output predictions, Output targets, int k) {
  Scope c = s.NewSubScope("").WithOpName("k");
  Output kt = targets.dtype() == DT_INT64 ? Const(c, Tensor::Scalar(int64_t{k})) : ConstInt(c, k);
  return NodeBuilder(s, "InTopKV2").Input(predictions).Input(targets).Input(kt).Finalize();
}

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_TOPK_KERNELS
