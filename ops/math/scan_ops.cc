// Sequences: Range (tf.range) and Cumsum (tf.math.cumsum, exclusive and reverse, with its
// gradient: the cumsum of the gradient the other way).
#include <cmath>
#include <limits>

#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// The dtypes these kernels are instantiated for (not op_util.h's lists, which may grow).

// ---- Range ----
template <typename T>
StatusOr<int64_t> RangeSize(T start, T limit, T delta) {
  if (delta == T(0)) return errors::InvalidArgument("Requires delta != 0: ", delta);
  if (delta > T(0) && start > limit) {
    return errors::InvalidArgument("Requires start <= limit when delta > 0: ", start, "/", limit);
  }
  if (delta < T(0) && start < limit) {
    return errors::InvalidArgument("Requires start >= limit when delta < 0: ", start, "/", limit);
  }
  if constexpr (std::is_integral_v<T>) {
    // In unsigned arithmetic: limit - start may not fit T.
    using U = std::make_unsigned_t<T>;
    const U span = start <= limit ? U(limit) - U(start) : U(start) - U(limit);
    const U step = delta > 0 ? U(delta) : U(0) - U(delta);
    return static_cast<int64_t>(span / step + (span % step != 0));
  } else {
    const double size = std::ceil(std::abs((static_cast<double>(limit) - start) / delta));
    if (!(size <= static_cast<double>(std::numeric_limits<int64_t>::max()))) {
      return errors::InvalidArgument("Requires ((limit - start) / delta) <= ",
                                     std::numeric_limits<int64_t>::max(), ", got ", size);
    }
    return static_cast<int64_t>(size);
  }
}

StatusOr<int64_t> RangeSizeOf(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  StatusOr<int64_t> size = errors::InvalidArgument("Range: unsupported dtype");
  VisitDType(start.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, bool>)
      size = RangeSize<T>(start.scalar<T>(), limit.scalar<T>(), delta.scalar<T>());
  });
  return size;
}

Status RangeShape(ShapeContext& c) {
  const char* names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    if (!c.input(i).unknown_rank() && c.input(i).rank() != 0) {
      return errors::InvalidArgument(names[i], " must be a scalar, not shape ",
                                     c.input(i).ToString());
    }
  }
  if (c.input_tensor(0) == nullptr || c.input_tensor(1) == nullptr || c.input_tensor(2) == nullptr)
    return (c.set_output(0, Shape{-1}), Status::OK());
  PF_ASSIGN_OR_RETURN(int64_t size,
                      RangeSizeOf(*c.input_tensor(0), *c.input_tensor(1), *c.input_tensor(2)));
  c.set_output(0, Shape{size});
  return Status::OK();
}

class RangeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor &start = ctx->input(0), &delta = ctx->input(2);
    PF_ASSIGN_OR_RETURN(int64_t size, RangeSizeOf(start, ctx->input(1), delta));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    if (out->num_elements() != size) {
      return errors::Internal("Range: output of ", out->num_elements(), " elements for ", size);
    }
    VisitDType(start.dtype(), [&](auto v) {
      using T = decltype(v);
      if constexpr (!std::is_same_v<T, bool>) {
        T* y = out->data<T>();
        const T s = start.scalar<T>(), d = delta.scalar<T>();
        for (int64_t i = 0; i < size; ++i) y[i] = static_cast<T>(s + static_cast<T>(i) * d);
      }
    });
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("Range")
                   .Input("start", "Tidx")
                   .Input("limit", "Tidx")
                   .Input("delta", "Tidx")
                   .Output("output", "Tidx")
                   .TypeAttr("Tidx", kNumberTypes, DT_INT32)
                   .SetNotDifferentiable()
                   .SetShapeFn(RangeShape));
PF_REGISTER_KERNEL(KernelDef("Range", kDeviceCpu), RangeOp);

// ---- Cumsum ----
StatusOr<int> ScanAxis(const Shape& x, const Tensor& axis) {
  if (axis.rank() != 0)
    return errors::InvalidArgument("axis must be a scalar, got shape ", axis.shape());
  const int64_t a = axis.AsInt64Vector()[0];
  const int rank = x.rank();
  if (a < -rank || a >= rank) {
    return errors::InvalidArgument("Expected scan axis in the range [", -rank, ", ", rank,
                                   "), but got ", a);
  }
  return static_cast<int>(a < 0 ? a + rank : a);
}

template <typename T>
class CumsumOp : public OpKernel {
 public:
  explicit CumsumOp(const Node& n)
      : OpKernel(n), exclusive_(n.attr<bool>("exclusive")), reverse_(n.attr<bool>("reverse")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(const int axis, ScanAxis(in.shape(), ctx->input(1)));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    const int64_t n = in.dim(axis);
    const T* x = in.data<T>();
    T* y = out->data<T>();
    ParallelFor(ctx, outer * inner, n, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t base = (t / inner) * n * inner + t % inner;
        T acc = T(0);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = base + (reverse_ ? n - 1 - j : j) * inner;
          if (exclusive_) {
            y[at] = acc;
            acc += x[at];
          } else {
            acc += x[at];
            y[at] = acc;
          }
        }
      }
    });
    return Status::OK();
  }

 private:
  bool exclusive_, reverse_;
};

PF_GRAD(CumsumGrad) {
  *dx = {ops::Cumsum(s, g[0], n.input(1), n.attr<bool>("exclusive"), !n.attr<bool>("reverse")),
         Output()};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("Cumsum")
                   .Input("x", "T")
                   .Input("axis", "Tidx")
                   .Output("out", "T")
                   .Attr("exclusive", false)
                   .Attr("reverse", false)
                   .TypeAttr("T", kNumberTypes)
                   .TypeAttr("Tidx", kIndexTypes, DT_INT32)
                   .SetGradient(CumsumGrad)
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRank(1, 0));
                     const Tensor* axis = c.input_tensor(1);
                     if (axis != nullptr && !c.input(0).unknown_rank())
                       PF_RETURN_IF_ERROR(ScanAxis(c.input(0), *axis).status());
                     return UnchangedShape(c);
                   }));
#define PF_CUMSUM_KERNEL(T)                                                                  \
  PF_REGISTER_KERNEL(KernelDef("Cumsum", kDeviceCpu).TypeConstraint("T", {DataTypeOf<T>()}), \
                     CumsumOp<T>)
PF_CUMSUM_KERNEL(float);
PF_CUMSUM_KERNEL(double);
PF_CUMSUM_KERNEL(int32_t);
PF_CUMSUM_KERNEL(int64_t);

}  // namespace

namespace ops {

Output Range(const Scope& s, Output start, Output limit, Output delta) {
  return NodeBuilder(s, "Range").Input(start).Input(limit).Input(delta).Finalize();
}
Output Range(const Scope& s, int64_t start, int64_t limit, int64_t delta) {
  Scope c = s.NewSubScope("");
  auto fits = [](int64_t v) { return v == static_cast<int32_t>(v); };
  const bool int32 = fits(start) && fits(limit) && fits(delta);
  auto scalar = [&](const char* name, int64_t v) {
    return Const(c.WithOpName(name),
                 int32 ? Tensor::Scalar(static_cast<int32_t>(v)) : Tensor::Scalar(v));
  };
  return Range(s, scalar("start", start), scalar("limit", limit), scalar("delta", delta));
}
Output Cumsum(const Scope& s, Output x, Output axis, bool exclusive, bool reverse) {
  return NodeBuilder(s, "Cumsum")
      .Input(x)
      .Input(axis)
      .Attr("exclusive", exclusive)
      .Attr("reverse", reverse)
      .Finalize();
}
Output Cumsum(const Scope& s, Output x, int axis, bool exclusive, bool reverse) {
  return Cumsum(s, x, ConstInt(s.NewSubScope("").WithOpName("axis"), axis), exclusive, reverse);
}

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_CUMSUM_KERNEL
