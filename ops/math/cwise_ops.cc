// Elementwise math with NumPy broadcasting: Add Sub Mul Div Maximum Minimum Pow, the unary
// Neg Square Sqrt Rsqrt Exp Log Floor, and the comparisons Equal Less Greater. The formulas are
// the functors of cwise_functors.cuh, which the GPU kernels (cwise_ops.cu) run too.
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/cwise_functors.cuh"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

template <typename T, typename F, int kCost = 1>
class BinaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override { return BinaryElementwise<T, T>(ctx, F(), kCost); }
};

template <typename T, typename F>
class CompareOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override { return BinaryElementwise<T, bool>(ctx, F()); }
};

template <typename T, typename F, int kCost = 1>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override { return UnaryElementwise<T, T>(ctx, F(), kCost); }
};

template <typename T>
class IntDivOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    for (T v : ctx->input(1).flat<T>()) {
      if (v == 0) return errors::InvalidArgument("Integer division by zero");
    }
    return BinaryElementwise<T, T>(ctx, DivF());
  }
};

// ---- gradients ----
PF_GRAD(AddGrad) {
  *dx = {SumToShape(s, g[0], n.input(0)), SumToShape(s, g[0], n.input(1))};
  return Status::OK();
}
PF_GRAD(SubGrad) {
  *dx = {SumToShape(s, g[0], n.input(0)), SumToShape(s, ops::Neg(s, g[0]), n.input(1))};
  return Status::OK();
}
PF_GRAD(MulGrad) {
  *dx = {SumToShape(s, ops::Mul(s, g[0], n.input(1)), n.input(0)),
         SumToShape(s, ops::Mul(s, g[0], n.input(0)), n.input(1))};
  return Status::OK();
}
PF_GRAD(DivGrad) {
  // d(x/y)/dy = -x/y^2 = -out/y.
  *dx = {
      SumToShape(s, ops::Div(s, g[0], n.input(1)), n.input(0)),
      SumToShape(s, ops::Neg(s, ops::Mul(s, g[0], ops::Div(s, Out(n), n.input(1)))), n.input(1))};
  return Status::OK();
}
// Maximum/Minimum: the gradient goes to the input that won (ties to x, as TensorFlow).
Status SelectGrad(const Scope& s, const Node& n, const Grads& g, Grads* dx, bool max) {
  const Output x = n.input(0), y = n.input(1);
  const DType t = x.dtype();
  Output y_wins = ops::Cast(s, max ? ops::Greater(s, y, x) : ops::Less(s, y, x), t);
  Output x_wins = ops::Sub(s, ScalarOf(s, 1, t), y_wins);
  *dx = {SumToShape(s, ops::Mul(s, g[0], x_wins), x), SumToShape(s, ops::Mul(s, g[0], y_wins), y)};
  return Status::OK();
}
PF_GRAD(MaximumGrad) { return SelectGrad(s, n, g, dx, true); }
PF_GRAD(MinimumGrad) { return SelectGrad(s, n, g, dx, false); }
PF_GRAD(PowGrad) {
  // dx = g * y * x^(y-1); dy = g * x^y * log(x), taken as 0 where x <= 0.
  const Output x = n.input(0), y = n.input(1);
  const DType t = x.dtype();
  Output gx = ops::Mul(s, g[0], ops::Mul(s, y, ops::Pow(s, x, ops::Sub(s, y, ScalarOf(s, 1, t)))));
  Output positive = ops::Cast(s, ops::Greater(s, x, ScalarOf(s, 0, t)), t);
  Output safe_log = ops::Mul(s, ops::Log(s, ops::Maximum(s, x, ScalarOf(s, 1e-30, t))), positive);
  Output gy = ops::Mul(s, g[0], ops::Mul(s, Out(n), safe_log));
  *dx = {SumToShape(s, gx, x), SumToShape(s, gy, y)};
  return Status::OK();
}
PF_GRAD(NegGrad) {
  *dx = {ops::Neg(s, g[0])};
  return Status::OK();
}
PF_GRAD(SquareGrad) {
  *dx = {ops::Mul(s, g[0], ops::Mul(s, ScalarOf(s, 2, n.input(0).dtype()), n.input(0)))};
  return Status::OK();
}
PF_GRAD(SqrtGrad) {
  *dx = {ops::Div(s, ops::Mul(s, g[0], ScalarOf(s, 0.5, n.input(0).dtype())), Out(n))};
  return Status::OK();
}
PF_GRAD(RsqrtGrad) {
  // d(x^-1/2) = -1/2 x^-3/2 = -1/2 y^3
  Output y = Out(n);
  *dx = {ops::Mul(s, g[0],
                  ops::Mul(s, ScalarOf(s, -0.5, y.dtype()), ops::Mul(s, y, ops::Square(s, y))))};
  return Status::OK();
}
PF_GRAD(ExpGrad) {
  *dx = {ops::Mul(s, g[0], Out(n))};
  return Status::OK();
}
PF_GRAD(LogGrad) {
  *dx = {ops::Div(s, g[0], n.input(0))};
  return Status::OK();
}

OpDef BinaryDef(const char* name, const std::vector<DType>& types) {
  return OpDef(name)
      .Input("x", "T")
      .Input("y", "T")
      .Output("z", "T")
      .TypeAttr("T", types)
      .SetShapeFn(BroadcastBinaryShape);
}
OpDef CompareDef(const char* name) {
  return OpDef(name)
      .Input("x", "T")
      .Input("y", "T")
      .Output("z", "bool")
      .TypeAttr("T", kNumberTypes)
      .SetNotDifferentiable()
      .SetShapeFn(BroadcastBinaryShape);
}
OpDef UnaryDef(const char* name, const std::vector<DType>& types) {
  return OpDef(name)
      .Input("x", "T")
      .Output("y", "T")
      .TypeAttr("T", types)
      .SetShapeFn(UnchangedShape);
}

KernelDef Cpu(const char* op, DType t) {
  return KernelDef(op, kDeviceCpu).TypeConstraint("T", {t});
}

#define PF_CWISE_NUMBER_KERNELS(op, Kernel, F)               \
  PF_REGISTER_KERNEL(Cpu(op, DT_FLOAT), Kernel<float, F>);   \
  PF_REGISTER_KERNEL(Cpu(op, DT_DOUBLE), Kernel<double, F>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT32), Kernel<int32_t, F>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT64), Kernel<int64_t, F>)
#define PF_CWISE_REAL_KERNELS(op, Kernel, F)               \
  PF_REGISTER_KERNEL(Cpu(op, DT_FLOAT), Kernel<float, F>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_DOUBLE), Kernel<double, F>)

PF_REGISTER_OP(BinaryDef("Add", kNumberTypes).SetGradient(AddGrad));
PF_CWISE_NUMBER_KERNELS("Add", BinaryOp, AddF);
PF_REGISTER_OP(BinaryDef("Sub", kNumberTypes).SetGradient(SubGrad));
PF_CWISE_NUMBER_KERNELS("Sub", BinaryOp, SubF);
PF_REGISTER_OP(BinaryDef("Mul", kNumberTypes).SetGradient(MulGrad));
PF_CWISE_NUMBER_KERNELS("Mul", BinaryOp, MulF);
PF_REGISTER_OP(BinaryDef("Div", kNumberTypes).SetGradient(DivGrad));
PF_CWISE_REAL_KERNELS("Div", BinaryOp, DivF);
PF_REGISTER_KERNEL(Cpu("Div", DT_INT32), IntDivOp<int32_t>);
PF_REGISTER_KERNEL(Cpu("Div", DT_INT64), IntDivOp<int64_t>);
PF_REGISTER_OP(BinaryDef("Maximum", kNumberTypes).SetGradient(MaximumGrad));
PF_CWISE_NUMBER_KERNELS("Maximum", BinaryOp, MaxF);
PF_REGISTER_OP(BinaryDef("Minimum", kNumberTypes).SetGradient(MinimumGrad));
PF_CWISE_NUMBER_KERNELS("Minimum", BinaryOp, MinF);
PF_REGISTER_OP(BinaryDef("Pow", kRealTypes).SetGradient(PowGrad));
PF_REGISTER_KERNEL(Cpu("Pow", DT_FLOAT), BinaryOp<float, PowF, 20>);
PF_REGISTER_KERNEL(Cpu("Pow", DT_DOUBLE), BinaryOp<double, PowF, 20>);

PF_REGISTER_OP(CompareDef("Equal"));
PF_CWISE_NUMBER_KERNELS("Equal", CompareOp, EqualF);
PF_REGISTER_OP(CompareDef("Less"));
PF_CWISE_NUMBER_KERNELS("Less", CompareOp, LessF);
PF_REGISTER_OP(CompareDef("Greater"));
PF_CWISE_NUMBER_KERNELS("Greater", CompareOp, GreaterF);

PF_REGISTER_OP(UnaryDef("Neg", kNumberTypes).SetGradient(NegGrad));
PF_CWISE_NUMBER_KERNELS("Neg", UnaryOp, NegF);
PF_REGISTER_OP(UnaryDef("Square", kNumberTypes).SetGradient(SquareGrad));
PF_CWISE_NUMBER_KERNELS("Square", UnaryOp, SquareF);
PF_REGISTER_OP(UnaryDef("Sqrt", kRealTypes).SetGradient(SqrtGrad));
PF_CWISE_REAL_KERNELS("Sqrt", UnaryOp, SqrtF);
PF_REGISTER_OP(UnaryDef("Rsqrt", kRealTypes).SetGradient(RsqrtGrad));
PF_CWISE_REAL_KERNELS("Rsqrt", UnaryOp, RsqrtF);
PF_REGISTER_OP(UnaryDef("Exp", kRealTypes).SetGradient(ExpGrad));
PF_REGISTER_KERNEL(Cpu("Exp", DT_FLOAT), UnaryOp<float, ExpF, 10>);
PF_REGISTER_KERNEL(Cpu("Exp", DT_DOUBLE), UnaryOp<double, ExpF, 10>);
PF_REGISTER_OP(UnaryDef("Log", kRealTypes).SetGradient(LogGrad));
PF_REGISTER_KERNEL(Cpu("Log", DT_FLOAT), UnaryOp<float, LogF, 10>);
PF_REGISTER_KERNEL(Cpu("Log", DT_DOUBLE), UnaryOp<double, LogF, 10>);
PF_REGISTER_OP(UnaryDef("Floor", kRealTypes).SetNotDifferentiable());
PF_CWISE_REAL_KERNELS("Floor", UnaryOp, FloorF);

Output Binary(const Scope& s, const char* op, Output a, Output b) {
  return NodeBuilder(s, op).Input(a).Input(b).Finalize();
}
Output Unary(const Scope& s, const char* op, Output x) {
  return NodeBuilder(s, op).Input(x).Finalize();
}

}  // namespace

namespace ops {

Output Add(const Scope& s, Output a, Output b) { return Binary(s, "Add", a, b); }
Output Sub(const Scope& s, Output a, Output b) { return Binary(s, "Sub", a, b); }
Output Mul(const Scope& s, Output a, Output b) { return Binary(s, "Mul", a, b); }
Output Div(const Scope& s, Output a, Output b) { return Binary(s, "Div", a, b); }
Output Maximum(const Scope& s, Output a, Output b) { return Binary(s, "Maximum", a, b); }
Output Minimum(const Scope& s, Output a, Output b) { return Binary(s, "Minimum", a, b); }
Output Pow(const Scope& s, Output a, Output b) { return Binary(s, "Pow", a, b); }
Output Equal(const Scope& s, Output a, Output b) { return Binary(s, "Equal", a, b); }
Output Less(const Scope& s, Output a, Output b) { return Binary(s, "Less", a, b); }
Output Greater(const Scope& s, Output a, Output b) { return Binary(s, "Greater", a, b); }
Output Neg(const Scope& s, Output x) { return Unary(s, "Neg", x); }
Output Square(const Scope& s, Output x) { return Unary(s, "Square", x); }
Output Sqrt(const Scope& s, Output x) { return Unary(s, "Sqrt", x); }
Output Rsqrt(const Scope& s, Output x) { return Unary(s, "Rsqrt", x); }
Output Exp(const Scope& s, Output x) { return Unary(s, "Exp", x); }
Output Log(const Scope& s, Output x) { return Unary(s, "Log", x); }
Output Floor(const Scope& s, Output x) { return Unary(s, "Floor", x); }

}  // namespace ops
}  // namespace pf
