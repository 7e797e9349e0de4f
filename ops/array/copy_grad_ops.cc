// The backward ops of the copy ops (copy_ops.cc), built only by their gradient functions:
// SliceGrad, ConcatGrad, GatherGrad. The *_like inputs are read for their shape only. They have
// no gradients of their own (second-order gradients are not supported). Their GPU kernels are
// in copy_ops_gpu.cc.
#include <cstring>

#include "placeflow/ops/array/copy_ops.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// ---- SliceGrad(g, like): zeros shaped like the slice input, with g at `begin` ----
class SliceGradOp : public OpKernel {
 public:
  explicit SliceGradOp(const Node& n)
      : OpKernel(n), begin_(n.attr<std::vector<int64_t>>("begin")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const size_t es = DTypeSize(g.dtype());
    std::memset(out->raw_data(), 0, out->TotalBytes());
    const int rank = out->rank();
    if (g.num_elements() == 0) return Status::OK();
    if (rank == 0) return ctx->SetOutput(0, g);
    std::vector<int64_t> strides(rank, 1);
    for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * out->dim(d + 1);
    const int64_t inner = g.dim(rank - 1), rows = g.num_elements() / inner;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = begin_[rank - 1], rem = r;
      for (int d = rank - 2; d >= 0; --d) {
        off += (rem % g.dim(d) + begin_[d]) * strides[d];
        rem /= g.dim(d);
      }
      std::memcpy(static_cast<char*>(out->raw_data()) + off * es,
                  static_cast<const char*>(g.raw_data()) + r * inner * es, inner * es);
    }
    return Status::OK();
  }

 private:
  std::vector<int64_t> begin_;
};

// ---- ConcatGrad(g, like_0..like_{N-1}): g split back into pieces shaped like the inputs ----
class ConcatGradOp : public OpKernel {
 public:
  explicit ConcatGradOp(const Node& n) : OpKernel(n), axis_(n.attr<int64_t>("axis")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + g.rank() : axis_);
    const size_t es = DTypeSize(g.dtype());
    int64_t outer, g_inner, inner, offset = 0;
    OuterInner(g.shape(), axis, es, &outer, &g_inner);
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(i));
      OuterInner(out->shape(), axis, es, &outer, &inner);
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(static_cast<char*>(out->raw_data()) + o * inner,
                    static_cast<const char*>(g.raw_data()) + o * g_inner + offset, inner);
      }
      offset += inner;
    }
    return Status::OK();
  }

 private:
  int64_t axis_;
};

// ---- GatherGrad(g, indices, like): scatter-add g's rows into zeros shaped like params ----
template <typename T, typename Index>
class GatherGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& g = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    std::fill(out->data<T>(), out->data<T>() + out->num_elements(), T(0));
    const int64_t rows = out->dim(0), row = rows == 0 ? 0 : out->num_elements() / rows;
    const Index* idx = indices.data<Index>();
    for (int64_t i = 0; i < indices.num_elements(); ++i) {
      if (idx[i] < 0 || idx[i] >= rows)
        return errors::InvalidArgument("indices[", i, "] = ", idx[i], " is not in [0, ", rows, ")");
      T* dst = out->data<T>() + idx[i] * row;
      const T* src = g.data<T>() + i * row;
      for (int64_t j = 0; j < row; ++j) dst[j] += src[j];
    }
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("SliceGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("like", "T")
                   .Output("output", "T")
                   .RequiredAttr("begin")
                   .TypeAttr("T", kComputableTypes)
                   .SetShapeFn([](ShapeContext& c) { return ShapeOfInput(c, 1); }));
PF_REGISTER_KERNEL(KernelDef("SliceGrad", kDeviceCpu), SliceGradOp);

PF_REGISTER_OP(OpDef("ConcatGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .InputList("like", "T", "N")
                   .OutputList("output", "T", "N")
                   .RequiredAttr("axis")
                   .RequiredAttr("N")
                   .TypeAttr("T", kComputableTypes)
                   .SetShapeFn([](ShapeContext& c) {
                     for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i + 1));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("ConcatGrad", kDeviceCpu), ConcatGradOp);

PF_REGISTER_OP(OpDef("GatherGrad")
                   .SetNoGradient()
                   .Input("grad", "T")
                   .Input("indices", "Tindices")
                   .Input("like", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kRealTypes)
                   .TypeAttr("Tindices", kIndexTypes)
                   .SetShapeFn([](ShapeContext& c) { return ShapeOfInput(c, 2); }));
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("Tindices", {DT_INT32}),
                   GatherGradOp<float, int32_t>);
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_FLOAT})
                       .TypeConstraint("Tindices", {DT_INT64}),
                   GatherGradOp<float, int64_t>);
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_DOUBLE})
                       .TypeConstraint("Tindices", {DT_INT32}),
                   GatherGradOp<double, int32_t>);
PF_REGISTER_KERNEL(KernelDef("GatherGrad", kDeviceCpu)
                       .TypeConstraint("T", {DT_DOUBLE})
                       .TypeConstraint("Tindices", {DT_INT64}),
                   GatherGradOp<double, int64_t>);

}  // namespace
}  // namespace pf
