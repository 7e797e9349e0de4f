// Fused, numerically stable losses with their own gradients: SoftmaxCrossEntropyWithLogits,
// SparseSoftmaxCrossEntropyWithLogits, SigmoidCrossEntropyWithLogits, MeanSquaredError and
// L2Loss. The softmax losses return (per-example loss, d loss / d logits) like TensorFlow,
// so the gradient is one multiply; everything is computed from max-subtracted logits. The
// elementwise terms are the functors of nn_functors.cuh, which the GPU kernels (loss_ops.cu) run.
#include "placeflow/ops/nn/loss_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/grad_ops.h"
#include "placeflow/ops/math/reduce_impl.h"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

Status CheckLogitsMatrix(const Shape& logits) {
  if (!logits.unknown_rank() && logits.rank() != 2) {
    return errors::InvalidArgument("logits must be 2-dimensional, got shape ", logits.ToString());
  }
  return Status::OK();
}

}  // namespace

Status ValidateSoftmaxXent(const Shape& logits, const Shape& labels) {
  PF_RETURN_IF_ERROR(CheckLogitsMatrix(logits));
  if (!logits.IsCompatibleWith(labels)) {
    return errors::InvalidArgument("logits and labels must be same size: logits_size=",
                                   logits.ToString(), " labels_size=", labels.ToString());
  }
  return Status::OK();
}

Status ValidateSparseSoftmaxXent(const Shape& logits, const Shape& labels) {
  PF_RETURN_IF_ERROR(CheckLogitsMatrix(logits));
  if (labels.unknown_rank()) return Status::OK();
  if (labels.rank() != 1) {
    return errors::InvalidArgument("labels must be 1-D, but got shape ", labels.ToString());
  }
  if (!logits.unknown_rank() && logits.dim(0) >= 0 && labels.dim(0) >= 0 &&
      logits.dim(0) != labels.dim(0)) {
    return errors::InvalidArgument(
        "logits and labels must have the same first dimension, got logits shape ",
        logits.ToString(), " and labels shape ", labels.ToString());
  }
  return Status::OK();
}

Status ValidateSigmoidXent(const Shape& logits, const Shape& labels) {
  if (!logits.IsCompatibleWith(labels)) {
    return errors::InvalidArgument("logits and labels must have the same shape (",
                                   logits.ToString(), " vs ", labels.ToString(), ")");
  }
  return Status::OK();
}

namespace {

// loss_r = logsumexp(x_r) - sum_c p_rc x_rc; backprop_r = softmax(x_r) - p_r.
template <typename T, typename LabelFn>
void SoftmaxXent(OpKernelContext* ctx, const Tensor& logits, LabelFn label, Tensor* loss,
                 Tensor* backprop) {
  const int64_t c = logits.dim(1), rows = logits.dim(0);
  const T* x = logits.data<T>();
  ParallelFor(ctx, rows, c * 20, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * c;
      T* br = backprop->data<T>() + r * c;
      T m = xr[0];
      for (int64_t i = 1; i < c; ++i) m = std::max(m, xr[i]);
      T sum = 0;
      for (int64_t i = 0; i < c; ++i) sum += std::exp(xr[i] - m);
      const T log_sum = std::log(sum);
      T l = 0;
      for (int64_t i = 0; i < c; ++i) br[i] = SoftmaxXentTerm(xr[i], label(r, i), m, log_sum, l);
      loss->data<T>()[r] = l;
    }
  });
}

template <typename T>
class SoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateSoftmaxXent(logits.shape(), labels.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * loss, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * backprop, ctx->AllocateOutput(1));
    const T* p = labels.data<T>();
    const int64_t c = logits.dim(1);
    SoftmaxXent<T>(
        ctx, logits, [&](int64_t r, int64_t i) { return p[r * c + i]; }, loss, backprop);
    return Status::OK();
  }
};

template <typename T, typename Index>
class SparseSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateSparseSoftmaxXent(logits.shape(), labels.shape()));
    const int64_t c = logits.dim(1);
    const Index* y = labels.data<Index>();
    for (int64_t r = 0; r < labels.num_elements(); ++r) {
      if (y[r] < 0 || y[r] >= c) {
        return errors::InvalidArgument("Received a label value of ", y[r],
                                       " which is outside the valid range of [0, ", c, ").");
      }
    }
    PF_ASSIGN_OR_RETURN(Tensor * loss, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(Tensor * backprop, ctx->AllocateOutput(1));
    SoftmaxXent<T>(
        ctx, logits, [&](int64_t r, int64_t i) { return i == y[r] ? T(1) : T(0); }, loss, backprop);
    return Status::OK();
  }
};

// (loss [rows], backprop [rows, cols]) of logits [rows, cols], after the op's check.
template <Status (*kValidate)(const Shape&, const Shape&)>
Status XentShape(ShapeContext& c) {
  PF_RETURN_IF_ERROR(kValidate(c.input(0), c.input(1)));
  const Shape& s = c.input(0);
  c.set_output(0, s.unknown_rank() ? Shape{-1} : Shape{s.dim(0)});
  c.set_output(1, s.unknown_rank() ? Shape{-1, -1} : s);
  return Status::OK();
}

// d loss / d logits = g[:, None] * backprop (the second output is not differentiated).
PF_GRAD(XentGrad) {
  *dx = {ops::Mul(s, ops::ExpandDims(s, g[0], 1), Out(n, 1)), Output()};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("SoftmaxCrossEntropyWithLogits")
                   .Input("features", "T")
                   .Input("labels", "T")
                   .Output("loss", "T")
                   .Output("backprop", "T")
                   .TypeAttr("T", kFloatingTypes)
                   .SetGradient(XentGrad)
                   .SetShapeFn(XentShape<ValidateSoftmaxXent>));
PF_REGISTER_KERNEL(
    KernelDef("SoftmaxCrossEntropyWithLogits", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
    SoftmaxXentOp<float>);
PF_REGISTER_KERNEL(
    KernelDef("SoftmaxCrossEntropyWithLogits", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
    SoftmaxXentOp<double>);

PF_REGISTER_OP(OpDef("SparseSoftmaxCrossEntropyWithLogits")
                   .Input("features", "T")
                   .Input("labels", "Tlabels")
                   .Output("loss", "T")
                   .Output("backprop", "T")
                   .TypeAttr("T", kFloatingTypes)
                   .TypeAttr("Tlabels", kIndexTypes)
                   .SetGradient(XentGrad)
                   .SetShapeFn(XentShape<ValidateSparseSoftmaxXent>));
#define PF_SPARSE_XENT(T, I)                                                      \
  PF_REGISTER_KERNEL(KernelDef("SparseSoftmaxCrossEntropyWithLogits", kDeviceCpu) \
                         .TypeConstraint("T", {DataTypeOf<T>()})                  \
                         .TypeConstraint("Tlabels", {DataTypeOf<I>()}),           \
                     SparseSoftmaxXentOp<T, I>)
PF_SPARSE_XENT(float, int32_t);
PF_SPARSE_XENT(float, int64_t);
PF_SPARSE_XENT(double, int32_t);
PF_SPARSE_XENT(double, int64_t);

// max(x, 0) - x z + log(1 + exp(-|x|)) (SigmoidXentF): no overflow for any x.
template <typename T>
class SigmoidXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(ValidateSigmoidXent(ctx->input(0).shape(), ctx->input(1).shape()));
    return BinaryElementwise<T, T>(ctx, SigmoidXentF(), 20);
  }
};

PF_REGISTER_OP(OpDef("SigmoidCrossEntropyWithLogits")
                   .Input("logits", "T")
                   .Input("labels", "T")
                   .Output("loss", "T")
                   .TypeAttr("T", kRealTypes)
                   .SetGradient([](const Scope& s, const Node& n, const Grads& g, Grads* dx) {
                     const Output x = n.input(0), z = n.input(1);
                     *dx = {ops::Mul(s, g[0], ops::Sub(s, ops::Sigmoid(s, x), z)),
                            ops::Mul(s, g[0], ops::Neg(s, x))};
                     return Status::OK();
                   })
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(ValidateSigmoidXent(c.input(0), c.input(1)));
                     c.set_output(0, c.input(0).MergeWith(c.input(1)));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(
    KernelDef("SigmoidCrossEntropyWithLogits", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
    SigmoidXentOp<float>);
PF_REGISTER_KERNEL(
    KernelDef("SigmoidCrossEntropyWithLogits", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
    SigmoidXentOp<double>);

// mean((p - l)^2) over the broadcast shape. The common layouts (same shapes; [N, 1] against
// [N, C]) take one parallel pass with per-chunk partial sums in double; other broadcasts go
// through a temporary.
template <typename T>
class MseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& p = ctx->input(0);
    const Tensor& l = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Shape full, BroadcastShapes(p.shape(), l.shape()));
    const int64_t count = full.num_elements();
    double sum = 0;
    const bool column =
        p.rank() == 2 && l.rank() == 2 && p.dim(0) == l.dim(0) && (p.dim(1) == 1 || l.dim(1) == 1);
    if (p.shape() == l.shape() || column) {
      // Rows of `cols` elements; `narrow` broadcasts one value per row when the shapes differ.
      const bool same = p.shape() == l.shape();
      const int64_t cols =
          same ? std::max<int64_t>(1, std::min<int64_t>(count, 4096)) : full.dim(1);
      const int64_t rows = cols == 0 ? 0 : (count + cols - 1) / cols;
      const T* pp = p.data<T>();
      const T* lp = l.data<T>();
      std::vector<double> partial(rows, 0.0);
      const bool p_column = !same && p.dim(1) == 1;
      ParallelFor(ctx, rows, cols * 2, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t begin = r * cols, n = std::min(count, begin + cols) - begin;
          // Eight partial sums per row so the loop vectorises; rows combine in double.
          T acc[8] = {};
          const T* wide = (same || p_column ? lp : pp) + begin;
          const T* other = same ? pp + begin : nullptr;
          const T c = same ? T(0) : (p_column ? pp[r] : lp[r]);
          int64_t i = 0;
          for (; i + 8 <= n; i += 8) {
            for (int k = 0; k < 8; ++k) {
              const T d = (other ? other[i + k] : c) - wide[i + k];
              acc[k] += d * d;
            }
          }
          double row = 0;
          for (; i < n; ++i) {
            const T d = (other ? other[i] : c) - wide[i];
            row += d * d;
          }
          for (T a : acc) row += a;
          partial[r] = row;
        }
      });
      for (double v : partial) sum += v;
    } else {
      PF_ASSIGN_OR_RETURN(Tensor diff2, (BroadcastTemporary<T>(ctx, p, l, full, SquaredDiffF())));
      for (T v : diff2.flat<T>()) sum += v;
    }
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->flat<T>()[0] = count > 0 ? static_cast<T>(sum / count) : T(0);
    return Status::OK();
  }
};

// d mean((p - l)^2) / d input `wrt` (0: predictions, 1: labels) = +-2 g (p - l) / count over
// the broadcast shape, summed back to that input's shape. One pass over the broadcast shape
// for the common layouts (same shapes, or p [N, 1] against l [N, C]); general shapes go
// through a broadcast temporary and a reduction.
template <typename T>
class MseGradOp : public OpKernel {
 public:
  explicit MseGradOp(const Node& n) : OpKernel(n), wrt_(static_cast<int>(n.attr<int64_t>("wrt"))) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Tensor& p = ctx->input(1);
    const Tensor& l = ctx->input(2);
    PF_ASSIGN_OR_RETURN(Shape full, BroadcastShapes(p.shape(), l.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t count = full.num_elements();
    const T scale =
        (wrt_ == 0 ? T(2) : T(-2)) * g.data<T>()[0] / static_cast<T>(std::max<int64_t>(count, 1));
    const T* pp = p.data<T>();
    const T* lp = l.data<T>();
    T* o = out->data<T>();
    if (p.shape() == l.shape()) {
      ParallelFor(ctx, count, 2, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = scale * (pp[i] - lp[i]);
      });
      return Status::OK();
    }
    const Tensor& narrow = wrt_ == 0 ? p : l;  // the input whose gradient this is
    const Tensor& other = wrt_ == 0 ? l : p;
    if (narrow.rank() == 2 && other.rank() == 2 && narrow.dim(1) == 1 &&
        narrow.dim(0) == other.dim(0)) {
      const int64_t rows = other.dim(0), cols = other.dim(1);
      const T* n = narrow.data<T>();
      const T* w = other.data<T>();
      ParallelFor(ctx, rows, cols, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          // sum_c (p - l) over the row, with the narrow input's value repeated `cols` times.
          const T wide_sum = ReduceRow<T, SumR>(w + r * cols, cols);
          const T acc = wrt_ == 0 ? static_cast<T>(cols) * n[r] - wide_sum
                                  : wide_sum - static_cast<T>(cols) * n[r];
          o[r] = scale * acc;
        }
      });
      return Status::OK();
    }
    // General broadcasting: materialise scale * (p - l) over the broadcast shape, then reduce.
    PF_ASSIGN_OR_RETURN(
        Tensor diff,
        (BroadcastTemporary<T>(ctx, p, l, full, [scale](T a, T b) { return scale * (a - b); })));
    PF_ASSIGN_OR_RETURN(std::vector<bool> reduced, SumToShapeDims(full, narrow.shape()));
    Reduce<T, SumR>(ctx, diff, reduced, out);  // the sign is already in `scale`
    return Status::OK();
  }

 private:
  int wrt_;  // 0: predictions, 1: labels
};

PF_REGISTER_OP(OpDef("MeanSquaredErrorGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("predictions", "T")
                   .Input("labels", "T")
                   .Output("output", "T")
                   .Attr("wrt", int64_t{0})
                   .TypeAttr("T", kRealTypes)
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.input(1 + static_cast<int>(c.attr<int64_t>("wrt"))));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("MeanSquaredErrorGrad", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   MseGradOp<float>);
PF_REGISTER_KERNEL(KernelDef("MeanSquaredErrorGrad", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   MseGradOp<double>);

PF_REGISTER_OP(OpDef("MeanSquaredError")
                   .Input("predictions", "T")
                   .Input("labels", "T")
                   .Output("loss", "T")
                   .TypeAttr("T", kRealTypes)
                   .SetGradient([](const Scope& s, const Node& n, const Grads& g, Grads* dx) {
                     dx->clear();
                     for (int64_t wrt : {0, 1}) {
                       dx->push_back(NodeBuilder(s, "MeanSquaredErrorGrad")
                                         .Input(g[0])
                                         .Input(n.input(0))
                                         .Input(n.input(1))
                                         .Attr("wrt", wrt)
                                         .Finalize());
                     }
                     return Status::OK();
                   })
                   .SetShapeFn([](ShapeContext& c) {
                     StatusOr<Shape> full = BroadcastShapes(c.input(0), c.input(1));
                     if (!full.ok()) return full.status();
                     c.set_output(0, Shape{});
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("MeanSquaredError", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   MseOp<float>);
PF_REGISTER_KERNEL(KernelDef("MeanSquaredError", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   MseOp<double>);

// sum(p[i]^2) over 32 interleaved partial sums: one accumulator would chain every add behind
// the last (4 cycles each; L2Loss over mnist_mlp's 392k weights took 79 us), 32 lanes keep
// several vector adds in flight on SSE2, AVX2 and AVX-512 alike.
template <typename T>
T SumOfSquares(const T* p, int64_t n) {
  return SimdCall([&] {
    constexpr int kLanes = 32;
    T acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += p[i + j] * p[i + j];
    T tail = 0;
    for (; i < n; ++i) tail += p[i] * p[i];
    for (int j = 0; j < kLanes; ++j) tail += acc[j];
    return tail;
  });
}

template <typename T>
class L2LossOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const T* x = ctx->input(0).data<T>();
    const int64_t n = ctx->input(0).num_elements();
    // Blocks of 2048 summed in T (TF sums float in float too), then the blocks' sums in
    // double, in block order: the result does not depend on the threading.
    constexpr int64_t kBlock = 2048;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<double> partial(blocks);
    ParallelFor(ctx, blocks, kBlock, [&](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        const int64_t len = std::min(kBlock, n - blk * kBlock);
        partial[blk] = SumOfSquares(x + blk * kBlock, len);
      }
    });
    double sum = 0;
    for (double v : partial) sum += v;
    out->flat<T>()[0] = static_cast<T>(sum / 2);
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("L2Loss")
                   .Input("t", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kRealTypes)
                   .SetGradient([](const Scope& s, const Node& n, const Grads& g, Grads* dx) {
                     *dx = {ops::Mul(s, n.input(0), g[0])};
                     return Status::OK();
                   })
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("L2Loss", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   L2LossOp<float>);
PF_REGISTER_KERNEL(KernelDef("L2Loss", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   L2LossOp<double>);

}  // namespace

namespace ops {

std::pair<Output, Output> SoftmaxCrossEntropyWithLogits(const Scope& s, Output logits,
                                                        Output labels) {
  Node* n = NodeBuilder(s, "SoftmaxCrossEntropyWithLogits").Input(logits).Input(labels).Finalize();
  return {Output(n, 0), Output(n, 1)};
}
std::pair<Output, Output> SparseSoftmaxCrossEntropyWithLogits(const Scope& s, Output logits,
                                                              Output labels) {
  Node* n =
      NodeBuilder(s, "SparseSoftmaxCrossEntropyWithLogits").Input(logits).Input(labels).Finalize();
  return {Output(n, 0), Output(n, 1)};
}
Output SigmoidCrossEntropyWithLogits(const Scope& s, Output logits, Output labels) {
  return NodeBuilder(s, "SigmoidCrossEntropyWithLogits").Input(logits).Input(labels).Finalize();
}
Output MeanSquaredError(const Scope& s, Output predictions, Output labels) {
  return NodeBuilder(s, "MeanSquaredError").Input(predictions).Input(labels).Finalize();
}
Output L2Loss(const Scope& s, Output t) { return NodeBuilder(s, "L2Loss").Input(t).Finalize(); }

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_SPARSE_XENT
