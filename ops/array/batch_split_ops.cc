// BatchSplit: splits dimension 0 into `num_split` parts as even as possible (the first
// batch % num_split parts get one more row, as numpy.array_split), so any batch of at least
// num_split rows splits. The parts are views of the input (no copy). Tower replication feeds
// each tower one part.
#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// Rows [begin, end) of part i when `batch` rows go into `n` parts.
std::pair<int64_t, int64_t> PartRows(int64_t batch, int64_t n, int64_t i) {
  const int64_t base = batch / n, extra = batch % n;
  const int64_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

Status BatchSplitShape(ShapeContext& c) {
  const int64_t n = c.attr<int64_t>("num_split");
  if (n <= 0) return errors::InvalidArgument("BatchSplit: num_split must be positive, got ", n);
  PF_RETURN_IF_ERROR(c.WithRankAtLeast(0, 1));
  const Shape& in = c.input(0);
  for (int64_t i = 0; i < n; ++i) {
    Shape part = in.unknown_rank() ? Shape::Unknown() : in;
    if (!in.unknown_rank() && in.dim(0) >= 0) {
      if (in.dim(0) < n) {
        return errors::InvalidArgument("A batch of ", in.dim(0), " examples (shape ", in.ToString(),
                                       ") cannot be split across ", n,
                                       " towers: every tower needs at least one");
      }
      auto [b, e] = PartRows(in.dim(0), n, i);
      part.set_dim(0, e - b);
    }
    c.set_output(static_cast<int>(i), part);
  }
  return Status::OK();
}

class BatchSplitOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  bool IsExpensive() const override { return false; }
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      auto [b, e] = PartRows(in.dim(0), ctx->num_outputs(), i);
      PF_ASSIGN_OR_RETURN(Tensor part, in.SliceRows(b, e));
      PF_RETURN_IF_ERROR(ctx->SetOutput(i, std::move(part)));
    }
    return Status::OK();
  }
};

PF_GRAD(BatchSplitGrad) {
  *dx = {ops::Concat(s, g, 0)};
  return Status::OK();
}

PF_REGISTER_OP(OpDef("BatchSplit")
                   .Input("value", "T")
                   .OutputList("output", "T", "num_split")
                   .RequiredAttr("num_split")
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL})
                   .SetGradient(BatchSplitGrad)
                   .SetShapeFn(BatchSplitShape));
PF_REGISTER_KERNEL(KernelDef("BatchSplit", kDeviceCpu), BatchSplitOp);
// Row views: any memory.
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("BatchSplit", kDeviceGpu), BatchSplitOp);

}  // namespace

namespace ops {
std::vector<Output> BatchSplit(const Scope& s, Output value, int num_split) {
  Node* n =
      NodeBuilder(s, "BatchSplit").Input(value).Attr("num_split", int64_t{num_split}).Finalize();
  std::vector<Output> outs;
  for (int i = 0; i < n->num_outputs(); ++i) outs.emplace_back(n, i);
  return outs;
}
}  // namespace ops
}  // namespace pf
