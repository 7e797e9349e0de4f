// Selection: Select (tf.compat.v1.where with three arguments), SelectV2 (TensorFlow 2's
// broadcasting tf.where) and Where (one argument: the coordinates of the true elements).
#include <cstring>

#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// The dtypes these kernels are instantiated for (VisitDType's; not op_util.h's lists, which may
// grow).
const std::vector<DType> kSelectTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL};

// Select: then and else of one shape; the condition of that shape, a scalar, or a vector of the
// first dimension (it then picks whole rows).
StatusOr<Shape> SelectShape(const Shape& c, const Shape& t, const Shape& e) {
  if (!t.IsCompatibleWith(e)) {
    return errors::InvalidArgument("'then' and 'else' must have the same size.  but received: ",
                                   t.ToString(), " vs. ", e.ToString());
  }
  const Shape out = t.MergeWith(e);
  if (c.unknown_rank() || out.unknown_rank() || c.rank() == 0) return out;
  if (c.rank() == 1 && out.rank() > 1) {
    if (c.dim(0) >= 0 && out.dim(0) >= 0 && c.dim(0) != out.dim(0)) {
      return errors::InvalidArgument(
          "Number of batches of 'then' must match size of 'cond', but "
          "saw: ",
          out.dim(0), " vs. ", c.dim(0));
    }
    return out;
  }
  if (!c.IsCompatibleWith(out)) {
    return errors::InvalidArgument(
        "'cond' must be a scalar, a vector of 'then''s first dimension or of 'then''s shape, but "
        "received: ",
        c.ToString(), " vs. ", out.ToString());
  }
  return out.MergeWith(c);
}

StatusOr<Shape> SelectV2Shape(const Shape& c, const Shape& t, const Shape& e) {
  auto te = BroadcastShapes(t, e);
  StatusOr<Shape> all = te.ok() ? BroadcastShapes(c, *te) : te;
  if (all.ok()) return all;
  return errors::InvalidArgument("condition ", c.ToString(), ", then ", t.ToString(), ", and else ",
                                 e.ToString(), " must be broadcastable");
}

// Strides of `in` over the dims of `out` (0 where `in` broadcasts). Right-aligned as NumPy,
// or left-aligned for Select's row-picking vector condition.
std::vector<int64_t> StridesOver(const Shape& in, const Shape& out, bool left_align) {
  const int r = out.rank(), ri = in.rank();
  std::vector<int64_t> strides(r, 0);
  int64_t stride = 1;
  for (int d = ri - 1; d >= 0; --d) {
    const int od = left_align ? d : d + r - ri;
    strides[od] = in.dim(d) == 1 && out.dim(od) != 1 ? 0 : stride;
    stride *= in.dim(d);
  }
  return strides;
}

template <typename T>
void SelectLoop(OpKernelContext* ctx, bool row_cond, Tensor* out) {
  const Tensor &c = ctx->input(0), &t = ctx->input(1), &e = ctx->input(2);
  const Shape& os = out->shape();
  const auto cs = StridesOver(c.shape(), os, row_cond), ts = StridesOver(t.shape(), os, false),
             es = StridesOver(e.shape(), os, false);
  const bool* cv = c.data<bool>();
  const T* tv = t.data<T>();
  const T* ev = e.data<T>();
  T* y = out->data<T>();
  const int rank = os.rank();
  ParallelFor(ctx, out->num_elements(), 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t oc = 0, ot = 0, oe = 0, rem = i;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t idx = rem % os.dim(d);
        rem /= os.dim(d);
        oc += idx * cs[d];
        ot += idx * ts[d];
        oe += idx * es[d];
      }
      y[i] = cv[oc] ? tv[ot] : ev[oe];
    }
  });
}

template <bool kV2>
class SelectOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Shape &c = ctx->input(0).shape(), &t = ctx->input(1).shape(), &e = ctx->input(2).shape();
    PF_RETURN_IF_ERROR((kV2 ? SelectV2Shape(c, t, e) : SelectShape(c, t, e)).status());
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const bool row_cond = !kV2 && c.rank() == 1 && t.rank() > 1;
    VisitDType(out->dtype(), [&](auto v) { SelectLoop<decltype(v)>(ctx, row_cond, out); });
    return Status::OK();
  }
};

PF_GRAD(SelectGradFn) {
  const Output c = n.input(0);
  Output zeros = ops::ZerosLike(s, g[0]);
  *dx = {Output(), ops::Select(s, c, g[0], zeros), ops::Select(s, c, zeros, g[0])};
  return Status::OK();
}
PF_GRAD(SelectV2GradFn) {
  const Output c = n.input(0);
  Output zeros = ops::ZerosLike(s, g[0]);
  *dx = {Output(), SumToShape(s, ops::SelectV2(s, c, g[0], zeros), n.input(1)),
         SumToShape(s, ops::SelectV2(s, c, zeros, g[0]), n.input(2))};
  return Status::OK();
}

OpDef SelectDef(const char* name) {
  return OpDef(name)
      .Input("condition", "bool")
      .Input("t", "T")
      .Input("e", "T")
      .Output("output", "T")
      .TypeAttr("T", kSelectTypes);
}
PF_REGISTER_OP(SelectDef("Select").SetGradient(SelectGradFn).SetShapeFn([](ShapeContext& c) {
  PF_ASSIGN_OR_RETURN(Shape out, SelectShape(c.input(0), c.input(1), c.input(2)));
  c.set_output(0, out);
  return Status::OK();
}));
PF_REGISTER_KERNEL(KernelDef("Select", kDeviceCpu), SelectOp<false>);
PF_REGISTER_OP(SelectDef("SelectV2").SetGradient(SelectV2GradFn).SetShapeFn([](ShapeContext& c) {
  PF_ASSIGN_OR_RETURN(Shape out, SelectV2Shape(c.input(0), c.input(1), c.input(2)));
  c.set_output(0, out);
  return Status::OK();
}));
PF_REGISTER_KERNEL(KernelDef("SelectV2", kDeviceCpu), SelectOp<true>);

// ---- Where: int64 [N, rank], the coordinates of the non-zero elements in row-major order ----
int64_t CountTrue(const Tensor& t) {
  int64_t n = 0;
  VisitDType(t.dtype(), [&](auto v) {
    using T = decltype(v);
    for (const T& x : t.flat<T>()) n += x != T(0);
  });
  return n;
}

class WhereOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int rank = in.rank();
    if (out->dim(0) != CountTrue(in)) {
      return errors::Internal("Where: the output has ", out->dim(0), " rows for ", CountTrue(in),
                              " true elements");
    }
    int64_t* y = out->data<int64_t>();
    VisitDType(in.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* x = in.data<T>();
      for (int64_t i = 0; i < in.num_elements(); ++i) {
        if (x[i] == T(0)) continue;
        int64_t rem = i;
        for (int d = rank - 1; d >= 0; --d) {
          y[d] = rem % in.dim(d);
          rem /= in.dim(d);
        }
        y += rank;
      }
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("Where")
                   .Input("input", "T")
                   .Output("index", "int64")
                   .TypeAttr("T", kSelectTypes, DT_BOOL)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     const Shape& in = c.input(0);
                     if (in.unknown_rank()) return (c.set_output(0, Shape{-1, -1}), Status::OK());
                     const Tensor* v = c.input_tensor(0);
                     c.set_output(0, Shape{v != nullptr ? CountTrue(*v) : -1, in.rank()});
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Where", kDeviceCpu), WhereOp);

}  // namespace

namespace ops {

Output Where(const Scope& s, Output condition) {
  return NodeBuilder(s, "Where").Input(condition).Finalize();
}
Output Select(const Scope& s, Output condition, Output t, Output e) {
  return NodeBuilder(s, "Select").Input(condition).Input(t).Input(e).Finalize();
}
Output SelectV2(const Scope& s, Output condition, Output t, Output e) {
  return NodeBuilder(s, "SelectV2").Input(condition).Input(t).Input(e).Finalize();
}

}  // namespace ops
}  // namespace pf
