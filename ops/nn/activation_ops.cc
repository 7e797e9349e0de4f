// Relu6, LeakyRelu, Softplus and their gradient ops Relu6Grad, LeakyReluGrad, SoftplusGrad. As in
// TensorFlow, the gradient ops take the forward *features* (the input), not the output: the
// output of Relu6 or LeakyRelu does not tell a feature at 0 or 6 from one past it. The formulas
// are the functors of nn_functors.cuh, which the GPU kernels (activation_ops.cu) run too.
#include "placeflow/ops/nn/activation_ops.h"

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

Status ValidateFeaturesGrad(std::string_view op, const Shape& gradients, const Shape& features) {
  if (!gradients.IsCompatibleWith(features)) {
    return errors::InvalidArgument(op, ": gradients and features must have the same shape, got ",
                                   gradients.ToString(), " and ", features.ToString());
  }
  return Status::OK();
}

namespace {

// The functor of a node: LeakyRelu's carries the alpha attr.
template <typename F>
F MakeFunctor(const Node& n) {
  if constexpr (std::is_same_v<F, LeakyReluF> || std::is_same_v<F, LeakyReluGradF>) {
    return F{n.attr<float>("alpha")};
  } else {
    return F();
  }
}

template <typename T, typename F, int kCost>
class FeaturesActivationOp : public OpKernel {
 public:
  explicit FeaturesActivationOp(const Node& n) : OpKernel(n), f_(MakeFunctor<F>(n)) {}
  Status Compute(OpKernelContext* ctx) override { return UnaryElementwise<T, T>(ctx, f_, kCost); }

 private:
  F f_;
};

template <typename T, typename F, int kCost>
class FeaturesGradOp : public OpKernel {
 public:
  explicit FeaturesGradOp(const Node& n) : OpKernel(n), f_(MakeFunctor<F>(n)) {}
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(
        ValidateFeaturesGrad(node().op(), ctx->input(0).shape(), ctx->input(1).shape()));
    return BinaryElementwise<T, T>(ctx, f_, kCost);
  }

 private:
  F f_;
};

// The gradient op of an activation, from the incoming gradient and the forward features
// (carrying LeakyRelu's alpha).
Output FeaturesGrad(const Scope& s, const Node& n, const char* op, Output g, Output x) {
  NodeBuilder b(s, op);
  b.Input(g).Input(x);
  if (n.attrs().count("alpha")) b.Attr("alpha", n.attr<float>("alpha"));
  return b.Finalize();
}
PF_GRAD(Relu6GradFn) {
  *dx = {FeaturesGrad(s, n, "Relu6Grad", g[0], n.input(0))};
  return Status::OK();
}
PF_GRAD(LeakyReluGradFn) {
  *dx = {FeaturesGrad(s, n, "LeakyReluGrad", g[0], n.input(0))};
  return Status::OK();
}
PF_GRAD(SoftplusGradFn) {
  *dx = {FeaturesGrad(s, n, "SoftplusGrad", g[0], n.input(0))};
  return Status::OK();
}

// Second order, as TensorFlow's: Relu6Grad and LeakyReluGrad are linear in the gradients and
// piecewise constant in the features (zero derivative almost everywhere).
PF_GRAD(Relu6GradGradFn) {
  *dx = {FeaturesGrad(s, n, "Relu6Grad", g[0], n.input(1)), ops::ZerosLike(s, n.input(1))};
  return Status::OK();
}
PF_GRAD(LeakyReluGradGradFn) {
  *dx = {FeaturesGrad(s, n, "LeakyReluGrad", g[0], n.input(1)), ops::ZerosLike(s, n.input(1))};
  return Status::OK();
}
// SoftplusGrad(dy, x) = dy sigmoid(x): d/d dy = sigmoid(x), d/dx = dy sigmoid(x)(1 - sigmoid(x))
// = dy / (e^-x + 2 + e^x).
PF_GRAD(SoftplusGradGradFn) {
  Output dy = n.input(0), x = n.input(1);
  Output denom = ops::Add(s, ops::Add(s, ops::Exp(s, ops::Neg(s, x)), ScalarOf(s, 2, x.dtype())),
                          ops::Exp(s, x));
  *dx = {FeaturesGrad(s, n, "SoftplusGrad", g[0], x), ops::Div(s, ops::Mul(s, g[0], dy), denom)};
  return Status::OK();
}

#define PF_FEATURES_ACTIVATION(op, Name, cost, ...)                                           \
  PF_REGISTER_OP(OpDef(op)                                                                    \
                     .Input("features", "T")                                                  \
                     .Output("activations", "T")                                              \
                     .TypeAttr("T", kFloatingTypes) __VA_ARGS__.SetGradient(Name##GradFn)     \
                     .SetShapeFn(UnchangedShape));                                            \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),               \
                     FeaturesActivationOp<float, Name##F, cost>);                             \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),              \
                     FeaturesActivationOp<double, Name##F, cost>);                            \
  PF_REGISTER_OP(OpDef(op "Grad")                                                             \
                     .Input("gradients", "T")                                                 \
                     .Input("features", "T")                                                  \
                     .Output("backprops", "T")                                                \
                     .TypeAttr("T", kFloatingTypes) __VA_ARGS__.SetGradient(Name##GradGradFn) \
                     .SetShapeFn([](ShapeContext& c) {                                        \
                       PF_RETURN_IF_ERROR(                                                    \
                           ValidateFeaturesGrad(op "Grad", c.input(0), c.input(1)));          \
                       c.set_output(0, c.input(0).MergeWith(c.input(1)));                     \
                       return Status::OK();                                                   \
                     }));                                                                     \
  PF_REGISTER_KERNEL(KernelDef(op "Grad", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),        \
                     FeaturesGradOp<float, Name##GradF, cost>);                               \
  PF_REGISTER_KERNEL(KernelDef(op "Grad", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),       \
                     FeaturesGradOp<double, Name##GradF, cost>)
PF_FEATURES_ACTIVATION("Relu6", Relu6, 1);
PF_FEATURES_ACTIVATION("LeakyRelu", LeakyRelu, 1, .Attr("alpha", 0.2f));
PF_FEATURES_ACTIVATION("Softplus", Softplus, 20);

}  // namespace

namespace ops {

Output Relu6(const Scope& s, Output x) { return NodeBuilder(s, "Relu6").Input(x).Finalize(); }
Output LeakyRelu(const Scope& s, Output x, float alpha) {
  return NodeBuilder(s, "LeakyRelu").Input(x).Attr("alpha", alpha).Finalize();
}
Output Softplus(const Scope& s, Output x) { return NodeBuilder(s, "Softplus").Input(x).Finalize(); }

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_FEATURES_ACTIVATION
