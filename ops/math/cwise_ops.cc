// Elementwise math with NumPy broadcasting: Add Sub Mul Div Maximum Minimum Pow, the unary
// Neg Square Sqrt Rsqrt Exp Log Erf Floor, and the comparisons Equal Less Greater. The formulas are
// the functors of cwise_functors.cuh, which the GPU kernels (cwise_ops.cu) run too. The CPU
// kernels take TF's dtypes (docs/api.md "Dtypes"): half and bfloat16 compute in float and round
// back to nearest even (ViaFloat); int8, int16 and uint8 compute in int and wrap around.
#include <type_traits>

#include "placeflow/ops/everyday_ops.h"
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

// Integer Div: truncates toward zero (C++ and TF's), and checks the divisor.
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
PF_GRAD(ErfGrad) {  // 2 / sqrt(pi) e^(-x^2)
  const Output x = n.input(0);
  const Output e = ops::Exp(s, ops::Neg(s, ops::Square(s, x)));
  *dx = {ops::Mul(s, g[0], ops::Mul(s, ScalarOf(s, 1.1283791670955126, x.dtype()), e))};
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
      .TypeAttr("T", kRealNumberTypes)
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

// Kernel<T, F> on each dtype of a group. NUMBER: float, double, int32, int64 (what the GPU
// kernels take too); REAL: float, double; HALF: half and bfloat16 through ViaFloat; SMALL_INT:
// int8, int16, uint8; SIGNED_SMALL: int8, int16.
#define PF_CWISE_NUMBER_KERNELS(op, Kernel, F)               \
  PF_REGISTER_KERNEL(Cpu(op, DT_FLOAT), Kernel<float, F>);   \
  PF_REGISTER_KERNEL(Cpu(op, DT_DOUBLE), Kernel<double, F>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT32), Kernel<int32_t, F>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT64), Kernel<int64_t, F>)
#define PF_CWISE_REAL_KERNELS(op, Kernel, F)               \
  PF_REGISTER_KERNEL(Cpu(op, DT_FLOAT), Kernel<float, F>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_DOUBLE), Kernel<double, F>)
#define PF_CWISE_HALF_KERNELS(op, Kernel, F)                             \
  PF_REGISTER_KERNEL(Cpu(op, DT_HALF), Kernel<Half, ViaFloat<Half, F>>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_BFLOAT16), Kernel<BFloat16, ViaFloat<BFloat16, F>>)
#define PF_CWISE_SIGNED_SMALL_KERNELS(op, Kernel, F)       \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT8), Kernel<int8_t, F>); \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT16), Kernel<int16_t, F>)
#define PF_CWISE_SMALL_INT_KERNELS(op, Kernel, F) \
  PF_CWISE_SIGNED_SMALL_KERNELS(op, Kernel, F);   \
  PF_REGISTER_KERNEL(Cpu(op, DT_UINT8), Kernel<uint8_t, F>)
// Every dtype of kRealNumberTypes.
#define PF_CWISE_ALL_KERNELS(op, Kernel, F) \
  PF_CWISE_NUMBER_KERNELS(op, Kernel, F);   \
  PF_CWISE_HALF_KERNELS(op, Kernel, F);     \
  PF_CWISE_SMALL_INT_KERNELS(op, Kernel, F)
// float, double, half, bfloat16.
#define PF_CWISE_FLOATING_KERNELS(op, Kernel, F) \
  PF_CWISE_REAL_KERNELS(op, Kernel, F);          \
  PF_CWISE_HALF_KERNELS(op, Kernel, F)

PF_REGISTER_OP(BinaryDef("Add", kRealNumberTypes).SetGradient(AddGrad));
PF_CWISE_ALL_KERNELS("Add", BinaryOp, AddF);
PF_REGISTER_OP(BinaryDef("Sub", kRealNumberTypes).SetGradient(SubGrad));
PF_CWISE_ALL_KERNELS("Sub", BinaryOp, SubF);
PF_REGISTER_OP(BinaryDef("Mul", kRealNumberTypes).SetGradient(MulGrad));
PF_CWISE_ALL_KERNELS("Mul", BinaryOp, MulF);
PF_REGISTER_OP(BinaryDef("Div", kRealNumberTypes).SetGradient(DivGrad));
PF_CWISE_FLOATING_KERNELS("Div", BinaryOp, DivF);
PF_REGISTER_KERNEL(Cpu("Div", DT_INT32), IntDivOp<int32_t>);
PF_REGISTER_KERNEL(Cpu("Div", DT_INT64), IntDivOp<int64_t>);
PF_REGISTER_KERNEL(Cpu("Div", DT_INT16), IntDivOp<int16_t>);  // TF has no int8 Div
PF_REGISTER_KERNEL(Cpu("Div", DT_UINT8), IntDivOp<uint8_t>);
PF_REGISTER_OP(BinaryDef("Maximum", kRealNumberTypes).SetGradient(MaximumGrad));
PF_CWISE_ALL_KERNELS("Maximum", BinaryOp, MaxF);
PF_REGISTER_OP(BinaryDef("Minimum", kRealNumberTypes).SetGradient(MinimumGrad));
PF_CWISE_ALL_KERNELS("Minimum", BinaryOp, MinF);
PF_REGISTER_OP(BinaryDef("Pow", kFloatingTypes).SetGradient(PowGrad));
PF_REGISTER_KERNEL(Cpu("Pow", DT_FLOAT), BinaryOp<float, PowF, 20>);
PF_REGISTER_KERNEL(Cpu("Pow", DT_DOUBLE), BinaryOp<double, PowF, 20>);
PF_CWISE_HALF_KERNELS("Pow", BinaryOp, PowF);

PF_REGISTER_OP(CompareDef("Equal"));
PF_CWISE_ALL_KERNELS("Equal", CompareOp, EqualF);
PF_REGISTER_OP(CompareDef("Less"));
PF_CWISE_ALL_KERNELS("Less", CompareOp, LessF);
PF_REGISTER_OP(CompareDef("Greater"));
PF_CWISE_ALL_KERNELS("Greater", CompareOp, GreaterF);
PF_REGISTER_OP(CompareDef("NotEqual"));
PF_CWISE_ALL_KERNELS("NotEqual", CompareOp, NotEqualF);
PF_REGISTER_OP(CompareDef("LessEqual"));
PF_CWISE_ALL_KERNELS("LessEqual", CompareOp, LessEqualF);
PF_REGISTER_OP(CompareDef("GreaterEqual"));
PF_CWISE_ALL_KERNELS("GreaterEqual", CompareOp, GreaterEqualF);

// tf.logical_and, tf.logical_or (broadcasting) and tf.logical_not, on bool; CPU only.
struct LogicalAndF {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOrF {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct LogicalNotF {
  bool operator()(bool a) const { return !a; }
};
OpDef LogicalDef(const char* name) {
  return OpDef(name)
      .Input("x", "bool")
      .Input("y", "bool")
      .Output("z", "bool")
      .SetNotDifferentiable()
      .SetShapeFn(BroadcastBinaryShape);
}
PF_REGISTER_OP(LogicalDef("LogicalAnd"));
PF_REGISTER_KERNEL(KernelDef("LogicalAnd", kDeviceCpu), CompareOp<bool, LogicalAndF>);
PF_REGISTER_OP(LogicalDef("LogicalOr"));
PF_REGISTER_KERNEL(KernelDef("LogicalOr", kDeviceCpu), CompareOp<bool, LogicalOrF>);
PF_REGISTER_OP(OpDef("LogicalNot")
                   .Input("x", "bool")
                   .Output("y", "bool")
                   .SetNotDifferentiable()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("LogicalNot", kDeviceCpu), UnaryOp<bool, LogicalNotF>);

// Neg: TF has no unsigned Neg.
PF_REGISTER_OP(UnaryDef("Neg", kRealNumberTypes).SetGradient(NegGrad));
PF_CWISE_NUMBER_KERNELS("Neg", UnaryOp, NegF);
PF_CWISE_HALF_KERNELS("Neg", UnaryOp, NegF);
PF_CWISE_SIGNED_SMALL_KERNELS("Neg", UnaryOp, NegF);
PF_REGISTER_OP(UnaryDef("Square", kRealNumberTypes).SetGradient(SquareGrad));
PF_CWISE_ALL_KERNELS("Square", UnaryOp, SquareF);
PF_REGISTER_OP(UnaryDef("Sqrt", kFloatingTypes).SetGradient(SqrtGrad));
PF_CWISE_FLOATING_KERNELS("Sqrt", UnaryOp, SqrtF);
PF_REGISTER_OP(UnaryDef("Rsqrt", kFloatingTypes).SetGradient(RsqrtGrad));
PF_CWISE_FLOATING_KERNELS("Rsqrt", UnaryOp, RsqrtF);
PF_REGISTER_OP(UnaryDef("Exp", kFloatingTypes).SetGradient(ExpGrad));
PF_REGISTER_KERNEL(Cpu("Exp", DT_FLOAT), UnaryOp<float, ExpF, 10>);
PF_REGISTER_KERNEL(Cpu("Exp", DT_DOUBLE), UnaryOp<double, ExpF, 10>);
PF_CWISE_HALF_KERNELS("Exp", UnaryOp, ExpF);
PF_REGISTER_OP(UnaryDef("Log", kFloatingTypes).SetGradient(LogGrad));
PF_REGISTER_KERNEL(Cpu("Log", DT_FLOAT), UnaryOp<float, LogF, 10>);
PF_REGISTER_KERNEL(Cpu("Log", DT_DOUBLE), UnaryOp<double, LogF, 10>);
PF_CWISE_HALF_KERNELS("Log", UnaryOp, LogF);
PF_REGISTER_OP(UnaryDef("Erf", kFloatingTypes).SetGradient(ErfGrad));
PF_REGISTER_KERNEL(Cpu("Erf", DT_FLOAT), UnaryOp<float, ErfF, 10>);
PF_REGISTER_KERNEL(Cpu("Erf", DT_DOUBLE), UnaryOp<double, ErfF, 10>);
PF_CWISE_HALF_KERNELS("Erf", UnaryOp, ErfF);
PF_REGISTER_OP(UnaryDef("Floor", kFloatingTypes).SetNotDifferentiable());
PF_CWISE_FLOATING_KERNELS("Floor", UnaryOp, FloorF);

Output Binary(const Scope& s, const char* op, Output a, Output b) {
  return NodeBuilder(s, op).Input(a).Input(b).Finalize();
}
}  // namespace

namespace ops {

Output Add(const Scope& s, Output a, Output b) { return Binary(s, "Add", a, b); }
Output Sub(const Scope& s, Output a, Output b) { return Binary(s, "Sub", a, b); }
Output Mul(const Scope& s, Output a, Output b) { return Binary(s, "Mul", a, b); }
Output Div(const Scope& s, Output a, Output b) { return Binary(s, "Div", a, b); }
Output Maximum(const Scope& s, Output a, Output b) { return Binary(s, "Maximum", a, b); }
Output Minimum(const Scope& s, Output a, Output b) { return Binary(s, "Minimum", a, b); }
Output LogicalAnd(const Scope& s, Output a, Output b) { return Binary(s, "LogicalAnd", a, b); }
Output LogicalOr(const Scope& s, Output a, Output b) { return Binary(s, "LogicalOr", a, b); }
Output LogicalNot(const Scope& s, Output x) { return UnaryNode(s, "LogicalNot", x); }
Output Pow(const Scope& s, Output a, Output b) { return Binary(s, "Pow", a, b); }
Output Equal(const Scope& s, Output a, Output b) { return Binary(s, "Equal", a, b); }
Output Less(const Scope& s, Output a, Output b) { return Binary(s, "Less", a, b); }
Output Greater(const Scope& s, Output a, Output b) { return Binary(s, "Greater", a, b); }
Output NotEqual(const Scope& s, Output a, Output b) { return Binary(s, "NotEqual", a, b); }
Output LessEqual(const Scope& s, Output a, Output b) { return Binary(s, "LessEqual", a, b); }
Output GreaterEqual(const Scope& s, Output a, Output b) { return Binary(s, "GreaterEqual", a, b); }
Output Neg(const Scope& s, Output x) { return UnaryNode(s, "Neg", x); }
Output Square(const Scope& s, Output x) { return UnaryNode(s, "Square", x); }
Output Sqrt(const Scope& s, Output x) { return UnaryNode(s, "Sqrt", x); }
Output Rsqrt(const Scope& s, Output x) { return UnaryNode(s, "Rsqrt", x); }
Output Exp(const Scope& s, Output x) { return UnaryNode(s, "Exp", x); }
Output Log(const Scope& s, Output x) { return UnaryNode(s, "Log", x); }
Output Erf(const Scope& s, Output x) { return UnaryNode(s, "Erf", x); }
Output Floor(const Scope& s, Output x) { return UnaryNode(s, "Floor", x); }

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_CWISE_NUMBER_KERNELS
#undef PF_CWISE_REAL_KERNELS
#undef PF_CWISE_HALF_KERNELS
#undef PF_CWISE_SIGNED_SMALL_KERNELS
#undef PF_CWISE_SMALL_INT_KERNELS
#undef PF_CWISE_ALL_KERNELS
#undef PF_CWISE_FLOATING_KERNELS
