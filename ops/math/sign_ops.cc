// Abs and Sign (with TensorFlow's gradients: g * sign(x), and zero) and ArgMin, ArgMax's twin
// (ops/math/reduction_ops.cc: the same attr-axis form and checks).
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/reduction_ops.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// The dtypes these kernels are instantiated for (not op_util.h's lists, which may grow).
const std::vector<DType> kKernelTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64};

struct AbsF {
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? -x : x;
  }
};
// -1, 0 or 1; NaN stays NaN.
struct SignF {
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == T(0) ? T(0) : x;
  }
};

template <typename T, typename F>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override { return UnaryElementwise<T, T>(ctx, F()); }
};

PF_GRAD(AbsGrad) {
  *dx = {ops::Mul(s, g[0], ops::Sign(s, n.input(0)))};
  return Status::OK();
}
PF_GRAD(SignGrad) {
  *dx = {ops::ZerosLike(s, n.input(0))};
  return Status::OK();
}

OpDef UnaryDef(const char* name) {
  return OpDef(name)
      .Input("x", "T")
      .Output("y", "T")
      .TypeAttr("T", kKernelTypes)
      .SetShapeFn(UnchangedShape);
}
#define PF_SIGN_KERNELS(op, F)                                                   \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),  \
                     UnaryOp<float, F>);                                         \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), \
                     UnaryOp<double, F>);                                        \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT32}),  \
                     UnaryOp<int32_t, F>);                                       \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT64}), UnaryOp<int64_t, F>)

PF_REGISTER_OP(UnaryDef("Abs").SetGradient(AbsGrad));
PF_SIGN_KERNELS("Abs", AbsF);
PF_REGISTER_OP(UnaryDef("Sign").SetGradient(SignGrad));
PF_SIGN_KERNELS("Sign", SignF);

// ---- ArgMin: the first index of the smallest value along `axis` ----
template <typename T, typename Index>
class ArgMinOp : public OpKernel {
 public:
  explicit ArgMinOp(const Node& n) : OpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_ASSIGN_OR_RETURN(const int axis, ArgMaxAxis(in.shape(), axis_));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= in.dim(d);
    for (int d = axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
    const int64_t n = in.dim(axis);
    const T* x = in.data<T>();
    Index* y = out->data<Index>();
    ParallelFor(ctx, outer * inner, n, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const T* base = x + (t / inner) * n * inner + t % inner;
        int64_t best = 0;
        for (int64_t r = 1; r < n; ++r) {
          if (base[r * inner] < base[best * inner]) best = r;
        }
        y[t] = static_cast<Index>(best);
      }
    });
    return Status::OK();
  }

 private:
  int64_t axis_;
};

PF_REGISTER_OP(OpDef("ArgMin")
                   .Input("input", "T")
                   .Output("output", "output_type")
                   .Attr("axis", int64_t{0})
                   .TypeAttr("T", kKernelTypes)
                   .TypeAttr("output_type", kIndexTypes, DT_INT64)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     Shape in = c.input(0);
                     if (in.unknown_rank()) return (c.set_output(0, in), Status::OK());
                     PF_ASSIGN_OR_RETURN(int axis, ArgMaxAxis(in, c.attr<int64_t>("axis")));
                     in.RemoveDim(axis);
                     c.set_output(0, in);
                     return Status::OK();
                   }));
#define PF_ARGMIN_KERNELS(T)                                         \
  PF_REGISTER_KERNEL(KernelDef("ArgMin", kDeviceCpu)                 \
                         .TypeConstraint("T", {DataTypeOf<T>()})     \
                         .TypeConstraint("output_type", {DT_INT32}), \
                     ArgMinOp<T, int32_t>);                          \
  PF_REGISTER_KERNEL(KernelDef("ArgMin", kDeviceCpu)                 \
                         .TypeConstraint("T", {DataTypeOf<T>()})     \
                         .TypeConstraint("output_type", {DT_INT64}), \
                     ArgMinOp<T, int64_t>)
PF_ARGMIN_KERNELS(float);
PF_ARGMIN_KERNELS(double);
PF_ARGMIN_KERNELS(int32_t);
PF_ARGMIN_KERNELS(int64_t);

}  // namespace

namespace ops {

Output Abs(const Scope& s, Output x) { return NodeBuilder(s, "Abs").Input(x).Finalize(); }
Output Sign(const Scope& s, Output x) { return NodeBuilder(s, "Sign").Input(x).Finalize(); }
Output ArgMin(const Scope& s, Output x, int axis, DType output_type) {
  return NodeBuilder(s, "ArgMin")
      .Input(x)
      .Attr("axis", int64_t{axis})
      .Attr("output_type", output_type)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
