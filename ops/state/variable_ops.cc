// TensorFlow 1.x reference variables: Variable holds a tensor in its device's ResourceMgr
// (keyed by node name, so it persists across Session::Run calls and signatures); Assign,
// AssignAdd and AssignSub take it by reference and update it in place.
#include "placeflow/ops/state/variable_ops.h"

#include <cstring>

#include "placeflow/devices/device.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

class VariableOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    VarState* var = ctx->device()->resource_mgr()->LookupOrCreateVar(name());
    std::lock_guard<std::mutex> lock(var->mu);
    // Uninitialised: the output stays empty; readers fail, Assign (a ref input) does not.
    if (!var->initialized()) return Status::OK();
    *ctx->mutable_output(0) = var->value;
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(OpDef("Variable")
                   .SetIsVariable()
                   .Output("ref", "dtype")
                   .RequiredAttr("shape")
                   .TypeAttr("dtype", kComputableTypes)
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     const Shape& s = c.attr<Shape>("shape");
                     if (!s.IsFullyDefined())
                       return errors::InvalidArgument("Variable shape must be fully defined, got ",
                                                      s.ToString());
                     c.set_output(0, s);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Variable", kDeviceCpu), VariableOp);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("Variable", kDeviceGpu), VariableOp);

Status AssignShape(ShapeContext& c) {
  const bool validate = c.attr<bool>("validate_shape");
  if (validate && !c.input(0).IsCompatibleWith(c.input(1))) {
    return errors::InvalidArgument("Shapes must be equal: ref has shape ", c.input(0).ToString(),
                                   " but value has shape ", c.input(1).ToString());
  }
  c.set_output(0, validate ? c.input(0).MergeWith(c.input(1)) : c.input(1));
  return Status::OK();
}

class AssignOp : public OpKernel {
 public:
  explicit AssignOp(const Node& n) : OpKernel(n), validate_(n.attr<bool>("validate_shape")) {}
  Status Compute(OpKernelContext* ctx) override {
    VarState* var = ctx->ref_input(0);
    if (var == nullptr) return errors::Internal("Assign: input 0 is not a variable reference");
    const Tensor& value = ctx->input(1);
    std::lock_guard<std::mutex> lock(var->mu);
    if (var->initialized() && var->value.shape() == value.shape()) {
      PF_RETURN_IF_ERROR(ctx->device()->CopyWithinDevice(var->value.raw_data(), value.raw_data(),
                                                         value.TotalBytes()));
    } else {
      if (validate_ && value.shape() != ctx->input(0).shape() && ctx->input(0).IsInitialized()) {
        return errors::InvalidArgument(
            "Assign requires shapes of both tensors to match. lhs shape= ",
            ctx->input(0).shape().ToString(), " rhs shape= ", value.shape().ToString());
      }
      // A private copy: the variable must never alias (and later mutate) its initial value.
      PF_ASSIGN_OR_RETURN(Tensor copy, Tensor::Allocate(ctx->device()->GetAllocator(),
                                                        value.dtype(), value.shape()));
      PF_RETURN_IF_ERROR(
          ctx->device()->CopyWithinDevice(copy.raw_data(), value.raw_data(), value.TotalBytes()));
      var->value = std::move(copy);
    }
    *ctx->mutable_output(0) = var->value;
    return Status::OK();
  }

 private:
  bool validate_;
};

PF_REGISTER_OP(OpDef("Assign")
                   .RefInput("ref", "T")
                   .Input("value", "T")
                   .Output("output_ref", "T")
                   .Attr("validate_shape", true)
                   .TypeAttr("T", kComputableTypes)
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn(AssignShape));
PF_REGISTER_KERNEL(KernelDef("Assign", kDeviceCpu), AssignOp);
// Copies on the GPU's compute stream.
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("Assign", kDeviceGpu), AssignOp);

template <typename T, int kSign>
class AssignUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    VarState* var = ctx->ref_input(0);
    if (var == nullptr)
      return errors::Internal(node().op(), ": input 0 is not a variable reference");
    const Tensor& value = ctx->input(1);
    std::lock_guard<std::mutex> lock(var->mu);
    if (!var->initialized()) {
      return errors::UninitializedValue(ReferencedVariable(node().input(0))->name());
    }
    PF_RETURN_IF_ERROR(ValidateAssignUpdate(var->value.shape(), value.shape()));
    T* dst = var->value.data<T>();
    const T* src = value.data<T>();
    ParallelFor(ctx, value.num_elements(), 1, [&](int64_t b, int64_t e) {
      SimdFor(b, e, [&](int64_t i) { dst[i] += kSign * src[i]; });
    });
    *ctx->mutable_output(0) = var->value;
    return Status::OK();
  }
};

#define PF_ASSIGN_UPDATE(op, sign)                                                          \
  PF_REGISTER_OP(OpDef(op)                                                                  \
                     .RefInput("ref", "T")                                                  \
                     .Input("value", "T")                                                   \
                     .Output("output_ref", "T")                                             \
                     .TypeAttr("T", kNumberTypes)                                           \
                     .SetStateful()                                                         \
                     .SetNotDifferentiable()                                                \
                     .SetShapeFn([](ShapeContext& c) {                                      \
                       if (!c.input(0).IsCompatibleWith(c.input(1))) {                      \
                         return errors::InvalidArgument(                                    \
                             "Shapes must be equal: ref has shape ", c.input(0).ToString(), \
                             " but value has shape ", c.input(1).ToString());               \
                       }                                                                    \
                       return UnchangedShape(c);                                            \
                     }));                                                                   \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),             \
                     AssignUpdateOp<float, sign>);                                          \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),            \
                     AssignUpdateOp<double, sign>);                                         \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT32}),             \
                     AssignUpdateOp<int32_t, sign>);                                        \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_INT64}),             \
                     AssignUpdateOp<int64_t, sign>)
PF_ASSIGN_UPDATE("AssignAdd", 1);
PF_ASSIGN_UPDATE("AssignSub", -1);

}  // namespace

namespace ops {

Output Variable(const Scope& s, const pf::Shape& shape, DType dtype) {
  return NodeBuilder(s, "Variable").Attr("shape", shape).Attr("dtype", dtype).Finalize();
}
Output Assign(const Scope& s, Output ref, Output value, bool validate_shape) {
  return NodeBuilder(s, "Assign")
      .Input(ref)
      .Input(value)
      .Attr("validate_shape", validate_shape)
      .Finalize();
}
Output AssignAdd(const Scope& s, Output ref, Output value) {
  return NodeBuilder(s, "AssignAdd").Input(ref).Input(value).Finalize();
}
Output AssignSub(const Scope& s, Output ref, Output value) {
  return NodeBuilder(s, "AssignSub").Input(ref).Input(value).Finalize();
}

}  // namespace ops
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_ASSIGN_UPDATE
