// Stacks of tensors for one step (TensorFlow's StackV2, StackPushV2, StackPopV2, with TF's
// inputs and attrs, so that a TF-written loop gradient imports): a while loop's gradient pushes
// the forward values its backward pass needs in every forward iteration and pops them in reverse
// (train/while_gradients.cc). A stack lives in the step's container (graph/step_container.h)
// under an int64 handle (TF's is a resource), so it is freed with the step.
#include <deque>

#include "placeflow/ops/control/control_util.h"
#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

struct Stack {
  std::mutex mu;
  std::deque<Tensor> values;
  int64_t max_size = -1;  // < 0: no limit
};

StatusOr<std::shared_ptr<Stack>> FindStack(OpKernelContext* ctx, const std::string& node) {
  const Tensor& h = ctx->input(0);
  if (ctx->step_container() == nullptr || h.dtype() != DT_INT64 || h.num_elements() != 1)
    return errors::InvalidArgument("'", node, "' needs a stack handle from StackV2");
  auto stack = std::static_pointer_cast<Stack>(ctx->step_container()->Find(h.scalar<int64_t>()));
  if (stack == nullptr) {
    return errors::InvalidArgument("'", node, "': stack ", h.scalar<int64_t>(),
                                   " does not exist in this step");
  }
  return stack;
}

class StackOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    if (ctx->step_container() == nullptr) return errors::Internal("StackV2 outside a step");
    auto stack = std::make_shared<Stack>();
    stack->max_size = ctx->input(0).scalar<int32_t>();
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->data<int64_t>()[0] = ctx->step_container()->Add(std::move(stack));
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

// Pushes its input and forwards it.
class StackPushOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, FindStack(ctx, name()));
    {
      std::lock_guard<std::mutex> lock(stack->mu);
      if (stack->max_size >= 0 && static_cast<int64_t>(stack->values.size()) >= stack->max_size) {
        return errors::InvalidArgument("Stack push '", name(), "': the stack is full (max_size ",
                                       stack->max_size, ")");
      }
      stack->values.push_back(ctx->input(1));
    }
    *ctx->mutable_output(0) = ctx->input(1);
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

class StackPopOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, FindStack(ctx, name()));
    std::lock_guard<std::mutex> lock(stack->mu);
    if (stack->values.empty()) {
      return errors::OutOfRange("Stack pop '", name(),
                                "' on an empty stack: more pops than pushes in this step");
    }
    *ctx->mutable_output(0) = std::move(stack->values.back());
    stack->values.pop_back();
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(OpDef("StackV2")
                   .Input("max_size", "int32")  // < 0: no limit
                   .Output("handle", "int64")
                   .TypeAttr("elem_type", {})
                   .Attr("stack_name", std::string())
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_OP(OpDef("StackPushV2")
                   .Input("handle", "int64")
                   .Input("elem", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {})
                   .Attr("swap_memory", false)  // TF's; values stay where they are
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) { return ShapeOfInput(c, 1); }));
PF_REGISTER_OP(OpDef("StackPopV2")
                   .Input("handle", "int64")
                   .Output("elem", "elem_type")
                   .TypeAttr("elem_type", {})
                   .Attr("elem_shape", Shape::Unknown())  // the pushed values' static shape
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.attr<Shape>("elem_shape"));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("StackV2", kDeviceCpu), StackOp);
PF_REGISTER_KERNEL(KernelDef("StackPushV2", kDeviceCpu), StackPushOp);
PF_REGISTER_KERNEL(KernelDef("StackPopV2", kDeviceCpu), StackPopOp);
// On a GPU the handle stays in host memory; the values stay where they are.
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("StackV2", kDeviceGpu).HostMemory("max_size").HostMemory("handle"), StackOp);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("StackPushV2", kDeviceGpu)
                                    .TypeConstraint("T", control::kGpuTypes)
                                    .HostMemory("handle"),
                                StackPushOp);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("StackPopV2", kDeviceGpu)
                                    .TypeConstraint("elem_type", control::kGpuTypes)
                                    .HostMemory("handle"),
                                StackPopOp);

}  // namespace

namespace ops {

Output StackV2(const Scope& s, DType elem_type) {
  return NodeBuilder(s, "StackV2").Input(ConstInt(s, -1)).Attr("elem_type", elem_type).Finalize();
}
Output StackPush(const Scope& s, Output handle, Output elem) {
  return NodeBuilder(s, "StackPushV2").Input(handle).Input(elem).Finalize();
}
Output StackPop(const Scope& s, Output handle, DType elem_type, const pf::Shape& elem_shape) {
  return NodeBuilder(s, "StackPopV2")
      .Input(handle)
      .Attr("elem_type", elem_type)
      .Attr("elem_shape", elem_shape)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
