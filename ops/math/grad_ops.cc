// Kernels that gradient functions build: SumToShape (undo broadcasting), ReduceGrad (undo a
// reduction). The *_like inputs are read for their shape only. These ops have no gradients of
// their own (second-order gradients are not supported). The other backward ops live with their
// forward ops' family: SliceGrad, ConcatGrad, GatherGrad in ops/array/copy_grad_ops.cc, the
// activation gradients and BiasAddGrad in ops/nn/nn_ops.cc.
#include "placeflow/ops/math/grad_ops.h"

#include <cstring>
#include <type_traits>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/reduce_impl.h"
#include "placeflow/ops/math/reduction_ops.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

StatusOr<std::vector<bool>> SumToShapeDims(const Shape& from, const Shape& to) {
  const int shift = from.rank() - to.rank();
  if (shift < 0) {
    return errors::InvalidArgument("SumToShape: ", from.ToString(), " has lower rank than ",
                                   to.ToString());
  }
  std::vector<bool> reduced(from.rank(), false);
  for (int d = 0; d < from.rank(); ++d) {
    if (d < shift) {
      reduced[d] = true;
    } else if (to.dim(d - shift) == 1 && from.dim(d) != 1) {
      reduced[d] = true;
    } else if (to.dim(d - shift) != from.dim(d)) {
      return errors::InvalidArgument("SumToShape: ", from.ToString(), " does not broadcast from ",
                                     to.ToString());
    }
  }
  return reduced;
}

StatusOr<Shape> ReduceGradShape(const Shape& g, const Shape& x, const std::vector<int64_t>& axes) {
  PF_ASSIGN_OR_RETURN(std::vector<bool> reduced, ReducedDims(axes, x.rank()));
  Shape kept;
  for (int d = 0; d < x.rank(); ++d) kept.AddDim(reduced[d] ? 1 : x.dim(d));
  if (kept.num_elements() != g.num_elements()) {
    return errors::InvalidArgument("ReduceGrad: gradient ", g.ToString(), " does not match input ",
                                   x.ToString());
  }
  return kept;
}

namespace {

// ---- SumToShape(g, like): sum g down to like's shape (the inverse of broadcasting) ----
template <typename T>
class SumToShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Shape& target = ctx->input(1).shape();
    if (g.shape() == target) return ctx->SetOutput(0, g);
    PF_ASSIGN_OR_RETURN(std::vector<bool> reduced, SumToShapeDims(g.shape(), target));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    Reduce<T, SumR>(ctx, g, reduced, out);
    return Status::OK();
  }
};

// ---- ReduceGrad(g, like): broadcast a reduction's gradient back over the reduced axes ----
template <typename T>
class ReduceGradOp : public OpKernel {
 public:
  explicit ReduceGradOp(const Node& n)
      : OpKernel(n), axes_(n.attr<std::vector<int64_t>>("axes")), mean_(n.attr<bool>("mean")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Shape& x = ctx->input(1).shape();
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    // g with the reduced axes kept as 1.
    PF_ASSIGN_OR_RETURN(Shape kept, ReduceGradShape(g.shape(), x, axes_));
    // An empty x (a [5,0] input) has nothing to fill, and its rows of zero length would divide
    // by zero below (as would an integer mean's scale).
    if (out->num_elements() == 0) return Status::OK();
    const T scale = mean_ && g.num_elements() > 0
                        ? T(1) / static_cast<T>(x.num_elements() / g.num_elements())
                        : T(1);
    const T* gp = g.data<T>();
    T* y = out->data<T>();
    BroadcastPlan p = MakeBroadcastPlan(kept, x, x);
    const int64_t n = out->num_elements();
    if (p.same_shape || p.a_scalar) {
      ParallelFor(ctx, n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = gp[p.same_shape ? i : 0] * scale;
      });
      return Status::OK();
    }
    const int rank = static_cast<int>(p.out_dims.size());
    const int64_t inner = p.out_dims[rank - 1], sa = p.a_strides[rank - 1];
    ParallelFor(ctx, n / inner, inner, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        int64_t off = 0, rem = r;
        for (int d = rank - 2; d >= 0; --d) {
          off += (rem % p.out_dims[d]) * p.a_strides[d];
          rem /= p.out_dims[d];
        }
        for (int64_t i = 0; i < inner; ++i) y[r * inner + i] = gp[off + i * sa] * scale;
      }
    });
    return Status::OK();
  }

 private:
  std::vector<int64_t> axes_;
  bool mean_;
};

#define PF_REAL_KERNELS(op, Kernel)                                                             \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}), Kernel<float>); \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), Kernel<double>)

PF_REGISTER_OP(OpDef("SumToShape")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("like", "Tlike")
                   .SetShapeOnlyInput(1)
                   .Output("output", "T")
                   .TypeAttr("T", kFloatingTypes)
                   .TypeAttr("Tlike", kNonStringTypes)
                   .SetShapeFn([](ShapeContext& c) {
                     if (c.input(0).IsFullyDefined() && c.input(1).IsFullyDefined()) {
                       PF_RETURN_IF_ERROR(SumToShapeDims(c.input(0), c.input(1)).status());
                     }
                     return ShapeOfInput(c, 1);
                   }));
PF_REAL_KERNELS("SumToShape", SumToShapeOp);

PF_REGISTER_OP(OpDef("ReduceGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("like", "Tlike")
                   .SetShapeOnlyInput(1)
                   .Output("output", "T")
                   .Attr("axes", std::vector<int64_t>{})
                   .Attr("mean", false)
                   .TypeAttr("T", kFloatingTypes)
                   .TypeAttr("Tlike", kNonStringTypes)
                   .SetShapeFn([](ShapeContext& c) {
                     if (c.input(0).IsFullyDefined() && c.input(1).IsFullyDefined()) {
                       PF_RETURN_IF_ERROR(ReduceGradShape(c.input(0), c.input(1),
                                                          c.attr<std::vector<int64_t>>("axes"))
                                              .status());
                     }
                     return ShapeOfInput(c, 1);
                   }));
PF_REAL_KERNELS("ReduceGrad", ReduceGradOp);

}  // namespace

Output SumToShape(const Scope& s, Output g, Output like) {
  if (g.shape() == like.shape() && g.shape().IsFullyDefined()) return g;
  return NodeBuilder(s, "SumToShape").Input(g).Input(like).Finalize();
}

Output ReduceGrad(const Scope& s, Output g, Output like, const std::vector<int64_t>& axes,
                  bool mean) {
  return NodeBuilder(s, "ReduceGrad")
      .Input(g)
      .Input(like)
      .Attr("axes", axes)
      .Attr("mean", mean)
      .Finalize();
}

Output ScalarOf(const Scope& s, double v, DType t) {
  Tensor c(t, Shape{});
  VisitNumericDType(t, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, Half>)
      c.flat<T>()[0] = FloatToHalf(static_cast<float>(v));
    else if constexpr (std::is_same_v<T, BFloat16>)
      c.flat<T>()[0] = FloatToBFloat16(static_cast<float>(v));
    else
      c.flat<T>()[0] = static_cast<T>(v);
  });
  return ops::Const(s, c);
}

}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_REAL_KERNELS
