// Const, Placeholder, Identity, StopGradient, NoOp.
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Const, Placeholder, Identity and StopGradient take every dtype; on GPUs all but DT_STRING,
// which lives in host memory only (the placer keeps string nodes on the CPU).
const std::vector<DType> kAllTypes = {DT_FLOAT,    DT_DOUBLE, DT_INT32,  DT_INT64, DT_BOOL, DT_HALF,
                                      DT_BFLOAT16, DT_UINT8,  DT_STRING, DT_INT8,  DT_INT16};

class ConstOp : public OpKernel {
 public:
  explicit ConstOp(const Node& n) : OpKernel(n), value_(n.attr<Tensor>("value")) {}
  Status Compute(OpKernelContext* ctx) override { return ctx->SetOutput(0, value_); }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
};

PF_REGISTER_OP(OpDef("Const")
                   .SetIsConstant()
                   .Output("output", "dtype")
                   .RequiredAttr("value")
                   .TypeAttr("dtype", kAllTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.attr<Tensor>("value").shape());
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Const", kDeviceCpu), ConstOp);

class PlaceholderOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override {
    return errors::InvalidArgument("You must feed a value for placeholder tensor '", name(),
                                   "' with dtype ", DTypeName(node().attr<DType>("dtype")),
                                   " and shape ", node().attr<Shape>("shape").ToString());
  }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(OpDef("Placeholder")
                   .Output("output", "dtype")
                   .TypeAttr("dtype", kAllTypes)
                   .Attr("shape", Shape::Unknown())
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.attr<Shape>("shape"));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Placeholder", kDeviceCpu), PlaceholderOp);

class IdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override { return ctx->ForwardInput(0, 0); }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(OpDef("Identity")
                   .SetForwardsInput()
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .SetGradient([](const Scope&, const Node&, const Grads& g, Grads* dx) {
                     *dx = {g[0]};
                     return Status::OK();
                   })
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("Identity", kDeviceCpu), IdentityOp);
PF_REGISTER_OP(OpDef("StopGradient")
                   .SetForwardsInput()
                   .Input("input", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kAllTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("StopGradient", kDeviceCpu), IdentityOp);

class NoOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return Status::OK(); }
  bool IsExpensive() const override { return false; }
};
PF_REGISTER_OP(OpDef("NoOp").SetNotDifferentiable().SetShapeFn(NoOutputsShape));
PF_REGISTER_KERNEL(KernelDef("NoOp", kDeviceCpu), NoOpKernel);
// TensorFlow's no-op of its loop gradients (a control edge's meeting point); imported graphs use
// it.
PF_REGISTER_OP(OpDef("ControlTrigger").SetNotDifferentiable().SetShapeFn(NoOutputsShape));
PF_REGISTER_KERNEL(KernelDef("ControlTrigger", kDeviceCpu), NoOpKernel);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Identity", kDeviceGpu).TypeConstraint("T", kNonStringTypes), IdentityOp);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("StopGradient", kDeviceGpu).TypeConstraint("T", kNonStringTypes), IdentityOp);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("NoOp", kDeviceGpu), NoOpKernel);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("ControlTrigger", kDeviceGpu), NoOpKernel);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Placeholder", kDeviceGpu).TypeConstraint("dtype", kNonStringTypes), PlaceholderOp);

}  // namespace

namespace ops {

Output Const(const Scope& s, const Tensor& value) {
  return NodeBuilder(s, "Const").Attr("value", value).Attr("dtype", value.dtype()).Finalize();
}
Output Const(const Scope& s, float value) { return Const(s, Tensor::Scalar<float>(value)); }
Output Const(const Scope& s, const std::vector<float>& values, const pf::Shape& shape) {
  return Const(s, Tensor::FromVector<float>(values, shape));
}
Output ConstInt(const Scope& s, const std::vector<int32_t>& values) {
  return Const(s, Tensor::FromVector<int32_t>(values));
}
Output ConstInt(const Scope& s, int32_t value) { return Const(s, Tensor::Scalar<int32_t>(value)); }

Output Placeholder(const Scope& s, DType dtype, const pf::Shape& shape) {
  return NodeBuilder(s, "Placeholder").Attr("dtype", dtype).Attr("shape", shape).Finalize();
}
Output Identity(const Scope& s, Output x) { return NodeBuilder(s, "Identity").Input(x).Finalize(); }
Output StopGradient(const Scope& s, Output x) {
  return NodeBuilder(s, "StopGradient").Input(x).Finalize();
}
Operation NoOp(const Scope& s) { return NodeBuilder(s, "NoOp").Finalize(); }

}  // namespace ops
}  // namespace pf
