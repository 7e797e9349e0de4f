// Kernels that gradient functions build: SumToShape (undo broadcasting), ReduceGrad (undo a
// reduction), SliceGrad, ConcatGrad, GatherGrad. The *_like inputs are read for their shape
// only. These ops have no gradients of their own (second-order gradients are not supported).
// The activation gradients and BiasAddGrad live with their forward ops in ops/nn/nn_ops.cc.
#include "placeflow/ops/math/grad_ops.h"

#include <cstring>

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

Status LikeShape(ShapeContext& c, int like_input) {
  c.set_output(0, c.input(like_input));
  return Status::OK();
}

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

// ---- SliceGrad(g, like): zeros shaped like the slice input, with g at `begin` ----
class SliceGradOp : public OpKernel {
 public:
  explicit SliceGradOp(const Node& n)
      : OpKernel(n), begin_(n.attr<std::vector<int64_t>>("begin")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const size_t es = DTypeSize(g.dtype());
    std::memset(out->raw_data(), 0, out->TotalBytes());
    const int rank = out->rank();
    if (g.num_elements() == 0) return Status::OK();
    if (rank == 0) return ctx->SetOutput(0, g);
    std::vector<int64_t> strides(rank, 1);
    for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * out->dim(d + 1);
    const int64_t inner = g.dim(rank - 1), rows = g.num_elements() / inner;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = begin_[rank - 1], rem = r;
      for (int d = rank - 2; d >= 0; --d) {
        off += (rem % g.dim(d) + begin_[d]) * strides[d];
        rem /= g.dim(d);
      }
      std::memcpy(static_cast<char*>(out->raw_data()) + off * es,
                  static_cast<const char*>(g.raw_data()) + r * inner * es, inner * es);
    }
    return Status::OK();
  }

 private:
  std::vector<int64_t> begin_;
};

// ---- ConcatGrad(g, like_0..like_{N-1}): g split back into pieces shaped like the inputs ----
class ConcatGradOp : public OpKernel {
 public:
  explicit ConcatGradOp(const Node& n) : OpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + g.rank() : axis_);
    const size_t es = DTypeSize(g.dtype());
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= g.dim(d);
    const int64_t g_inner = g.num_elements() / std::max<int64_t>(outer, 1) * es;
    int64_t offset = 0;
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(i));
      const int64_t inner = out->num_elements() / std::max<int64_t>(outer, 1) * es;
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(static_cast<char*>(out->raw_data()) + o * inner,
                    static_cast<const char*>(g.raw_data()) + o * g_inner + offset, inner);
      }
      offset += inner;
    }
    return Status::OK();
  }

 private:
  int64_t axis_;
};

// ---- GatherGrad(g, indices, like): scatter-add g's rows into zeros shaped like params ----
template <typename T, typename Index>
class GatherGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    std::fill(out->data<T>(), out->data<T>() + out->num_elements(), T(0));
    const int64_t rows = out->dim(0), row = rows == 0 ? 0 : out->num_elements() / rows;
    const Index* idx = indices.data<Index>();
    for (int64_t i = 0; i < indices.num_elements(); ++i) {
      if (idx[i] < 0 || idx[i] >= rows)
        return errors::InvalidArgument("indices[", i, "] = ", idx[i], " is not in [0, ", rows, ")");
      T* dst = out->data<T>() + idx[i] * row;
      const T* src = g.data<T>() + i * row;
      for (int64_t j = 0; j < row; ++j) dst[j] += src[j];
    }
    return Status::OK();
  }
};

#define PF_REAL_KERNELS(op, Kernel)                                                             \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}), Kernel<float>); \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), Kernel<double>)

const std::vector<DType> kAny = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL};

PF_REGISTER_OP(OpDef("SumToShape")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("like", "Tlike")
                   .Output("output", "T")
                   .TypeAttr("T", kRealTypes)
                   .TypeAttr("Tlike", kAny)
                   .SetShapeFn([](ShapeContext& c) {
                     if (c.input(0).IsFullyDefined() && c.input(1).IsFullyDefined()) {
                       PF_RETURN_IF_ERROR(SumToShapeDims(c.input(0), c.input(1)).status());
                     }
                     return LikeShape(c, 1);
                   }));
PF_REAL_KERNELS("SumToShape", SumToShapeOp);

PF_REGISTER_OP(OpDef("ReduceGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("like", "Tlike")
                   .Output("output", "T")
                   .Attr("axes", std::vector<int64_t>{})
                   .Attr("mean", false)
                   .TypeAttr("T", kRealTypes)
                   .TypeAttr("Tlike", kAny)
                   .SetShapeFn([](ShapeContext& c) {
                     if (c.input(0).IsFullyDefined() && c.input(1).IsFullyDefined()) {
                       PF_RETURN_IF_ERROR(ReduceGradShape(c.input(0), c.input(1),
                                                          c.attr<std::vector<int64_t>>("axes"))
                                              .status());
                     }
                     return LikeShape(c, 1);
                   }));
PF_REAL_KERNELS("ReduceGrad", ReduceGradOp);

PF_REGISTER_OP(OpDef("SliceGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("like", "T")
                   .Output("output", "T")
                   .RequiredAttr("begin")
                   .TypeAttr("T", kAny)
                   .SetShapeFn([](ShapeContext& c) { return LikeShape(c, 1); }));
PF_REGISTER_KERNEL(KernelDef("SliceGrad", kDeviceCpu), SliceGradOp);

PF_REGISTER_OP(OpDef("ConcatGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .InputList("like", "T", "N")
                   .OutputList("output", "T", "N")
                   .RequiredAttr("axis")
                   .RequiredAttr("N")
                   .TypeAttr("T", kAny)
                   .SetShapeFn([](ShapeContext& c) {
                     for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i + 1));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("ConcatGrad", kDeviceCpu), ConcatGradOp);

PF_REGISTER_OP(OpDef("GatherGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("indices", "Tindices")
                   .Input("like", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kRealTypes)
                   .TypeAttr("Tindices", kIndexTypes)
                   .SetShapeFn([](ShapeContext& c) { return LikeShape(c, 2); }));
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("Tindices", {DT_INT32}),
                   GatherGradOp<float, int32_t>);
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("Tindices", {DT_INT64}),
                   GatherGradOp<float, int64_t>);
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_DOUBLE})
                       .TypeConstraint("Tindices", {DT_INT32}),
                   GatherGradOp<double, int32_t>);
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_DOUBLE})
                       .TypeConstraint("Tindices", {DT_INT64}),
                   GatherGradOp<double, int64_t>);

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
  VisitDType(t, [&](auto z) { c.flat<decltype(z)>()[0] = static_cast<decltype(z)>(v); });
  return ops::Const(s, c);
}

}  // namespace pf
