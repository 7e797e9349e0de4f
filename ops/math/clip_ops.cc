// Clipping: the ClipByValue op (TensorFlow's, with its gradient) and the composite builders
// ClipByNorm, GlobalNorm and ClipByGlobalNorm, built from existing ops as TensorFlow's Python
// builds them (the same formulas, so the same NaN/inf behaviour).
#include <algorithm>

#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// The dtypes these kernels are instantiated for (not op_util.h's lists, which may grow).

// min and max are scalars or t's shape (TensorFlow's ClipByValue kernel rule).
Status ValidateClipByValue(const Shape& t, const Shape& lo, const Shape& hi) {
  auto ok = [&](const Shape& b) { return b.rank() == 0 || b.IsCompatibleWith(t); };
  if (t.unknown_rank() || lo.unknown_rank() || hi.unknown_rank() || (ok(lo) && ok(hi)))
    return Status::OK();
  return errors::InvalidArgument(
      "clip_value_min and clip_value_max must be either scalars or have the same shape as t: "
      "t.shape = ",
      t.ToString(), ", clip_value_min.shape = ", lo.ToString(),
      ", clip_value_max.shape = ", hi.ToString());
}

template <typename T>
class ClipByValueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    const Tensor& lo = ctx->input(1);
    const Tensor& hi = ctx->input(2);
    PF_RETURN_IF_ERROR(ValidateClipByValue(t.shape(), lo.shape(), hi.shape()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const T* x = t.data<T>();
    const T* a = lo.data<T>();
    const T* b = hi.data<T>();
    const int64_t sa = lo.num_elements() == 1 && t.num_elements() != 1 ? 0 : 1;
    const int64_t sb = hi.num_elements() == 1 && t.num_elements() != 1 ? 0 : 1;
    T* y = out->data<T>();
    ParallelFor(ctx, t.num_elements(), 2, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        // TensorFlow's order, max(min(t, hi), lo): lo wins when lo > hi; a NaN in t stays NaN.
        const T v = b[i * sb] < x[i] ? b[i * sb] : x[i];
        y[i] = v < a[i * sa] ? a[i * sa] : v;
      }
    });
    return Status::OK();
  }
};

// TensorFlow's _ClipByValueGrad: t gets g where lo <= t <= hi, each bound gets g where it clipped.
PF_GRAD(ClipByValueGrad) {
  const Output x = n.input(0), lo = n.input(1), hi = n.input(2);
  Output zeros = ops::ZerosLike(s, g[0]);
  Output below = ops::Less(s, x, lo), above = ops::Greater(s, x, hi);
  Output gx = ops::SelectV2(s, below, zeros, ops::SelectV2(s, above, zeros, g[0]));
  Output glo = SumToShape(s, ops::SelectV2(s, below, g[0], zeros), lo);
  Output ghi = SumToShape(s, ops::SelectV2(s, above, g[0], zeros), hi);
  *dx = {gx, glo, ghi};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("ClipByValue")
                   .Input("t", "T")
                   .Input("clip_value_min", "T")
                   .Input("clip_value_max", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kNumberTypes)
                   .SetGradient(ClipByValueGrad)
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(ValidateClipByValue(c.input(0), c.input(1), c.input(2)));
                     return UnchangedShape(c);
                   }));
PF_REGISTER_KERNEL(KernelDef("ClipByValue", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   ClipByValueOp<float>);
PF_REGISTER_KERNEL(KernelDef("ClipByValue", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   ClipByValueOp<double>);
PF_REGISTER_KERNEL(KernelDef("ClipByValue", kDeviceCpu).TypeConstraint("T", {DT_INT32}),
                   ClipByValueOp<int32_t>);
PF_REGISTER_KERNEL(KernelDef("ClipByValue", kDeviceCpu).TypeConstraint("T", {DT_INT64}),
                   ClipByValueOp<int64_t>);

}  // namespace

namespace ops {

// The ClipByValue op where the bounds are scalars or t's shape; TensorFlow's Python form,
// Maximum(Minimum(t, max), min), where they broadcast to t's shape (per column, say). Bounds that
// do neither get the op's error.
Output ClipByValue(const Scope& s, Output t, Output clip_value_min, Output clip_value_max) {
  const pf::Shape& ts = t.shape();
  auto op_fits = [&](const Output& b) {
    return b.shape().unknown_rank() || b.shape().rank() == 0 || b.shape().IsCompatibleWith(ts);
  };
  auto broadcasts_to_t = [&](const Output& b) {
    StatusOr<pf::Shape> r = BroadcastShapes(ts, b.shape());
    return r.ok() && r->rank() == ts.rank() && r->IsCompatibleWith(ts);
  };
  if (!(op_fits(clip_value_min) && op_fits(clip_value_max)) && !ts.unknown_rank() &&
      broadcasts_to_t(clip_value_min) && broadcasts_to_t(clip_value_max)) {
    Output lower = Minimum(s.NewSubScope("clip_by_value"), t, clip_value_max);
    return Maximum(s, lower, clip_value_min);
  }
  return NodeBuilder(s, "ClipByValue")
      .Input(t)
      .Input(clip_value_min)
      .Input(clip_value_max)
      .Finalize();
}

// TensorFlow's clip_by_norm: the norm is taken where the sum of squares is positive, so a zero
// t neither divides by zero nor has a NaN gradient.
Output ClipByNorm(const Scope& s, Output t, Output clip_norm, const std::vector<int32_t>& axes) {
  Scope sub = s.NewSubScope("clip_by_norm");
  Output l2sum = Sum(sub, Mul(sub, t, t), axes, /*keep_dims=*/true);
  Output pred = Greater(sub, l2sum, ScalarOf(sub, 0, t.dtype()));
  Output l2sum_safe = SelectV2(sub, pred, l2sum, OnesLike(sub, l2sum));
  Output l2norm = SelectV2(sub, pred, Sqrt(sub, l2sum_safe), l2sum);
  Output intermediate = Mul(sub, t, clip_norm);
  return Identity(s, Div(sub, intermediate, Maximum(sub, l2norm, clip_norm)));
}

Output GlobalNorm(const Scope& s, const std::vector<Output>& t_list) {
  Scope sub = s.NewSubScope("global_norm");
  std::vector<Output> squares;
  for (const Output& t : t_list) {
    if (t.node != nullptr) squares.push_back(L2Loss(sub, t));
  }
  if (squares.empty()) {
    throw Error(errors::InvalidArgument("GlobalNorm (", s.Qualify("global_norm"),
                                        "): t_list has no tensor, only nulls"));
  }
  Output half = squares.size() == 1 ? squares[0] : AddN(sub, squares);
  return Sqrt(sub.WithOpName("global_norm"), Mul(sub, half, ScalarOf(sub, 2, half.dtype())));
}

std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const Scope& s,
                                                        const std::vector<Output>& t_list,
                                                        Output clip_norm, Output use_norm) {
  Scope sub = s.NewSubScope("clip_by_global_norm");
  if (use_norm.node == nullptr) use_norm = GlobalNorm(sub, t_list);
  const DType dt = use_norm.dtype();
  Output one = ScalarOf(sub, 1, dt);
  // scale = clip_norm * min(1 / norm, 1 / clip_norm), plus (norm - norm): NaN for an inf or NaN
  // norm, so every clipped value is NaN (TensorFlow's documented signal), 0 otherwise.
  Output scale_for_finite =
      Mul(sub, clip_norm, Minimum(sub, Div(sub, one, use_norm), Div(sub, one, clip_norm)));
  Output scale = Add(sub, scale_for_finite, Sub(sub, use_norm, use_norm));
  std::vector<Output> clipped;
  for (size_t i = 0; i < t_list.size(); ++i) {
    const Output& t = t_list[i];
    if (t.node == nullptr) {
      clipped.emplace_back();
      continue;
    }
    Scope at = sub.ColocateWith(Operation(t));
    Output sc = t.dtype() == dt ? scale : Cast(at, scale, t.dtype());
    clipped.push_back(
        Identity(at.WithOpName("clip_by_global_norm_" + std::to_string(i)), Mul(at, t, sc)));
  }
  return {clipped, use_norm};
}

}  // namespace ops
}  // namespace pf
