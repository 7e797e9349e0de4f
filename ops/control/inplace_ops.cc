// InplaceUpdate and InplaceAdd (TensorFlow's tf.raw_ops.InplaceUpdate and InplaceAdd, one row):
// y = x with row i replaced by v, or with v added to row i. When nothing else holds x's buffer (and
// it is no view into another's) (a loop variable handed on from iteration to iteration) the row is
// written in place, so a loop that fills a [T, ...] tensor row by row copies O(T) instead of the
// O(T^2) of appending with Concat (DynamicRnn's outputs, train/rnn.cc).
#include <atomic>

#include "placeflow/ops/control/control_util.h"
#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// x as output 0, in place when nothing else holds x's buffer (else a copy); row i checked.
StatusOr<int64_t> OutputOverX(OpKernelContext* ctx, const std::string& op,
                              const std::string& node) {
  const Tensor& x = ctx->input(0);
  const int64_t rows = x.shape().dim(0);
  const int64_t i = ctx->input(1).scalar<int32_t>();
  if (i < 0 || i >= rows) {
    return errors::InvalidArgument(op, " '", node, "': row ", i, " of ", rows, " rows (shape ",
                                   x.shape().ToString(), ")");
  }
  Device* d = ctx->device();
  // The executor's input slot holds one reference: a count of one means nobody else can see
  // the buffer change (a fetched or forwarded tensor, a stacked forward value holds another).
  // A view (a slice of rows: no allocator, its own count) shares its parent's memory: copied.
  // The fence orders the write after other threads' last reads of the buffer they let go.
  const bool owned = x.buffer() && x.buffer()->allocator() != nullptr;
  const bool alone = owned && x.buffer().use_count() == 1;
  std::atomic_thread_fence(std::memory_order_acquire);
  if (alone) {
    *ctx->mutable_output(0) = x;
  } else {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    PF_RETURN_IF_ERROR(d->CopyWithinDevice(out->raw_data(), x.raw_data(), x.TotalBytes()));
  }
  return i;
}

class InplaceUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(const int64_t i, OutputOverX(ctx, "InplaceUpdate", name()));
    const Tensor& v = ctx->input(2);
    Tensor* y = ctx->mutable_output(0);
    const size_t row_bytes = v.TotalBytes();
    return ctx->device()->CopyWithinDevice(static_cast<char*>(y->raw_data()) + i * row_bytes,
                                           v.raw_data(), row_bytes);
  }
  bool IsExpensive() const override { return false; }
};

// Float and double (the loop gradients' running sums); CPU only.
template <typename T>
class InplaceAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(const int64_t i, OutputOverX(ctx, "InplaceAdd", name()));
    const Tensor& v = ctx->input(2);
    const int64_t n = v.num_elements();
    AddRow(v.data<T>(), ctx->mutable_output(0)->data<T>() + i * n, n);
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

Status InplaceUpdateShape(ShapeContext& c) {
  PF_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1));
  PF_RETURN_IF_ERROR(c.WithRank(1, 0));
  const Shape& x = c.input(0);
  const Shape& v = c.input(2);
  if (!x.unknown_rank() && !v.unknown_rank()) {
    Shape row = x;
    row.RemoveDim(0);
    if (!row.IsCompatibleWith(v) || row.rank() != v.rank()) {
      return errors::InvalidArgument("a row of ", x.ToString(), " is ", row.ToString(),
                                     ", the value is ", v.ToString());
    }
  }
  c.set_output(0, x);
  return Status::OK();
}

// dx: the gradient with row i zeroed; dv: row i of the gradient. Neither needs x's value, so a
// loop's gradient keeps no copy of it per iteration. The zeroing waits for the row's read, so
// that it finds the gradient's buffer alone and writes it in place.
PF_GRAD(InplaceUpdateGrad) {
  Output i = n.input(1);
  Output row = ops::Gather(s, g[0], i);
  Output zeroed = ops::InplaceUpdate(s.WithControlDependencies({Operation(row.node)}), g[0], i,
                                     ops::ZerosLike(s, row));
  *dx = {zeroed, Output(), row};
  return Status::OK();
}

// dx: the gradient; dv: its row i.
PF_GRAD(InplaceAddGrad) {
  *dx = {g[0], Output(), ops::Gather(s, g[0], n.input(1))};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("InplaceUpdate")
                   .Input("x", "T")
                   .Input("i", "int32")
                   .Input("v", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {})
                   .SetGradient(InplaceUpdateGrad)
                   .SetShapeFn(InplaceUpdateShape));
PF_REGISTER_KERNEL(KernelDef("InplaceUpdate", kDeviceCpu), InplaceUpdateOp);
PF_REGISTER_OP(OpDef("InplaceAdd")
                   .Input("x", "T")
                   .Input("i", "int32")
                   .Input("v", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE})
                   .SetGradient(InplaceAddGrad)
                   .SetShapeFn(InplaceUpdateShape));
PF_REGISTER_KERNEL(KernelDef("InplaceAdd", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   InplaceAddOp<float>);
PF_REGISTER_KERNEL(KernelDef("InplaceAdd", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   InplaceAddOp<double>);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("InplaceUpdate", kDeviceGpu).TypeConstraint("T", control::kGpuTypes).HostMemory("i"),
    InplaceUpdateOp);

}  // namespace

namespace ops {

Output InplaceUpdate(const Scope& s, Output x, Output i, Output v) {
  return NodeBuilder(s, "InplaceUpdate").Input(x).Input(i).Input(v).Finalize();
}
Output InplaceAdd(const Scope& s, Output x, Output i, Output v) {
  return NodeBuilder(s, "InplaceAdd").Input(x).Input(i).Input(v).Finalize();
}

}  // namespace ops
}  // namespace pf
