// Neural-network ops: BiasAdd, Relu, Sigmoid, Tanh, Softmax, LogSoftmax, and the gradient ops
// of the first four (BiasAddGrad, ReluGrad, SigmoidGrad, TanhGrad). The elementwise formulas
// are the functors of nn_functors.cuh, which the GPU kernels (nn_ops.cu) run too.
#include "placeflow/ops/nn/nn_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <type_traits>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/reduce_impl.h"
#include "placeflow/ops/nn/nn_functors.cuh"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

Status ValidateBiasAdd(const Shape& value, const Shape& bias) {
  if (!value.unknown_rank() && value.rank() < 2) {
    return errors::InvalidArgument("Input tensor must be at least 2D: ", value.ToString());
  }
  if (!bias.unknown_rank() && bias.rank() != 1) {
    return errors::InvalidArgument("Biases must be 1D: ", bias.ToString());
  }
  if (value.unknown_rank() || bias.unknown_rank()) return Status::OK();
  const int64_t channels = value.dim(value.rank() - 1);
  if (channels >= 0 && bias.dim(0) >= 0 && channels != bias.dim(0)) {
    return errors::InvalidArgument(
        "Must provide as many biases as the last dimension of the input tensor: ", bias.ToString(),
        " vs. ", value.ToString());
  }
  return Status::OK();
}

Status ValidateActivationGrad(std::string_view op, const Shape& in0, const Shape& in1) {
  if (!in0.IsCompatibleWith(in1)) {
    return errors::InvalidArgument(op, op == "ReluGrad" ? ": gradients and outputs" : ": y and dy",
                                   " must have the same shape, got ", in0.ToString(), " and ",
                                   in1.ToString());
  }
  return Status::OK();
}

namespace {

template <typename T>
class BiasAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    PF_RETURN_IF_ERROR(ValidateBiasAdd(x.shape(), bias.shape()));
    // The output may be written over x: each element is read before it is written.
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->ForwardInputOrAllocateOutput({0}, 0));
    const int64_t c = bias.num_elements();
    const T* px = x.data<T>();
    const T* pb = bias.data<T>();
    T* y = out->data<T>();
    const int64_t rows = c == 0 ? 0 : x.num_elements() / c;
    ParallelFor(ctx, rows, c, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = px + r * c;
        T* yr = y + r * c;
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
          const ViaFloat<T, std::plus<float>> add;
          for (int64_t i = 0; i < c; ++i) yr[i] = add(xr[i], pb[i]);
        } else {
          SimdFor(0, c, [&](int64_t i) { yr[i] = xr[i] + pb[i]; });
        }
      }
    });
    return Status::OK();
  }
};

PF_GRAD(BiasAddGrad) {
  *dx = {g[0], NodeBuilder(s, "BiasAddGrad").Input(g[0]).Finalize()};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("BiasAdd")
                   .Input("value", "T")
                   .Input("bias", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kNumberAndHalfTypes)
                   .SetGradient(BiasAddGrad)
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(ValidateBiasAdd(c.input(0), c.input(1)));
                     c.set_output(0, c.input(0));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("BiasAdd", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   BiasAddOp<float>);
PF_REGISTER_KERNEL(KernelDef("BiasAdd", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   BiasAddOp<double>);
PF_REGISTER_KERNEL(KernelDef("BiasAdd", kDeviceCpu).TypeConstraint("T", {DT_INT32}),
                   BiasAddOp<int32_t>);
PF_REGISTER_KERNEL(KernelDef("BiasAdd", kDeviceCpu).TypeConstraint("T", {DT_INT64}),
                   BiasAddOp<int64_t>);
// 16-bit: each element through float, no float32 copy of the tensors (ops/half_via_float.h).
PF_REGISTER_KERNEL(KernelDef("BiasAdd", kDeviceCpu).TypeConstraint("T", {DT_HALF}),
                   BiasAddOp<Half>);
PF_REGISTER_KERNEL(KernelDef("BiasAdd", kDeviceCpu).TypeConstraint("T", {DT_BFLOAT16}),
                   BiasAddOp<BFloat16>);

// BiasAddGrad(g): g summed over every dim but the last.
template <typename T>
class BiasAddGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    std::vector<bool> reduced(g.rank(), true);
    reduced.back() = false;
    Reduce<T, SumR>(ctx, g, reduced, out);
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("BiasAddGrad")
                   .SetNoGradient()
                   .Input("out_backprop", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatingTypes)
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1));
                     const Shape& s = c.input(0);
                     c.set_output(0, s.unknown_rank() ? Shape{-1} : Shape{s.dim(s.rank() - 1)});
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("BiasAddGrad", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   BiasAddGradOp<float>);
PF_REGISTER_KERNEL(KernelDef("BiasAddGrad", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   BiasAddGradOp<double>);

template <typename T, typename F, int kCost>
class ActivationOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  // float Tanh and Sigmoid run the Highway kernels (ops/simd/vec_math-inl.h: a rational tanh
  // within 7 ulp, 0.3 ns an element with AVX-512; a sigmoid within 4 ulp that keeps the relative
  // accuracy of its small values); other dtypes the functor.
  Status Compute(OpKernelContext* ctx) override { return UnaryElementwise<T, T>(ctx, F(), kCost); }
};

// Activation gradients from the forward output, in TensorFlow's input order: ReluGrad(g, y),
// SigmoidGrad(y, g), TanhGrad(y, g).
template <const char* kGradOp>
Status ActivationGrad(const Scope& s, const Node& n, const Grads& g, Grads* dx) {
  const bool y_first = std::string_view(kGradOp) != "ReluGrad";
  *dx = {NodeBuilder(s, kGradOp)
             .Input(y_first ? Out(n) : g[0])
             .Input(y_first ? g[0] : Out(n))
             .Finalize()};
  return Status::OK();
}
constexpr char kReluGrad[] = "ReluGrad";
constexpr char kSigmoidGrad[] = "SigmoidGrad";
constexpr char kTanhGrad[] = "TanhGrad";

#define PF_ACTIVATION(op, Name, cost)                                            \
  PF_REGISTER_OP(OpDef(op)                                                       \
                     .Input("features", "T")                                     \
                     .Output("activations", "T")                                 \
                     .TypeAttr("T", kFloatingTypes)                              \
                     .SetGradient(ActivationGrad<k##Name##Grad>)                 \
                     .SetShapeFn(UnchangedShape));                               \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),  \
                     ActivationOp<float, Name##F, cost>);                        \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), \
                     ActivationOp<double, Name##F, cost>)
PF_ACTIVATION("Relu", Relu, 1);
PF_REGISTER_KERNEL(KernelDef("Relu", kDeviceCpu).TypeConstraint("T", {DT_HALF}),
                   ActivationOp<Half, ViaFloat<Half, ReluF>, 1>);
PF_REGISTER_KERNEL(KernelDef("Relu", kDeviceCpu).TypeConstraint("T", {DT_BFLOAT16}),
                   ActivationOp<BFloat16, ViaFloat<BFloat16, ReluF>, 1>);
PF_ACTIVATION("Sigmoid", Sigmoid, 15);
PF_ACTIVATION("Tanh", Tanh, 15);

template <typename T, typename F>
class ActivationGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(
        ValidateActivationGrad(node().op(), ctx->input(0).shape(), ctx->input(1).shape()));
    return BinaryElementwise<T, T>(ctx, F());
  }
};

#define PF_ACTIVATION_GRAD(op, F, in0, in1)                                                    \
  PF_REGISTER_OP(OpDef(op)                                                                     \
                     .SetNoGradient()                                                          \
                     .Input(in0, "T")                                                          \
                     .Input(in1, "T")                                                          \
                     .Output("backprops", "T")                                                 \
                     .TypeAttr("T", kFloatingTypes)                                            \
                     .SetShapeFn([](ShapeContext& c) {                                         \
                       PF_RETURN_IF_ERROR(ValidateActivationGrad(op, c.input(0), c.input(1))); \
                       c.set_output(0, c.input(0).MergeWith(c.input(1)));                      \
                       return Status::OK();                                                    \
                     }));                                                                      \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),                \
                     ActivationGradOp<float, F>);                                              \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),               \
                     ActivationGradOp<double, F>)
PF_ACTIVATION_GRAD("ReluGrad", ReluGradF, "gradients", "outputs");
PF_REGISTER_KERNEL(KernelDef("ReluGrad", kDeviceCpu).TypeConstraint("T", {DT_HALF}),
                   ActivationGradOp<Half, ViaFloat<Half, ReluGradF>>);
PF_REGISTER_KERNEL(KernelDef("ReluGrad", kDeviceCpu).TypeConstraint("T", {DT_BFLOAT16}),
                   ActivationGradOp<BFloat16, ViaFloat<BFloat16, ReluGradF>>);
PF_ACTIVATION_GRAD("SigmoidGrad", SigmoidGradF, "y", "dy");
PF_ACTIVATION_GRAD("TanhGrad", TanhGradF, "y", "dy");

// Softmax over the last axis, max-subtracted for stability.
template <typename T, bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0) return Status::OK();
    const int64_t rows = x.num_elements() / c;
    const T* px = x.data<T>();
    T* y = out->data<T>();
    ParallelFor(ctx, rows, c * 20, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = px + r * c;
        T* yr = y + r * c;
        T m = *std::max_element(xr, xr + c);
        T sum = 0;
        for (int64_t i = 0; i < c; ++i) {
          yr[i] = std::exp(xr[i] - m);
          sum += yr[i];
        }
        if constexpr (kLog) {
          T log_sum = std::log(sum);
          for (int64_t i = 0; i < c; ++i) yr[i] = xr[i] - m - log_sum;
        } else {
          T inv = T(1) / sum;
          for (int64_t i = 0; i < c; ++i) yr[i] *= inv;
        }
      }
    });
    return Status::OK();
  }
};

// softmax: dx = (g - sum(g * y, -1)) * y;  log_softmax: dx = g - exp(y) * sum(g, -1).
PF_GRAD(SoftmaxGrad) {
  Output y = Out(n);
  Output dot = ops::Sum(s, ops::Mul(s, g[0], y), {-1}, true);
  *dx = {ops::Mul(s, ops::Sub(s, g[0], dot), y)};
  return Status::OK();
}
PF_GRAD(LogSoftmaxGrad) {
  *dx = {ops::Sub(s, g[0], ops::Mul(s, ops::Exp(s, Out(n)), ops::Sum(s, g[0], {-1}, true)))};
  return Status::OK();
}

#define PF_SOFTMAX(op, log)                                                       \
  PF_REGISTER_OP(OpDef(#op)                                                       \
                     .Input("logits", "T")                                        \
                     .Output("softmax", "T")                                      \
                     .TypeAttr("T", kFloatingTypes)                               \
                     .SetGradient(op##Grad)                                       \
                     .SetShapeFn([](ShapeContext& c) {                            \
                       PF_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1));               \
                       return UnchangedShape(c);                                  \
                     }));                                                         \
  PF_REGISTER_KERNEL(KernelDef(#op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),  \
                     SoftmaxOp<float, log>);                                      \
  PF_REGISTER_KERNEL(KernelDef(#op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}), \
                     SoftmaxOp<double, log>)
PF_SOFTMAX(Softmax, false);
PF_SOFTMAX(LogSoftmax, true);

}  // namespace

namespace ops {

Output BiasAdd(const Scope& s, Output value, Output bias) {
  return NodeBuilder(s, "BiasAdd").Input(value).Input(bias).Finalize();
}
Output Relu(const Scope& s, Output x) { return UnaryNode(s, "Relu", x); }
Output Sigmoid(const Scope& s, Output x) { return UnaryNode(s, "Sigmoid", x); }
Output Tanh(const Scope& s, Output x) { return UnaryNode(s, "Tanh", x); }
Output Softmax(const Scope& s, Output logits) { return UnaryNode(s, "Softmax", logits); }
Output LogSoftmax(const Scope& s, Output logits) { return UnaryNode(s, "LogSoftmax", logits); }

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_ACTIVATION
#undef PF_ACTIVATION_GRAD
#undef PF_SOFTMAX
