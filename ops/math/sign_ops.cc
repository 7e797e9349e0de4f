// Abs and Sign (with TensorFlow's gradients: g * sign(x), and zero), and the ArgMin builder (the
// op and its kernels are ArgMax's twin in ops/math/reduction_ops.cc).
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/reduction_ops.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// The dtypes these kernels are instantiated for (not op_util.h's lists, which may grow).

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
class SignUnaryOp : public OpKernel {
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
      .TypeAttr("T", kNumberTypes)
      .SetShapeFn(UnchangedShape);
}
#define PF_SIGN_KERNELS(op, F)                                                   \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),  \
                     SignUnaryOp<float, F>);                                     \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), \
                     SignUnaryOp<double, F>);                                    \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT32}),  \
                     SignUnaryOp<int32_t, F>);                                   \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT64}),  \
                     SignUnaryOp<int64_t, F>)

PF_REGISTER_OP(UnaryDef("Abs").SetGradient(AbsGrad));
PF_SIGN_KERNELS("Abs", AbsF);
PF_REGISTER_OP(UnaryDef("Sign").SetGradient(SignGrad));
PF_SIGN_KERNELS("Sign", SignF);

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

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_SIGN_KERNELS
