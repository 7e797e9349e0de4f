// Elementwise math with NumPy broadcasting: Add Sub Mul Div Maximum Minimum Pow, the unary
// Neg Square Sqrt Rsqrt Exp Log, and the comparisons Equal Less Greater.
#include <algorithm>
#include <cmath>

#include "ops/op_util.h"
#include "ops/ops.h"

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
    return BinaryElementwise<T, T>(ctx, [](T a, T b) { return a / b; });
  }
};

struct AddF { template <typename T> T operator()(T a, T b) const { return a + b; } };
struct SubF { template <typename T> T operator()(T a, T b) const { return a - b; } };
struct MulF { template <typename T> T operator()(T a, T b) const { return a * b; } };
struct DivF { template <typename T> T operator()(T a, T b) const { return a / b; } };
struct MaxF { template <typename T> T operator()(T a, T b) const { return a > b ? a : b; } };
struct MinF { template <typename T> T operator()(T a, T b) const { return a < b ? a : b; } };
struct PowF { template <typename T> T operator()(T a, T b) const { return static_cast<T>(std::pow(a, b)); } };
struct EqF { template <typename T> bool operator()(T a, T b) const { return a == b; } };
struct LessF { template <typename T> bool operator()(T a, T b) const { return a < b; } };
struct GreaterF { template <typename T> bool operator()(T a, T b) const { return a > b; } };
struct NegF { template <typename T> T operator()(T a) const { return -a; } };
struct SquareF { template <typename T> T operator()(T a) const { return a * a; } };
struct SqrtF { template <typename T> T operator()(T a) const { return std::sqrt(a); } };
struct RsqrtF { template <typename T> T operator()(T a) const { return T(1) / std::sqrt(a); } };
struct ExpF { template <typename T> T operator()(T a) const { return std::exp(a); } };
struct LogF { template <typename T> T operator()(T a) const { return std::log(a); } };

OpDef BinaryDef(const char* name, const std::vector<DType>& types) {
  return OpDef(name).Input("x", "T").Input("y", "T").Output("z", "T").TypeAttr("T", types).SetShapeFn(BroadcastBinaryShape);
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
  return OpDef(name).Input("x", "T").Output("y", "T").TypeAttr("T", types).SetShapeFn(UnchangedShape);
}

KernelDef Cpu(const char* op, DType t) { return KernelDef(op, kDeviceCpu).TypeConstraint("T", {t}); }

#define PF_CWISE_NUMBER_KERNELS(op, Kernel, F)                       \
  PF_REGISTER_KERNEL(Cpu(op, DT_FLOAT), Kernel<float, F>);           \
  PF_REGISTER_KERNEL(Cpu(op, DT_DOUBLE), Kernel<double, F>);         \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT32), Kernel<int32_t, F>);         \
  PF_REGISTER_KERNEL(Cpu(op, DT_INT64), Kernel<int64_t, F>)
#define PF_CWISE_REAL_KERNELS(op, Kernel, F)                         \
  PF_REGISTER_KERNEL(Cpu(op, DT_FLOAT), Kernel<float, F>);           \
  PF_REGISTER_KERNEL(Cpu(op, DT_DOUBLE), Kernel<double, F>)

PF_REGISTER_OP(BinaryDef("Add", kNumberTypes));
PF_CWISE_NUMBER_KERNELS("Add", BinaryOp, AddF);
PF_REGISTER_OP(BinaryDef("Sub", kNumberTypes));
PF_CWISE_NUMBER_KERNELS("Sub", BinaryOp, SubF);
PF_REGISTER_OP(BinaryDef("Mul", kNumberTypes));
PF_CWISE_NUMBER_KERNELS("Mul", BinaryOp, MulF);
PF_REGISTER_OP(BinaryDef("Div", kNumberTypes));
PF_CWISE_REAL_KERNELS("Div", BinaryOp, DivF);
PF_REGISTER_KERNEL(Cpu("Div", DT_INT32), IntDivOp<int32_t>);
PF_REGISTER_KERNEL(Cpu("Div", DT_INT64), IntDivOp<int64_t>);
PF_REGISTER_OP(BinaryDef("Maximum", kNumberTypes));
PF_CWISE_NUMBER_KERNELS("Maximum", BinaryOp, MaxF);
PF_REGISTER_OP(BinaryDef("Minimum", kNumberTypes));
PF_CWISE_NUMBER_KERNELS("Minimum", BinaryOp, MinF);
PF_REGISTER_OP(BinaryDef("Pow", kRealTypes));
PF_REGISTER_KERNEL(Cpu("Pow", DT_FLOAT), BinaryOp<float, PowF, 20>);
PF_REGISTER_KERNEL(Cpu("Pow", DT_DOUBLE), BinaryOp<double, PowF, 20>);

PF_REGISTER_OP(CompareDef("Equal"));
PF_CWISE_NUMBER_KERNELS("Equal", CompareOp, EqF);
PF_REGISTER_OP(CompareDef("Less"));
PF_CWISE_NUMBER_KERNELS("Less", CompareOp, LessF);
PF_REGISTER_OP(CompareDef("Greater"));
PF_CWISE_NUMBER_KERNELS("Greater", CompareOp, GreaterF);

PF_REGISTER_OP(UnaryDef("Neg", kNumberTypes));
PF_CWISE_NUMBER_KERNELS("Neg", UnaryOp, NegF);
PF_REGISTER_OP(UnaryDef("Square", kNumberTypes));
PF_CWISE_NUMBER_KERNELS("Square", UnaryOp, SquareF);
PF_REGISTER_OP(UnaryDef("Sqrt", kRealTypes));
PF_CWISE_REAL_KERNELS("Sqrt", UnaryOp, SqrtF);
PF_REGISTER_OP(UnaryDef("Rsqrt", kRealTypes));
PF_CWISE_REAL_KERNELS("Rsqrt", UnaryOp, RsqrtF);
PF_REGISTER_OP(UnaryDef("Exp", kRealTypes));
PF_REGISTER_KERNEL(Cpu("Exp", DT_FLOAT), UnaryOp<float, ExpF, 10>);
PF_REGISTER_KERNEL(Cpu("Exp", DT_DOUBLE), UnaryOp<double, ExpF, 10>);
PF_REGISTER_OP(UnaryDef("Log", kRealTypes));
PF_REGISTER_KERNEL(Cpu("Log", DT_FLOAT), UnaryOp<float, LogF, 10>);
PF_REGISTER_KERNEL(Cpu("Log", DT_DOUBLE), UnaryOp<double, LogF, 10>);

Output Binary(const Scope& s, const char* op, Output a, Output b) {
  return NodeBuilder(s, op).Input(a).Input(b).Finalize();
}
Output Unary(const Scope& s, const char* op, Output x) { return NodeBuilder(s, op).Input(x).Finalize(); }

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

}  // namespace ops
}  // namespace pf
