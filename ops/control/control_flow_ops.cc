// The control-flow primitives (TensorFlow's Switch, Merge, Enter, Exit, NextIteration,
// LoopCond). Their kernels only forward tensors: what makes them control flow is the executor,
// which routes their outputs between loop frames and iterations and propagates dead tensors
// (executor/frames.h, docs/control_flow.md). The builders users call are in
// ops/control_flow.h (Cond, WhileLoop, ...).
#include "placeflow/core/shape_util.h"
#include "placeflow/ops/control/cond_contexts.h"
#include "placeflow/ops/control/control_util.h"
#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Forwards input 0 to output 0: Enter, Exit, NextIteration, LoopCond. Their shape functions
// give the input's shape, so the tensor is handed on as it is (no reshaped copy of its
// header: these run once per loop iteration).
class ControlForwardOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    *ctx->mutable_output(0) = ctx->input(0);
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

// Forwards `data` to output `pred` (0: false, 1: true); the other output stays unset, which the
// executor reads as dead.
class SwitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& pred = ctx->input(1);
    if (pred.num_elements() != 1) {
      return errors::InvalidArgument("The second input of Switch '", name(),
                                     "' must be a scalar predicate, got shape ",
                                     pred.shape().ToString());
    }
    *ctx->mutable_output(pred.scalar<bool>() ? 1 : 0) = ctx->input(0);
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

// Forwards the live input (the executor runs a Merge with exactly one set) and its index.
class MergeOp : public OpKernel {
 public:
  explicit MergeOp(const Node& n) : OpKernel(n) {
    for (int i = 0; i < n.num_inputs(); ++i) index_.push_back(Tensor::Scalar<int32_t>(i));
  }
  Status Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (!ctx->input(i).IsInitialized()) continue;
      // The live input's own shape: the static one may be a loop variable's shape invariant.
      *ctx->mutable_output(0) = ctx->input(i);
      // The index tensors are made once: consumers only read them (a host scalar; on a GPU
      // value_index is HostMemory).
      *ctx->mutable_output(1) = index_[i];
      return Status::OK();
    }
    return errors::Internal("Merge '", name(), "' ran without a live input");
  }
  bool IsExpensive() const override { return false; }

 private:
  std::vector<Tensor> index_;
};

// Switch's outputs and Merge's output: the data's shape. A Merge of inputs whose shapes differ
// gets the most specific shape all of them have (unknown dims where they differ).
Status SwitchShape(ShapeContext& c) {
  PF_RETURN_IF_ERROR(c.WithRank(1, 0));
  c.set_output(0, c.input(0));
  c.set_output(1, c.input(0));
  return Status::OK();
}
Status MergeShape(ShapeContext& c) {
  Shape s = c.input(0);
  for (int i = 1; i < c.num_inputs(); ++i) s = MostSpecificCommonShape(s, c.input(i));
  c.set_output(0, s);
  c.set_output(1, Shape{});
  return Status::OK();
}

// Gradients of a cond (TensorFlow's _SwitchGrad and _MergeGrad, for conds; a while loop's
// Enter, Exit and NextIteration have none yet, so Gradients through a loop names them).
// Switch: the taken output's gradient is live, the other dead: a Merge picks it.
PF_GRAD(SwitchGrad) {
  *dx = {ops::Merge(s, {g[0], g[1]}).output, Output()};
  return Status::OK();
}
// Merge: the gradient goes back to the input that was live, which output 1 names: a Switch on
// it (true: input 1) sends it there and leaves the other input's gradient dead.
PF_GRAD(MergeGrad) {
  if (n.num_inputs() != 2) {
    return errors::Unimplemented("Gradient of Merge '", n.name(), "' with ", n.num_inputs(),
                                 " inputs: only a cond's two-input Merge has one");
  }
  Output taken = ops::Cast(s, Output(const_cast<Node*>(&n), 1), DT_BOOL);
  ops::SwitchOutputs sw = ops::Switch(s, g[0], taken);
  ops::internal::CondGradSwitches(s.graph())[&n] = sw;  // a loop's gradient gates its pops
  *dx = {sw.output_false, sw.output_true};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("Switch")
                   .Input("data", "T")
                   .Input("pred", "bool")
                   .Output("output_false", "T")
                   .Output("output_true", "T")
                   .TypeAttr("T", {})
                   .SetControlFlow(ControlFlowKind::kSwitch)
                   .SetGradient(SwitchGrad)
                   .SetShapeFn(SwitchShape));
PF_REGISTER_OP(OpDef("Merge")
                   .InputList("inputs", "T", "N")
                   .Output("output", "T")
                   .Output("value_index", "int32")
                   .TypeAttr("T", {})
                   .RequiredAttr("N")
                   .SetControlFlow(ControlFlowKind::kMerge)
                   .SetGradient(MergeGrad)
                   .SetShapeFn(MergeShape));
PF_REGISTER_OP(OpDef("Enter")
                   .Input("data", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {})
                   .RequiredAttr("frame_name")
                   .Attr("is_constant", false)
                   .Attr("parallel_iterations", int64_t{10})
                   .SetControlFlow(ControlFlowKind::kEnter)
                   .SetNoGradient()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_OP(OpDef("Exit")
                   .Input("data", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {})
                   .SetControlFlow(ControlFlowKind::kExit)
                   .SetNoGradient()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_OP(OpDef("NextIteration")
                   .Input("data", "T")
                   .Output("output", "T")
                   .TypeAttr("T", {})
                   .SetControlFlow(ControlFlowKind::kNextIteration)
                   .SetNoGradient()
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_OP(OpDef("LoopCond")
                   .Input("input", "bool")
                   .Output("output", "bool")
                   .SetControlFlow(ControlFlowKind::kLoopCond)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRank(0, 0));
                     return UnchangedShape(c);
                   }));

PF_REGISTER_KERNEL(KernelDef("Switch", kDeviceCpu), SwitchOp);
PF_REGISTER_KERNEL(KernelDef("Merge", kDeviceCpu), MergeOp);
PF_REGISTER_KERNEL(KernelDef("Enter", kDeviceCpu), ControlForwardOp);
PF_REGISTER_KERNEL(KernelDef("Exit", kDeviceCpu), ControlForwardOp);
PF_REGISTER_KERNEL(KernelDef("NextIteration", kDeviceCpu), ControlForwardOp);
PF_REGISTER_KERNEL(KernelDef("LoopCond", kDeviceCpu), ControlForwardOp);
// On a GPU the tensors are forwarded where they are; the predicate and Merge's index stay in
// host memory (the kernels read and write them on the host), as TensorFlow's do.
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Switch", kDeviceGpu).TypeConstraint("T", control::kGpuTypes).HostMemory("pred"),
    SwitchOp);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("Merge", kDeviceGpu)
                                    .TypeConstraint("T", control::kGpuTypes)
                                    .HostMemory("value_index"),
                                MergeOp);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Enter", kDeviceGpu).TypeConstraint("T", control::kGpuTypes), ControlForwardOp);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Exit", kDeviceGpu).TypeConstraint("T", control::kGpuTypes), ControlForwardOp);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("NextIteration", kDeviceGpu).TypeConstraint("T", control::kGpuTypes),
    ControlForwardOp);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("LoopCond", kDeviceGpu).HostMemory("input").HostMemory("output"), ControlForwardOp);

}  // namespace
}  // namespace pf
