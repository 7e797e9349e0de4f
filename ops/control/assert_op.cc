// Assert (tf.Assert): fails the step with InvalidArgument when its bool scalar condition is
// false, showing its data tensors. ops::Case checks its predicates with it, and ops::MapFn the
// shapes of fn's results (ops/control/functional_ops.cc). It has no output: a builder makes
// what must wait for the check take a control input from it.
#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/debug/debug_ops.h"
#include "placeflow/ops/op_util.h"

namespace pf {
namespace {

class AssertOp : public OpKernel {
 public:
  explicit AssertOp(const Node& n)
      : OpKernel(n),
        message_(n.attr<std::string>("message")),
        summarize_(n.attr<int64_t>("summarize")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    if (cond.num_elements() != 1) {
      return errors::InvalidArgument("Assert's condition must be a bool scalar, got shape ",
                                     cond.shape());
    }
    if (cond.data<bool>()[0]) return Status::OK();
    std::vector<Tensor> data;
    for (int i = 1; i < ctx->num_inputs(); ++i) data.push_back(ctx->input(i));
    // The executor appends the node, op and device.
    return errors::InvalidArgument("assertion failed: ", PrintLine(message_, {}, data, summarize_));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::string message_;
  int64_t summarize_;
};

PF_REGISTER_OP(OpDef("Assert")
                   .SetStateful()  // an effect: never pruned as a duplicate or folded
                   .Input("condition", "bool")
                   .InputList("data", "T", "N")
                   .TypeAttr("T", {})
                   .RequiredAttr("N")
                   .Attr("message", std::string())
                   .Attr("summarize", int64_t{3})
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(c.WithRank(0, 0));
                     return NoOutputsShape(c);
                   }));
PF_REGISTER_KERNEL(KernelDef("Assert", kDeviceCpu), AssertOp);
// On a GPU every input is in host memory (a check inside a loop placed there stays there).
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Assert", kDeviceGpu).HostMemory("condition").HostMemory("data"), AssertOp);

}  // namespace

namespace ops {

Operation Assert(const Scope& s, Output condition, const std::vector<Output>& data,
                 const std::string& message, int64_t summarize) {
  if (data.empty()) {
    throw Error(errors::InvalidArgument("Assert (in name scope '", s.name_scope(),
                                        "') needs at least one data tensor to show"));
  }
  return NodeBuilder(s, "Assert")
      .Input(condition)
      .InputList(data)
      .Attr("message", message)
      .Attr("summarize", summarize)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
