// _Send and _Recv: the pair the partitioner puts on every cross-device edge. _Send hands its
// input to the step's rendezvous and never blocks; _Recv is asynchronous: it asks the
// rendezvous for the value, copies it to its device through the copy registry, and finishes
// when the value is there (or the step aborts). _Arg stands for a fed tensor inside a partition.
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/device_set.h"
#include "placeflow/graph/rendezvous.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// DT_STRING crosses between CPU devices only (they share the buffer): GPU kernels leave it out.
const std::vector<DType> kAll = {DT_FLOAT,    DT_DOUBLE, DT_INT32,  DT_INT64, DT_BOOL, DT_HALF,
                                 DT_BFLOAT16, DT_UINT8,  DT_STRING, DT_INT8,  DT_INT16};

std::string KeyOf(const Node& n) {
  const uint64_t incarnation =
      n.HasAttr("send_device_incarnation")
          ? static_cast<uint64_t>(n.attr<int64_t>("send_device_incarnation"))
          : 0;
  return Rendezvous::Key(n.attr<std::string>("send_device"), incarnation,
                         n.attr<std::string>("recv_device"), n.attr<std::string>("tensor_name"));
}

class SendOp : public OpKernel {
 public:
  explicit SendOp(const Node& n) : OpKernel(n), key_(KeyOf(n)) {}
  Status Compute(OpKernelContext* ctx) override {
    if (ctx->rendezvous() == nullptr) return errors::Internal("_Send without a rendezvous");
    return ctx->rendezvous()->Send(key_, ctx->input(0));
  }
  bool IsExpensive() const override { return false; }

 private:
  std::string key_;
};

class RecvOp : public OpKernel {
 public:
  explicit RecvOp(const Node& n)
      : OpKernel(n),
        key_(KeyOf(n)),
        send_device_(n.attr<std::string>("send_device")),
        host_memory_(n.HasAttr("host_memory") && n.attr<bool>("host_memory")) {}
  Status Compute(OpKernelContext*) override { return errors::Internal("_Recv is asynchronous"); }
  bool IsAsync() const override { return true; }
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) override {
    if (ctx->rendezvous() == nullptr || ctx->devices() == nullptr)
      return done(errors::Internal("_Recv without a rendezvous"));
    // A tensor from another task (a cluster) arrives in this task's host memory.
    Device* src = ctx->devices()->Find(send_device_);
    if (src == nullptr) src = ctx->devices()->host();
    // A HostMemory consumer on a GPU gets the value in host memory: the copy goes to the host.
    Device* dst = host_memory_ ? ctx->devices()->host() : ctx->device();
    ctx->rendezvous()->RecvAsync(
        key_, [ctx, src, dst, done = std::move(done)](const Status& s, const Tensor& t) {
          if (!s.ok()) return done(s);
          // A dead tensor (the untaken side of a cond, sent by a _Send whose input was dead):
          // the output stays unset, which the executor reads as dead (executor/frames.h).
          if (!t.IsInitialized()) return done(Status::OK());
          CopyRegistry::Global()->CopyAsync(t, src, dst, [ctx, done](StatusOr<Tensor> copied) {
            if (!copied.ok()) return done(copied.status());
            done(ctx->SetOutput(0, std::move(copied).value()));
          });
        });
  }

 private:
  std::string key_, send_device_;
  bool host_memory_;
};

class SendRecvArgOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override {
    return errors::Internal("_Arg ", name(), " was not fed");
  }
};

PF_REGISTER_OP(OpDef("_Send")
                   .Input("tensor", "T")
                   .TypeAttr("T", kAll)
                   .RequiredAttr("tensor_name")
                   .RequiredAttr("send_device")
                   .RequiredAttr("recv_device")
                   .Attr("send_device_incarnation", int64_t{0})  // Device::incarnation()
                   .SetControlFlow(ControlFlowKind::kSend)
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn(NoOutputsShape));
PF_REGISTER_OP(OpDef("_Recv")
                   .Output("tensor", "tensor_type")
                   .TypeAttr("tensor_type", kAll)
                   .RequiredAttr("tensor_name")
                   .RequiredAttr("send_device")
                   .RequiredAttr("recv_device")
                   .RequiredAttr("shape")
                   .Attr("send_device_incarnation", int64_t{0})
                   .Attr("host_memory", false)  // the consumer reads it in host memory
                   .SetControlFlow(ControlFlowKind::kRecv)
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.attr<Shape>("shape"));
                     return Status::OK();
                   }));
PF_REGISTER_OP(OpDef("_Arg")
                   .Output("output", "T")
                   .TypeAttr("T", kAll)
                   .RequiredAttr("shape")
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.attr<Shape>("shape"));
                     return Status::OK();
                   }));
// The same kernels on GPUs: a GPU _Send only hands over the (maybe still computing) tensor; the
// copy waits for the sender's stream.
PF_REGISTER_KERNEL(KernelDef("_Send", kDeviceCpu), SendOp);
PF_REGISTER_KERNEL(KernelDef("_Recv", kDeviceCpu), RecvOp);
PF_REGISTER_KERNEL(KernelDef("_Arg", kDeviceCpu), SendRecvArgOp);
PF_REGISTER_KERNEL(KernelDef("_Send", kDeviceGpu).TypeConstraint("T", kNonStringTypes), SendOp);
PF_REGISTER_KERNEL(KernelDef("_Recv", kDeviceGpu).TypeConstraint("tensor_type", kNonStringTypes),
                   RecvOp);
PF_REGISTER_KERNEL(KernelDef("_Arg", kDeviceGpu).TypeConstraint("T", kNonStringTypes),
                   SendRecvArgOp);

}  // namespace
}  // namespace pf
